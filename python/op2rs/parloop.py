"""``par_loop``: a loop's arguments (``Arg``, made by calling a Dat, Global or Mat with an
access), their checks in PyOP2's order, and the hand-over to op2-rs's runtime.

The order is PyOP2's: the iteration set, then every argument (its set, its map's iteration set,
the shape of local iteration spaces), and only then the kernel's source, so a loop with a wrong
argument reports the argument even when its kernel would not compile."""

from . import _op2
from .configuration import configuration
from .exceptions import (IndexValueError, KernelTypeError, MapValueError, SetTypeError, call,
                         translate)
from .kernels import Kernel
from .runtime import current, state, viewed
from .sets import ExtrudedSet, Set, Subset

__all__ = ["Arg", "par_loop", "ParLoop"]

class Arg:
    """A ``par_loop`` argument: the data, its access and its path (``None`` when direct, a
    Map for a whole row, ``map[k]``, ``map[op2.i[n]]``, or a Mat's pair of those).

    ``native`` is the native module's ``LoopArg``, made once here so that ``par_loop`` only
    passes it on (``None`` for a local iteration space, whose form depends on the kernel);
    ``iterset`` is the set the loop must run over (``None``: any); ``lis`` marks a local
    iteration space and ``extent`` is its shape; ``after`` is called once a loop has it."""

    __slots__ = ("data", "access", "path", "flatten", "native", "iterset", "lis", "extent",
                 "after", "_lis_made", "made_on")

    def __init__(self, data, access, path=None, flatten=False, native=None, iterset=None,
                 lis=False, extent=None, after=None):
        self.data, self.access, self.path, self.flatten = data, access, path, flatten
        self.native, self.iterset, self.lis = native, iterset, lis
        self.extent, self.after = extent, after
        self._lis_made = None
        # A matrix's storage when the arg was made (a matrix whose PETSc handle grew gets new
        # storage: an arg made before writes the old one).
        storage = getattr(data, "_storage", None)
        self.made_on = storage() if storage is not None else None

    def lis_native(self, per_point):
        """A local iteration space arg as the native module takes it for a per-point (0.8.2)
        or a once-per-element kernel (made once per form: the arg is kept on its data)."""
        made = self._lis_made
        if made is None or made[0] != per_point:
            made = self._lis_made = (per_point, self.data._lis_native(self, per_point))
        return made[1]

    @property
    def map_(self):
        """Today's PyOP2's spelling of :attr:`map`."""
        return self.map

    @property
    def map(self):
        """The map of an indirect argument (a (row, column) pair for a matrix), else None."""
        p = self.path
        if p is None:
            return None
        if isinstance(p, tuple):
            return tuple(q.map for q in p)
        return getattr(p, "map", p)

    @property
    def idx(self):
        """``k`` of ``map[k]``, ``op2.i[n]`` of ``map[op2.i[n]]`` (a pair for a matrix), else
        None."""
        p = self.path
        if isinstance(p, tuple):
            return tuple(q.index for q in p)
        return getattr(p, "index", None)

    @property
    def split(self):
        """One argument per component of a mixed Dat or Mat; ``(self,)`` otherwise."""
        parts = getattr(self.data, "_split_arg", None)
        return parts(self) if parts is not None else (self,)

    @property
    def dtype(self):
        return self.data.dtype

    def __eq__(self, other):
        """Arguments are equal with the same data, map, index and access (PyOP2's rule)."""
        if type(other) is not Arg:
            return False
        if self is other:
            return True
        return ((self.data is other.data or self.data == other.data)
                and self.map == other.map and self.idx == other.idx
                and self.access is other.access and self.flatten == other.flatten)

    def __ne__(self, other):
        return not self == other

    __hash__ = object.__hash__

    def __str__(self):
        return "OP2 Arg: dat %s, map %s, index %s, access %s" % (
            self.data, self.map, self.idx, self.access)

    def __repr__(self):
        return "Arg(%r, %r, %r, %r)" % (self.data, self.map, self.idx, self.access)


def _checked(kernel, iterset, args):
    """The native args of a loop of ``kernel`` over ``iterset``, checked in PyOP2's order (see
    the module's doc), and the native set it runs over."""
    if not isinstance(kernel, Kernel):
        raise KernelTypeError("kernel must be a Kernel")
    if not isinstance(iterset, Set):
        raise SetTypeError("iterset must be a Set")
    native = []
    lis = None
    shape = None
    # Over a Subset, args are on (and maps from) its superset; over an ExtrudedSet (or a Subset
    # of one), on it or its parent.
    whole = iterset._superset if isinstance(iterset, Subset) else iterset
    parent = whole._parent if isinstance(whole, ExtrudedSet) else whole
    for a in args:
        if type(a) is not Arg:
            raise TypeError("par_loop args are built by calling a Dat, Global or Mat with an "
                            "access")
        s = a.iterset
        if s is not None and s is not whole and s is not parent and s is not iterset:
            if a.path is None:
                raise MapValueError("Iterset of direct arg does not match par_loop iterset.")
            raise MapValueError("Iterset of arg map does not match par_loop iterset.")
        if a.lis:
            # Every local iteration space arg of a loop has one shape (PyOP2's extents).
            if shape is None:
                shape = a.extent
                lis = []
            elif shape != a.extent:
                raise IndexValueError(
                    "Mismatching iteration space size for argument %s" % (a.data.name,))
            lis.append(len(native))
        native.append(a.native)
    # Only now the kernel: PyOP2 checked a loop's args before it compiled the kernel.
    per_point = (kernel._parsed or kernel._parse())[1]
    if lis is not None:
        # PyOP2 0.8.2 called per point with trailing int indices; 0.8.3 to 0.10 once per
        # element with a local buffer. The kernel's parameters say which.
        for j in lis:
            a = args[j]
            native[j] = a.lis_native(per_point)
    target = iterset._native
    if iterset._native_iter is not None and (
            iterset._direct_per_layer or any(a.path is not None for a in args)):
        # Extruded: layer by layer. PyOP2 ran a loop of direct args once per column.
        target = iterset._native_iter
    return native, target


def _record(kernel, args, native, target, region="all", layer=False):
    """Records the loop (or runs it, by the runtime's and the configuration's rules); over an
    extruded set, ``region`` (``all``, ``bottom``, ``top``, ``facets``) says which layers, and
    ``layer`` hands the kernel each element's layer as its last parameter."""
    rt = state["runtime"] or current()
    for a in args:
        if a.made_on is not None:
            # What PETSc wrote through the matrix's handle since the arg was made comes in
            # first; storage that changed since (the handle grew) is not the arg's.
            a.data._shared()
            if a.data._storage() is not a.made_on:
                raise RuntimeError(
                    "matrix %s took its PETSc handle's grown pattern after this loop's "
                    "arguments were made: make the arguments (mat(access, maps)) again"
                    % a.data.name)
    try:
        pending = rt.par_loop(kernel._parsed[0], target, native, region, layer)
    except _op2.Op2Failure as e:
        raise translate(e) from None
    for a in args:
        f = a.after
        if f is not None:
            f(a.data, a)
        wrote = getattr(a.data, "_loop_wrote", None)
        if wrote is not None:
            wrote(a.access)
    if viewed:
        for a in args:
            d = a.data
            if d in viewed:
                d._used()
    limit = configuration._values["lazy_max_trace_length"]
    if pending and any(a.data.__dict__.get("_vec_open") for a in args
                       if hasattr(a.data, "__dict__")):
        # A PETSc Vec is open for writing on a Dat of this loop: the loop runs now, so that
        # PETSc's writes before and after it stay on their side of it.
        rt.flush()
    elif pending and limit > 0 and rt.pending() >= limit:
        # PyOP2's bound on the queue: past it, loops run as they come.
        rt.flush()


def par_loop(kernel, iterset, *args):
    """Runs ``kernel`` over ``iterset`` with ``args`` (lazily, like PyOP2); returns the loop."""
    native, target = _checked(kernel, iterset, args)
    _record(kernel, args, native, target)
    loop = ParLoop.__new__(ParLoop)
    loop.kernel, loop.iterset, loop.args, loop._ready = kernel, iterset, args, None
    return loop


class ParLoop:
    """A loop: ``ParLoop(kernel, iterset, *args)`` checks its args as PyOP2's did (and
    ``par_loop`` returns one already recorded); ``compute()`` runs it now, with what is
    pending before it."""

    __slots__ = ("kernel", "iterset", "args", "_ready")

    def __init__(self, kernel, iterset, *args):
        current()
        # Checked now, recorded by compute().
        self._ready = _checked(kernel, iterset, args)
        self.kernel, self.iterset, self.args = kernel, iterset, args

    it_space = property(lambda self: self.iterset)

    def compute(self):
        """Runs the loop (recording it first when it was only made) and what it depends on."""
        if self._ready is not None:
            ready, self._ready = self._ready, None
            _record(self.kernel, self.args, *ready)
        call(current().flush)
