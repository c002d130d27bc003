"""Today's ``pyop2.global_kernel``: the descriptions of a loop's arguments as the generated code
sees them (``DatKernelArg``, ``MatKernelArg``, ...), and ``GlobalKernel``, a local kernel with
those descriptions and the iteration's shape. op2-rs generates each loop's code from the loop's
own args, so these objects are checked and kept (``Parloop`` runs them through ``par_loop``);
none of them generates code here."""

from dataclasses import dataclass
from typing import Any, Optional, Tuple

__all__ = ["MapKernelArg", "PermutedMapKernelArg", "ComposedMapKernelArg", "GlobalKernelArg",
           "DatKernelArg", "MixedDatKernelArg", "MatKernelArg", "MixedMatKernelArg",
           "PassthroughKernelArg", "GlobalKernel"]


def _hashable(name, value):
    try:
        hash(value)
    except TypeError:
        raise ValueError("%s must be hashable (a tuple), not %r" % (name, value)) from None


@dataclass(frozen=True, eq=False)
class MapKernelArg:
    """A map as the code sees it: its ``arity`` and, over extruded sets, its ``offset`` per
    entry (and ``offset_quotient`` for periodic extrusion)."""
    arity: int
    offset: Optional[Tuple[int, ...]] = None
    offset_quotient: Optional[Tuple[int, ...]] = None

    def __post_init__(self):
        _hashable("offset", self.offset)
        _hashable("offset_quotient", self.offset_quotient)

    @property
    def cache_key(self):
        return type(self), self.arity, self.offset, self.offset_quotient


@dataclass(frozen=True, eq=False)
class PermutedMapKernelArg:
    """A permuted map: ``base_map`` with its entries in ``permutation`` order."""
    base_map: MapKernelArg
    permutation: Tuple[int, ...]

    def __post_init__(self):
        _hashable("permutation", self.permutation)

    @property
    def cache_key(self):
        return type(self), self.base_map.cache_key, tuple(self.permutation)


class ComposedMapKernelArg:
    """A composition of maps: ``ComposedMapKernelArg(*base_maps)``."""

    def __init__(self, *base_maps):
        self.base_maps = base_maps

    @property
    def cache_key(self):
        return (type(self),) + tuple(m.cache_key for m in self.base_maps)


@dataclass(frozen=True)
class GlobalKernelArg:
    """A Global of shape ``dim``."""
    dim: Tuple[int, ...]

    maps = ()
    cache_key = property(lambda self: (type(self), self.dim))


@dataclass(frozen=True)
class DatKernelArg:
    """A Dat of shape ``dim`` per node, direct (``map_`` None) or through ``map_``; ``index``:
    the component of a DatView."""
    dim: Tuple[int, ...]
    map_: Optional[Any] = None
    index: Optional[Tuple[int, ...]] = None

    is_direct = property(lambda self: self.map_ is None)
    is_indirect = property(lambda self: self.map_ is not None)
    maps = property(lambda self: (self.map_,) if self.map_ is not None else ())
    cache_key = property(lambda self: (type(self), self.dim, self.index,
                                       self.map_.cache_key if self.map_ is not None else None))


@dataclass(frozen=True)
class MatKernelArg:
    """A Mat with blocks of ``dims`` reached through ``maps`` (row, column); ``unroll``: the
    values are set entry by entry."""
    dims: Tuple[Tuple[int, ...], Tuple[int, ...]]
    maps: Tuple[Any, Any]
    unroll: bool = False

    cache_key = property(lambda self: (type(self), self.dims, self.unroll,
                                       tuple(m.cache_key for m in self.maps)))


@dataclass(frozen=True)
class MixedDatKernelArg:
    """A MixedDat: one ``DatKernelArg`` per component, all direct or all indirect."""
    arguments: Tuple[DatKernelArg, ...]

    def __post_init__(self):
        if len({a.is_direct for a in self.arguments}) > 1:
            raise ValueError("the components of a MixedDatKernelArg are all direct or all "
                             "indirect")

    def __iter__(self):
        return iter(self.arguments)

    def __len__(self):
        return len(self.arguments)

    is_direct = property(lambda self: all(a.is_direct for a in self.arguments))
    is_indirect = property(lambda self: not self.is_direct)
    maps = property(lambda self: tuple(m for a in self.arguments for m in a.maps))
    cache_key = property(lambda self: (type(self),) + tuple(a.cache_key
                                                            for a in self.arguments))


@dataclass(frozen=True)
class MixedMatKernelArg:
    """A mixed Mat: one ``MatKernelArg`` per block, row by row, and the block ``shape``."""
    arguments: Tuple[MatKernelArg, ...]
    shape: Tuple[int, ...]

    def __iter__(self):
        return iter(self.arguments)

    def __len__(self):
        return len(self.arguments)

    maps = property(lambda self: tuple(m for a in self.arguments for m in a.maps))
    cache_key = property(lambda self: (type(self), self.shape)
                         + tuple(a.cache_key for a in self.arguments))


class PassthroughKernelArg:
    """A value handed to the kernel as it is (see ``PassthroughArg``)."""

    maps = ()
    cache_key = property(lambda self: type(self))


_KERNEL_ARGS = (GlobalKernelArg, DatKernelArg, MixedDatKernelArg, MatKernelArg,
                MixedMatKernelArg, PassthroughKernelArg)


class GlobalKernel:
    """``GlobalKernel(local_kernel, arguments, *, extruded=False, extruded_periodic=False,
    constant_layers=False, subset=False, iteration_region=None, pass_layer_arg=False)``: a
    local kernel (with its ``accesses``) and how each argument reaches it."""

    def __init__(self, local_kernel, arguments, *, extruded=False, extruded_periodic=False,
                 constant_layers=False, subset=False, iteration_region=None,
                 pass_layer_arg=False):
        accesses = getattr(local_kernel, "accesses", None)
        if accesses is None:
            raise ValueError("the local kernel %s has no accesses: give accesses= when making "
                             "it" % getattr(local_kernel, "name", local_kernel))
        arguments = tuple(arguments)
        if len(accesses) != len(arguments):
            raise ValueError("Number of arguments passed to the local and global kernels do "
                             "not match")
        bad = [a for a in arguments if not isinstance(a, _KERNEL_ARGS)]
        if bad:
            raise TypeError("GlobalKernel's arguments are KernelArgs, not %r" % (bad[0],))
        if pass_layer_arg and not extruded:
            raise ValueError("Cannot request layer argument for non-extruded iteration")
        if constant_layers and not extruded:
            raise ValueError("Cannot request constant_layers argument for non-extruded "
                             "iteration")
        if extruded_periodic:
            raise NotImplementedError("periodic extrusion is not supported by op2rs")
        self.local_kernel, self.arguments = local_kernel, arguments
        self._extruded, self._constant_layers, self._subset = extruded, constant_layers, subset
        self._iteration_region, self._pass_layer_arg = iteration_region, pass_layer_arg

    name = property(lambda self: "wrap_" + self.local_kernel.name)

    @property
    def cache_key(self):
        return ((self.local_kernel.name, self.local_kernel.code, tuple(self.local_kernel.accesses))
                + tuple(a.cache_key for a in self.arguments)
                + (self._extruded, self._constant_layers, self._subset, self._iteration_region,
                   self._pass_layer_arg))

    @property
    def zipped_arguments(self):
        """Each argument's access beside its description."""
        return tuple(zip(self.local_kernel.accesses, self.arguments))
