"""Today's PyOP2 (the ``pyop2`` package inside Firedrake) over op2-rs: a program written for it
runs unchanged (``from pyop2 import op2``), on every op2-rs backend. Programs for PyOP2 0.8-0.10
import ``op2rs`` instead (``from op2rs import op2``): the import says which era a program is
written for (docs/14-python.md).

Modules: ``mpi`` (``COMM_WORLD``, ``COMM_SELF``), ``exceptions``, ``datatypes`` (``IntType``,
``ScalarType``, ``as_cstr``, ``OpaqueType``), ``op2`` (sets, maps, data, kernels, loops,
sparsities and matrices as today's PyOP2 writes them)."""

from . import datatypes, exceptions, mpi, op2  # noqa: F401
from . import global_kernel, local_kernel, parloop  # noqa: F401
