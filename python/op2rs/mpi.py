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
    _set = None

    @property
    def comm(self):
        if self._set is not None:
            return self._set
        m = sys.modules.get("mpi4py.MPI")
        return m.COMM_WORLD if m is not None else self._own

    @comm.setter
    def comm(self, comm):
        # As PyOP2: an mpi4py communicator, an integer (Fortran) handle of one, or an object
        # with tompi4py(). op2rs runs on MPI's world, so it must span every rank.
        if isinstance(comm, int) and not isinstance(comm, bool):
            try:
                from mpi4py import MPI as mpi4py
            except ImportError:
                raise TypeError("an integer MPI.comm is a Fortran handle, which needs "
                                "mpi4py") from None
            comm = mpi4py.Comm.f2py(comm)
        elif comm is not None and not hasattr(comm, "size") and hasattr(comm, "tompi4py"):
            comm = comm.tompi4py()
        size = getattr(comm, "size", None)
        if not isinstance(size, int):
            raise TypeError("MPI.comm needs an mpi4py communicator")
        if size != self._own.size:
            raise NotImplementedError("op2rs runs on MPI's world; a communicator of %d of its "
                                      "%d ranks is not supported" % (size, self._own.size))
        self._set = comm

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
