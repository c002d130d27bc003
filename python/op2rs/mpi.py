"""PyOP2's ``op2.MPI``: the ranks a program runs on. op2-rs runs on MPI's world under
``mpirun`` (one process otherwise)."""

import sys

from .runtime import state

__all__ = ["MPI"]


class _Comm:
    """The ranks the runtime spans: ``rank`` and ``size`` (1 process before ``init``)."""

    @property
    def rank(self):
        rt = state["runtime"]
        return rt.rank if rt is not None else 0

    @property
    def size(self):
        rt = state["runtime"]
        return rt.ranks if rt is not None else 1


class _MPI:
    """PyOP2's ``op2.MPI``: ``comm`` (with ``rank`` and ``size``), ``parallel`` and
    ``rank_zero``. A program that imported mpi4py gets mpi4py's ``COMM_WORLD`` as ``comm``
    (op2 then shares the MPI mpi4py started); otherwise ``comm`` is op2rs's own, with ``rank``
    and ``size``."""

    _own = _Comm()

    @property
    def comm(self):
        m = sys.modules.get("mpi4py.MPI")
        return m.COMM_WORLD if m is not None else self._own

    @comm.setter
    def comm(self, comm):
        # PyOP2 took any communicator; op2rs runs on the world only.
        size = getattr(comm, "size", None)
        if size is None and hasattr(comm, "tompi4py"):
            size = comm.tompi4py().size
        if size is None:
            raise TypeError("MPI.comm needs an mpi4py communicator")
        if size != self._own.size:
            raise NotImplementedError("op2rs runs on MPI's world; a communicator of %d of its "
                                      "%d ranks is not supported" % (size, self._own.size))

    @property
    def parallel(self):
        return self.comm.size > 1

    def rank_zero(self, f):
        """``f`` run on rank 0 only."""
        def on_rank_zero(*args, **kwargs):
            if self.comm.rank == 0:
                return f(*args, **kwargs)
        return on_rank_zero


MPI = _MPI()
