"""Today's ``pyop2.mpi``: ``COMM_WORLD`` and ``COMM_SELF``, the communicators objects take as
``comm=``. op2-rs runs on MPI's world (under ``mpirun``) or one process: with mpi4py imported
these are mpi4py's own communicators, otherwise op2rs's (``rank``, ``size``). An object on a
communicator of fewer ranks than the world (``COMM_SELF`` under ``mpirun -np 2``) is refused:
op2-rs has no sub-communicators (docs/14-python.md)."""

import sys

from op2rs.mpi import MPI as _MPI

__all__ = ["COMM_WORLD", "COMM_SELF", "MPI", "internal_comm", "is_pyop2_comm", "collective"]


class _Comm:
    """A communicator op2rs makes when mpi4py is not there: ``rank``, ``size`` and mpi4py's
    spellings of them."""

    def __init__(self, name, world):
        self._name, self._world = name, world

    @property
    def rank(self):
        return _MPI.comm.rank if self._world else 0

    @property
    def size(self):
        return _MPI.comm.size if self._world else 1

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    @property
    def name(self):
        return self._name

    def __repr__(self):
        return "<op2rs communicator %s>" % self._name


def _mpi4py():
    return sys.modules.get("mpi4py.MPI")


class _Lazy:
    """mpi4py's communicator when the program imported mpi4py, else op2rs's."""

    def __init__(self, name, world):
        self._own = _Comm(name, world)
        self._attr = name

    def _target(self):
        m = _mpi4py()
        return getattr(m, self._attr) if m is not None else self._own

    def __getattr__(self, name):
        if name in ("_own", "_attr") or name.startswith("__"):
            raise AttributeError(name)  # not made yet (copying, unpickling)
        return getattr(self._target(), name)

    def __eq__(self, other):
        return other is self or other is self._target()

    def __hash__(self):
        return hash(self._attr)

    def __repr__(self):
        return repr(self._target())


COMM_WORLD = _Lazy("COMM_WORLD", True)
COMM_SELF = _Lazy("COMM_SELF", False)
MPI = _MPI


def internal_comm(comm, obj=None):
    """The communicator an object lives on: ``comm`` (``COMM_WORLD`` when None), checked to span
    the ranks op2-rs runs on."""
    if comm is None:
        return COMM_WORLD
    size = getattr(comm, "size", None)
    if not isinstance(size, int):
        raise TypeError("comm must be a communicator (pyop2.mpi.COMM_WORLD, COMM_SELF or an "
                        "mpi4py one), not %r" % (comm,))
    world = _MPI.comm.size
    if size != world:
        raise NotImplementedError(
            "op2-rs runs every object on all %d ranks; a communicator of %d rank(s) is a "
            "sub-communicator, which op2-rs does not have" % (world, size))
    return comm


def is_pyop2_comm(comm):
    """Whether ``comm`` is one that objects may live on."""
    try:
        internal_comm(comm)
        return True
    except (TypeError, NotImplementedError):
        return False


def collective(f):
    """Marks ``f`` as collective (every rank calls it); it runs as it is."""
    return f
