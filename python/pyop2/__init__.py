"""Today's PyOP2 (the ``pyop2`` package inside Firedrake) over op2-rs: a program written for it
runs unchanged (``from pyop2 import op2``), on every op2-rs backend. Programs for PyOP2 0.8-0.10
import ``op2rs`` instead (``from op2rs import op2``): the import says which era a program is
written for (docs/14-python.md).

Modules: ``configuration`` (today's keys), ``compilation`` (compiler families and ``load``,
which compiles a program's own C), ``mpi`` (``COMM_WORLD``, ``COMM_SELF``), ``exceptions``, ``datatypes`` (``IntType``,
``ScalarType``, ``as_cstr``, ``OpaqueType``), ``op2`` (sets, maps, data, kernels, loops,
sparsities and matrices as today's PyOP2 writes them)."""

from . import configuration, datatypes, exceptions, mpi, op2  # noqa: F401
from . import global_kernel, local_kernel, parloop  # noqa: F401

# Today's package exports op2's names itself (``pyop2.Set``, ``pyop2.READ``,
# ``pyop2.configuration``), as ``from pyop2.op2 import *`` does in Firedrake's pyop2.
from .op2 import *  # noqa: E402,F401,F403
