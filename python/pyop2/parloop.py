"""Today's ``pyop2.parloop``: a loop built from a ``GlobalKernel`` and the data of each argument
(``DatParloopArg``, ``MatParloopArg``, ...), run by calling it (``Parloop(...)()``) or by
``parloop(global_kernel, iterset, arguments)``. Each argument becomes the arg ``par_loop`` takes
(``dat(access, map)`` with the access the local kernel states), so such a loop runs as any other
on every backend."""

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from op2rs.data import Dat as _Dat
from op2rs.data import Global as _Global
from op2rs.data import MixedDat as _MixedDat
from op2rs.la import Mat as _Mat

from . import wrappers
from .datatypes import OpaqueType
from .exceptions import KernelTypeError, SetTypeError
from .global_kernel import (DatKernelArg, GlobalKernel, GlobalKernelArg, MatKernelArg,
                            MixedDatKernelArg, MixedMatKernelArg, PassthroughKernelArg)

__all__ = ["GlobalParloopArg", "DatParloopArg", "MixedDatParloopArg", "MatParloopArg",
           "MixedMatParloopArg", "PassthroughParloopArg", "Parloop", "parloop"]


@dataclass
class GlobalParloopArg:
    """A Global's data."""
    data: Any


@dataclass
class DatParloopArg:
    """A Dat (or DatView), direct or through ``map_``."""
    data: Any
    map_: Optional[Any] = None


@dataclass
class MixedDatParloopArg:
    """A MixedDat through a MixedMap."""
    data: Any
    map_: Any


@dataclass
class MatParloopArg:
    """A Mat through its row and column maps (``lgmaps`` refused, as by ``mat(access, maps,
    lgmaps=)``)."""
    data: Any
    maps: Tuple[Any, Any]
    lgmaps: Any = None


@dataclass
class MixedMatParloopArg:
    """A mixed Mat through its row and column MixedMaps."""
    data: Any
    maps: Tuple[Any, Any]
    lgmaps: Any = None


@dataclass
class PassthroughParloopArg:
    """A value (a C pointer) handed to the kernel as it is."""
    data: int


# Which data each description takes.
_FITS = {GlobalParloopArg: (GlobalKernelArg, _Global), DatParloopArg: (DatKernelArg, _Dat),
         MixedDatParloopArg: (MixedDatKernelArg, _MixedDat), MatParloopArg: (MatKernelArg, _Mat),
         MixedMatParloopArg: (MixedMatKernelArg, _Mat),
         PassthroughParloopArg: (PassthroughKernelArg, int)}


class Parloop:
    """``Parloop(global_knl, iterset, arguments)``: checked when made, run by ``p()`` (or
    ``p.compute()``) as ``par_loop`` runs the same loop."""

    def __init__(self, global_knl, iterset, arguments):
        from . import op2
        if not isinstance(global_knl, GlobalKernel):
            raise KernelTypeError("Parloop runs a GlobalKernel, not %r" % (global_knl,))
        if not isinstance(iterset, op2.Set) and not hasattr(iterset, "_native"):
            raise SetTypeError("iterset must be a Set, not %r" % (iterset,))
        arguments = tuple(arguments)
        if len(arguments) != len(global_knl.arguments):
            raise ValueError("Number of arguments passed to the global kernel and the parloop "
                             "do not match")
        for i, (description, arg) in enumerate(zip(global_knl.arguments, arguments)):
            fits = _FITS.get(type(arg))
            if fits is None:
                raise TypeError("argument %d: a ParloopArg, not %r" % (i, arg))
            if not isinstance(description, fits[0]) or not isinstance(arg.data, fits[1]):
                raise TypeError("argument %d: %s of %s against %s"
                                % (i, type(arg).__name__, type(arg.data).__name__,
                                   type(description).__name__))
        self.global_kernel, self.iterset, self.arguments = global_knl, iterset, arguments

    local_kernel = property(lambda self: self.global_kernel.local_kernel)
    accesses = property(lambda self: tuple(self.local_kernel.accesses))

    @property
    def zipped_arguments(self):
        """Each argument's access, description and data."""
        return tuple(zip(self.accesses, self.global_kernel.arguments, self.arguments))

    def _legacy_args(self):
        """The args ``par_loop`` takes, with the local kernel's accesses."""
        from .passthrough import PassthroughArg
        out = []
        declared = None
        for i, (access, arg) in enumerate(zip(self.accesses, self.arguments)):
            if isinstance(arg, GlobalParloopArg):
                out.append(arg.data(access))
            elif isinstance(arg, (DatParloopArg, MixedDatParloopArg)):
                out.append(arg.data(access, arg.map_) if arg.map_ is not None
                           else arg.data(access))
            elif isinstance(arg, (MatParloopArg, MixedMatParloopArg)):
                if arg.lgmaps is not None:
                    raise NotImplementedError("MatParloopArg(lgmaps=) is not supported by op2rs")
                out.append(arg.data(access, tuple(arg.maps)))
            else:
                # The C type the kernel declares for it.
                if declared is None:
                    declared = wrappers.params_of(self.local_kernel, "PassthroughParloopArg")
                out.append(PassthroughArg(OpaqueType(wrappers.c_type(*declared[i])), arg.data))
        return out

    def __call__(self):
        """Runs the loop (collective)."""
        from . import op2
        gk = self.global_kernel
        op2.par_loop(self.local_kernel, self.iterset, *self._legacy_args(),
                     iteration_region=gk._iteration_region,
                     pass_layer_arg=gk._pass_layer_arg)

    compute = __call__


def parloop(knl, *args, **kwargs):
    """Runs a loop (collective): ``parloop(global_kernel, iterset, arguments)`` or, with a
    local kernel, ``parloop(kernel, iterset, *args, iteration_region=, pass_layer_arg=)`` as
    ``par_loop``."""
    from . import op2
    if isinstance(knl, GlobalKernel):
        Parloop(knl, *args, **kwargs)()
    elif isinstance(knl, op2.Kernel):
        op2.par_loop(knl, *args, **kwargs)
    else:
        raise KernelTypeError("parloop runs a GlobalKernel or a Kernel, not %r" % (knl,))
