"""PyOP2's ``op2`` module over op2-rs: the names a PyOP2 0.8-0.10 program uses, gathered from
the modules that define them (sets, maps, data, kernels and loops, linear algebra, MPI,
configuration, exceptions). The runtime, the generated code and the data are op2-rs's
(``op2rs._op2``)."""

from .access import INC, MAX, MIN, READ, RW, WRITE, Access, IterationIndex, i
from .configuration import configuration
from .data import Const, Dat, Global, MixedDat
from .distributed import DistributedMesh, LocalMesh
from .exceptions import *  # noqa: F401,F403 (PyOP2's op2 reached its exceptions too)
from .exceptions import DatTypeError, MatTypeError
from .kernels import Kernel
from .la import DEFAULT_SOLVER_PARAMETERS, Mat, Solver, Sparsity, solve  # noqa: F401
from .lifecycle import exit, init, initialised
from .logger import critical, debug, error, info, set_log_level, warning
from .maps import Map, MixedMap
from .mpi import MPI
from .parloop import Arg, ParLoop, par_loop
from .runtime import state as _state  # noqa: F401 (op2rs's own tests look at the runtime)
from .sets import DataSet, ExtrudedSet, Halo, MixedDataSet, MixedSet, Set, Subset

__all__ = [
    "configuration", "READ", "WRITE", "RW", "INC", "MIN", "MAX", "i",
    "debug", "info", "warning", "error", "critical", "set_log_level", "Halo",
    "init", "exit", "initialised",
    "Set", "DataSet", "Map", "Dat", "Global", "Const", "Kernel", "par_loop",
    "Sparsity", "Mat", "Solver", "solve", "Subset", "ExtrudedSet", "MPI", "DistributedMesh",
    "MixedSet", "MixedDataSet", "MixedMap", "MixedDat",
    "MatTypeError", "DatTypeError",
]

# Reached as attributes, as PyOP2's were, though not exported by `from op2 import *`.
_extra = (Access, IterationIndex, Arg, ParLoop, LocalMesh)
