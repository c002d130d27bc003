"""Type stubs for ``op2rs._op2``, the package's native module, so that editors and type checkers
know its names. Kept by hand in step with op2-python/src/{lib.rs,la.rs,mixed.rs,distributed.rs}."""

from collections.abc import Sequence
from typing import Any, ClassVar, final

from typing_extensions import Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

# In the order `_op2(m)` adds them (MeshBuilder, LocalMesh, finalize_mpi and mpi_is_ours with
# `mpi` only).
__all__ = [
    "PyRuntime",
    "AccessMode",
    "ArgForm",
    "MatForm",
    "Arith",
    "LoopArg",
    "Set",
    "Map",
    "Kernel",
    "Dat",
    "Global",
    "Const",
    "Keep",
    "Sparsity",
    "Mat",
    "SolverOptions",
    "MeshBuilder",
    "LocalMesh",
    "finalize_mpi",
    "mpi_is_ours",
    "HAS_MPI",
    "MixedSet",
    "MixedMap",
    "MixedDat",
    "decl_mixed_set",
    "decl_mixed_map",
    "decl_component_map",
    "mixed_map_flat",
    "mixed_flat_indices",
    "mixed_sparsity",
    "solve_mixed",
    "Op2Failure",
    "error_kinds",
]

# The classes are PyO3 classes: none can be subclassed, and those without a ``__new__`` here
# are made by the module only (by a runtime's ``decl_*``, a carrier's ``arg`` ...).

@final
class AccessMode:
    """An access mode, as the Python layer's ``op2.READ`` ... ``op2.MAX`` carry it."""

    Read: ClassVar[AccessMode]
    Write: ClassVar[AccessMode]
    Rw: ClassVar[AccessMode]
    Inc: ClassVar[AccessMode]
    Min: ClassVar[AccessMode]
    Max: ClassVar[AccessMode]
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __int__(self) -> int: ...

@final
class ArgForm:
    """How a Dat arg reaches its kernel."""

    Direct: ClassVar[ArgForm]
    """The element's own row (no map)."""
    Entry: ClassVar[ArgForm]
    """The row of one map entry (``map[k]``)."""
    Row: ClassVar[ArgForm]
    """An array of pointers to the rows of the whole map row (``map``)."""
    Entries: ClassVar[ArgForm]
    """One call per map entry, its index last (PyOP2 0.8.2's ``map[op2.i[0]]``)."""
    Buffer: ClassVar[ArgForm]
    """The whole map row's values in a local buffer, node by node (0.8.3-0.10's ``op2.i``)."""
    BufferFlattened: ClassVar[ArgForm]
    """The same buffer component by component (``flatten=True``)."""
    RowFlattened: ClassVar[ArgForm]
    """One pointer per value, component by component (``map, flatten=True``)."""
    EntriesFlattened: ClassVar[ArgForm]
    """One call per value, component by component, its index last (PyOP2 0.8.2's
    ``map[op2.i[0]], flatten=True``)."""
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __int__(self) -> int: ...

@final
class MatForm:
    """How a matrix arg hands the kernel its block."""

    Element: ClassVar[MatForm]
    """The element matrix, once per element."""
    Entries: ClassVar[MatForm]
    """One block per entry, the entry's indices last (PyOP2 0.8.2)."""
    Flattened: ClassVar[MatForm]
    """The element matrix with rows and columns component by component (``flatten=True``)."""
    EntriesFlattened: ClassVar[MatForm]
    """One scalar entry of the flattened element matrix per call, its indices last (PyOP2
    0.8.2's ``flatten=True``)."""
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __int__(self) -> int: ...

@final
class Arith:
    """An operation of PyOP2's Dat arithmetic."""

    Add: ClassVar[Arith]
    Sub: ClassVar[Arith]
    Mul: ClassVar[Arith]
    Div: ClassVar[Arith]
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __int__(self) -> int: ...

@final
class LoopArg:
    """One argument of a loop, made once (a Dat's, Global's, mixed Dat's or matrix's ``arg``)
    and handed to every loop that uses it."""
    def component(self, c: int) -> LoopArg:
        """The same arg handing the kernel only component ``c`` of each of the Dat's rows."""

@final
class Keep:
    """Keeps a Dat's memory alive under a NumPy view of it (the view's base)."""

@final
class Set:
    """A set (``PyRuntime.decl_set`` ...)."""

    @property
    def name(self) -> str: ...
    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """(core, owned, exec halo, non-exec halo) sizes."""
    @property
    def size(self) -> int: ...
    @property
    def exec_size(self) -> int: ...
    @property
    def total_size(self) -> int: ...
    @property
    def id(self) -> int: ...

@final
class Map:
    """A map between two sets (``PyRuntime.decl_map``)."""

    @property
    def arity(self) -> int: ...
    @property
    def name(self) -> str: ...
    def values(self) -> NDArray[np.int32]:
        """The values, one row per element a loop runs (a copy), shape (rows, arity)."""
    @property
    def offsets(self) -> list[int] | None: ...

@final
class Kernel:
    """A C kernel: ``Kernel(code, name)``; ``cpp=True``: a C++ one; ``link_args`` and
    ``compile_args``: what its loops are linked and compiled with."""

    def __new__(
        cls,
        code: str,
        name: str,
        cpp: bool = False,
        link_args: list[str] = ...,
        compile_args: list[str] = ...,
        host_effects: bool = False,
    ) -> Self: ...
    @property
    def name(self) -> str: ...
    @property
    def link_args(self) -> list[str]: ...
    @property
    def compile_args(self) -> list[str]: ...
    def param_texts(self) -> list[str] | None:
        """Each parameter as written in the definition (None when macros hide it)."""
    def param_count(self) -> int | None:
        """How many parameters the kernel's definition has (None when macros hide it)."""
    def trailing_ints(self) -> int:
        """How many of the last parameters are plain ``int``s."""

@final
class Dat:
    """A Dat of any element type (``PyRuntime.decl_dat``)."""

    @property
    def name(self) -> str: ...
    @property
    def dim(self) -> int: ...
    @property
    def set(self) -> Set: ...
    def view(self, writable: bool) -> NDArray[Any]:
        """A NumPy array of shape (elements with halos, dim) over the Dat's own memory, after
        running what it depends on."""
    def norm(self) -> float:
        """The 2-norm of every value."""
    def inner(self, other: Dat) -> NDArray[Any]:
        """The inner product with ``other`` (same type, set and dim; conjugated where complex),
        summed over ranks, as a one-value array of the Dats' type."""
    def zero(self) -> None: ...
    def arith(self, op: Arith, other: Dat, out: Dat | None = None) -> None:
        """``self op other`` as C computes it, into ``out`` or in place."""
    def arith_scalar(
        self, op: Arith, value: float, dtype: str, out: Dat | None = None
    ) -> None:
        """``self op value`` (a scalar of NumPy type ``dtype``) as C computes it."""
    def copy(self, other: Dat) -> None:
        """Copies the values into ``other``, converted to its type."""
    def arg(
        self, access: AccessMode, form: ArgForm, map: Map | None = None, index: int = 0
    ) -> LoopArg:
        """The loop argument reaching this Dat with ``access`` in ``form``, through ``map``
        (entry ``index`` for ``ArgForm.Entry``) unless direct."""
    @property
    def carrier_id(self) -> int: ...

@final
class Global:
    """A Global of any element type (``PyRuntime.decl_global``)."""

    def value(self) -> NDArray[Any]:
        """The values (a copy, after what they depend on ran)."""
    def set_value(self, values: ArrayLike) -> None:
        """Sets the values from a one-dimensional array of the Global's type."""
    def arg(self, access: AccessMode) -> LoopArg:
        """The loop argument reaching this Global with ``access``."""

@final
class Const:
    """A Const of any element type (``PyRuntime.decl_const``)."""

    def value(self) -> NDArray[Any]: ...
    def set_value(self, values: ArrayLike) -> None:
        """Sets the values from a one-dimensional array of the Const's type."""

@final
class PyRuntime:
    """The runtime of a program (``op2.init``)."""

    def __new__(cls, backend: str | None = None, lazy: bool = True) -> Self: ...
    @property
    def backend(self) -> str: ...
    @property
    def rank(self) -> int:
        """This process's rank among the runtime's ranks."""
    @property
    def ranks(self) -> int:
        """How many ranks the runtime spans."""
    def decl_set(
        self,
        sizes: tuple[int, int, int, int],
        name: str,
        exchanges: tuple[
            Sequence[tuple[int, Sequence[int]]], Sequence[tuple[int, Sequence[int]]]
        ]
        | None = ...,
    ) -> Set:
        """A set of (core, owned, exec halo, non-exec halo) sizes; with ``exchanges``
        (``(sends, receives)``, each ``(rank, elements)`` pairs) its halo, agreed with the
        other ranks (collective)."""
    def decl_extruded_set(self, base: Set, layers: int | list[int], name: str) -> Set:
        """Node layers in every column (an int) or each column's (a list, halos included)."""
    def decl_subset(self, parent: Set, indices: ArrayLike, name: str) -> Set:
        """The subset of ``parent`` at ``indices`` (a one-dimensional int32 array)."""
    def decl_map(
        self,
        from_: Set,
        to: Set,
        arity: int,
        data: ArrayLike,
        name: str,
        offsets: Sequence[int] | None = None,
        gaps: bool = False,
    ) -> Map:
        """A map of ``arity`` from ``from_`` (at runtime the parameter is named ``from``) to
        ``to``, its values a one-dimensional int32 array; extruded with ``offsets``; with
        ``gaps`` its negative values mean "no element" (matrices only)."""
    def decl_dat(
        self, set: Set, dim: int, dtype: str, data: ArrayLike | None, name: str
    ) -> Dat:
        """A Dat of ``dtype`` (a NumPy type name) on ``set``, ``dim`` values per element, from
        ``data`` (``None``: zeros)."""
    def decl_global(self, dim: int, dtype: str, data: ArrayLike, name: str) -> Global: ...
    def decl_const(self, dim: int, dtype: str, data: ArrayLike, name: str) -> Const: ...
    def remove_const(self, c: Const) -> None:
        """Frees Const ``c``'s name (loops recorded before run first)."""
    def par_loop(
        self,
        kernel: Kernel,
        set: Set,
        args: Sequence[LoopArg],
        region: str = "all",
        layer: bool = False,
    ) -> bool:
        """Records ``kernel`` over ``set`` with ``args``. ``region`` is one of ``all``,
        ``bottom``, ``top``, ``facets``; ``layer``: the kernel's last parameter takes each
        element's layer. Returns whether the loop is still pending."""
    def flush(self) -> None:
        """Runs every pending loop."""
    def refresh_halo(self, dat: Dat) -> None:
        """Brings ``dat``'s halo rows up to date from their owners (every rank calls it
        together); nothing in one process or for a set without a halo."""
    def time_loop(
        self, kernel: Kernel, set: Set, args: Sequence[LoopArg], calls: int, batch: int
    ) -> float:
        """Seconds to record ``calls`` loops from Rust, running what is pending every
        ``batch`` calls (the overhead benchmark)."""
    def pending(self) -> int:
        """Loops recorded and not yet run."""

@final
class Sparsity:
    """A matrix's pattern: ``Sparsity(pairs, dims, name)`` with ``pairs`` a list of (row map,
    column map) and ``dims`` the (row, column) values per node."""

    def __new__(
        cls, pairs: Sequence[tuple[Map, Map]], dims: tuple[int, int], name: str
    ) -> Self: ...
    @property
    def nnz(self) -> int:
        """Stored entries."""
    @property
    def shape(self) -> tuple[int, int]:
        """Scalar rows and columns."""
    def rowptr(self) -> NDArray[np.int64]:
        """CSR row offsets."""
    def colidx(self) -> NDArray[np.int32]:
        """CSR column indices."""
    def with_entries(self, rows: Sequence[int], cols: Sequence[int]) -> Sparsity:
        """This pattern with the scalar entries (``rows[k]``, ``cols[k]``) added: a pattern of
        its own, for one matrix that grows (``Mat.with_pattern``)."""
    def row_counts(self) -> NDArray[np.int32]:
        """Stored entries in each scalar row."""

@final
class Mat:
    """A matrix on a sparsity: ``Mat(sparsity, name, complex=False)``."""

    def __new__(cls, sparsity: Sparsity, name: str, complex: bool = False) -> Self: ...
    @property
    def complex(self) -> bool:
        """Whether it holds complex values."""
    @property
    def sparsity(self) -> Sparsity:
        """Its pattern (the Sparsity's, or the one it grew to)."""
    def with_pattern(self, sparsity: Sparsity) -> Mat:
        """A new matrix on ``sparsity`` (holding every entry of this one's) with this matrix's
        values; this one is left as it is."""
    def arg(
        self,
        access: AccessMode,
        rows: Map,
        cols: Map,
        form: MatForm,
        boundary: tuple[
            tuple[Sequence[int], Sequence[int]] | None,
            tuple[Sequence[int], Sequence[int]] | None,
        ]
        | None = ...,
    ) -> LoopArg:
        """The loop argument assembling into this matrix with ``access`` through ``rows`` and
        ``cols`` in ``form``; ``boundary`` (``(bottom, top)``, each ``None`` or ``(row map
        entries, column map entries)``) leaves those out of the bottom and top cells of
        extruded columns."""
    def arg_mixed(
        self, access: AccessMode, rows: MixedMap, cols: MixedMap, form: MatForm = ...
    ) -> LoopArg:
        """The loop argument assembling into this block matrix through mixed maps: the element
        matrix once per element (``MatForm.Element``) or one entry per call (``Entries``)."""
    def zero(self) -> None:
        """Sets every entry to zero (the pattern stays)."""
    def assemble(self) -> None:
        """Finishes pending insertions."""
    def zero_rows(self, rows: Sequence[int], diagonal: float) -> None:
        """Zeroes scalar ``rows`` and puts ``diagonal`` on their diagonal."""
    def diagonal_entries(
        self, rows: Sequence[int], values: Sequence[float], add: bool
    ) -> None:
        """Adds (``add``) or sets each value of ``values`` on the diagonal entry of scalar row
        ``rows[k]``."""
    def entries(
        self, rows: Sequence[int], cols: Sequence[int], values: Sequence[float], add: bool
    ) -> None:
        """Adds (``add``) or inserts the dense row-major ``values`` at scalar ``rows`` and
        ``cols`` (PETSc's ``MatSetValues``; every entry must be in the pattern); a complex
        matrix's as real and imaginary parts in turn."""
    def array(self) -> NDArray[np.float64]:
        """The stored values in CSR order (a copy; a complex matrix's real and imaginary parts
        in turn)."""
    def values_view(self) -> NDArray[np.float64]:
        """The stored values in CSR order over the matrix's own memory (what a PETSc handle
        shares; a complex matrix's real and imaginary parts in turn); the array keeps the
        matrix alive."""
    def dense(self) -> NDArray[np.float64]:
        """The whole matrix, dense (a copy; a complex matrix's columns as real and imaginary
        parts in turn)."""
    def mult_complex(self, x: Dat, y: Dat) -> None:
        """``y = A x`` with Dats of complex128, in one process."""
    def mult(self, x: Dat, y: Dat) -> None:
        """``y = A x`` with Dats of float64."""
    def mult_mixed(self, x: MixedDat, y: MixedDat) -> None:
        """``y = A x`` for a matrix of mixed spaces, with mixed Dats of float64."""
    def solve(
        self, x: Dat, b: Dat, options: SolverOptions
    ) -> tuple[bool, str, int, float]:
        """Solves ``A x = b``. Returns (converged, reason, iterations, last residual norm)."""

@final
class SolverOptions:
    """A solve's settings from PyOP2's parameters: ``method`` is its ``ksp_type`` (``cg``,
    ``gmres``, ``bcgs``/``bicgstab``), ``pc`` its ``pc_type`` (``none``, ``jacobi``, ``sor``,
    ``ilu``, and for mixed systems ``fieldsplit`` or ``fieldsplit_multiplicative``)."""

    def __new__(
        cls,
        method: str,
        pc: str,
        rtol: float,
        atol: float,
        dtol: float,
        max_it: int,
        restart: int,
        nonzero_guess: bool,
    ) -> Self: ...

@final
class MixedSet:
    """An ordered tuple of sets (``decl_mixed_set``)."""

@final
class MixedMap:
    """One map per component of a mixed set, from one iteration set (``decl_mixed_map``)."""

@final
class MixedDat:
    """One Dat per component of a mixed set, all of one type."""

    def __new__(cls, set: MixedSet, dats: Sequence[Dat]) -> Self: ...
    def arg(self, access: AccessMode, map: MixedMap, form: ArgForm = ...) -> LoopArg:
        """The loop argument reaching this mixed Dat with ``access`` through ``map``: one
        pointer array across the components (``ArgForm.Row``), one local buffer of the
        element's values (``Buffer``) or one call per entry (``Entries``)."""
    def flat_values(self) -> list[float]:
        """The float64 values in the mixed set's flat numbering (a matrix of mixed spaces
        numbers its rows so)."""

# Present when the module is built with the `mpi` feature (HAS_MPI).

@final
class MeshBuilder:
    """A mesh in global numbering, declared identically on every rank: ``MeshBuilder(input)``
    with ``input`` ``everywhere``, ``root`` or ``slices``. Sets, maps and Dats are numbered in
    declaration order."""

    def __new__(cls, input: str) -> Self: ...
    def decl_set(self, size: int, name: str) -> int: ...
    def decl_map(
        self, from_: int, to: int, arity: int, data: ArrayLike, name: str
    ) -> int:
        """Map number ``from_`` (at runtime the parameter is named ``from``) -> ``to``."""
    def decl_dat(
        self, set: int, dim: int, dtype: str, data: ArrayLike, name: str
    ) -> int: ...
    def partition(
        self,
        rt: PyRuntime,
        partitioner: str,
        by: int | None = None,
        renumber: bool = False,
    ) -> LocalMesh:
        """The collective partition step on ``rt``'s ranks: ``partitioner`` is ``metis``,
        ``ptscotch``, ``geometric`` or ``blocks``."""

@final
class LocalMesh:
    """This rank's part of a partitioned mesh."""

    def set(self, i: int) -> Set: ...
    def map(self, i: int) -> Map: ...
    def dat(self, i: int) -> Dat: ...
    def global_ids(self, i: int) -> NDArray[np.uint64]:
        """The global numbers of set ``i``'s local elements."""
    def gather(self, dat: Dat) -> NDArray[Any] | None:
        """Collective: every rank's owned values of ``dat`` in global order, flat, on rank 0
        (None elsewhere)."""
    def report(self) -> str:
        """The partition in a line: partitioner, edge cut, seconds."""

def finalize_mpi() -> None:
    """Finalises MPI if it was started (at interpreter exit, after the runtime is gone)."""

def mpi_is_ours() -> bool:
    """Whether op2 started MPI in this process and will finalise it."""

HAS_MPI: bool

class Op2Failure(RuntimeError):
    """An op2 error: args are (kind, message)."""

def decl_mixed_set(rt: PyRuntime, sets: Sequence[Set], name: str) -> MixedSet: ...
def decl_mixed_map(
    rt: PyRuntime, to: MixedSet, maps: Sequence[Map], name: str
) -> MixedMap: ...
def decl_component_map(rt: PyRuntime, to: MixedSet, c: int, map: Map, name: str) -> Map: ...
def mixed_map_flat(map: MixedMap) -> Map: ...
def mixed_flat_indices(set: MixedSet, c: int, n: int) -> list[int]: ...
def mixed_sparsity(
    rows: MixedMap, cols: MixedMap, name: str, dims: tuple[int, int] = ...
) -> Sparsity:
    """The block sparsity of a row and a column mixed map, ``dims`` values per element down
    and across in every component."""
def solve_mixed(
    mat: Mat, x: MixedDat, b: MixedDat, options: SolverOptions
) -> tuple[bool, str, int, float]:
    """Solves the mixed system ``mat x = b``. Returns (converged, reason, iterations,
    residual)."""
def error_kinds() -> list[str]:
    """Every error kind the native module can raise."""
