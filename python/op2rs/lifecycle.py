"""``op2.init``, ``op2.exit`` and ``op2.initialised``: starting and finishing op2-rs's runtime
on the configured backend."""

import atexit
import sys

from . import _op2
from .configuration import configuration
from .exceptions import call
from .logger import set_log_level
from .runtime import clear_caches, state

__all__ = ["init", "exit", "initialised"]

# PyOP2's backend names and op2-rs's; any other name is passed on as op2-rs's.
_BACKENDS = {"sequential": "seq", "openmp": "openmp", "opencl": "opencl", "cuda": "cuda"}


def init(**kwargs):
    """Starts op2-rs with ``backend`` (``sequential``, ``openmp``, ``opencl``, ``cuda``, or an
    op2-rs name such as ``cuda-emulator``) and ``lazy_evaluation``; every keyword goes into
    ``configuration`` (unknown ones are kept, as PyOP2 kept them)."""
    if state["finalised"]:
        raise RuntimeError("op2.exit has been called")
    backend = kwargs.get("backend")
    if state["runtime"] is not None:
        if backend is not None and backend != state["backend"]:
            raise RuntimeError("Changing the backend is not possible once set.")
        configuration.reconfigure(**{k: v for k, v in kwargs.items() if k != "backend"})
        set_log_level(configuration["log_level"])
        return
    old = configuration.snapshot()
    try:
        configuration.reconfigure(**kwargs)
        name = configuration["backend"]
        # A backend that cannot start is PyOP2's ImportError, and leaves the configuration as
        # it was.
        state["runtime"] = call(_op2.PyRuntime, _BACKENDS.get(name, name),
                                configuration["lazy_evaluation"])
    except Exception:
        configuration.restore(old)
        raise
    set_log_level(configuration["log_level"])
    state["backend"] = name
    if getattr(_op2, "HAS_MPI", False) and not state.get("atexit"):
        # MPI (started under any mpirun, one rank too) finishes at exit, after what is
        # pending ran on every rank; nothing happens when it never started.
        atexit.register(_finish_mpi)
        state["atexit"] = True


def _finish_mpi():
    exit()
    # PETSc, started on op2's MPI after it, finalises at interpreter exit after this hook,
    # when MPI would be gone: finish PETSc first (what petsc4py's own exit would do). When
    # another library started MPI, finalising it (and PETSc) is that library's.
    petsc = sys.modules.get("petsc4py.PETSc")
    if (petsc is not None and _op2.mpi_is_ours() and petsc.Sys.isInitialized()
            and not petsc.Sys.isFinalized()):
        petsc._finalize()
    _op2.finalize_mpi()


def exit():
    """Finalises op2. Unlike PyOP2, which dropped them, loops still pending run first (op2-rs
    finishes what was recorded when its runtime goes)."""
    rt = state["runtime"]
    try:
        if rt is not None:
            state["finalised"] = True
            # Loops still pending run now, on every rank together (not when the last object
            # holding the runtime goes, which ranks might reach at different times).
            call(rt.flush)
    finally:
        state["runtime"] = None
        configuration.reset()
        clear_caches()


def initialised():
    """Whether ``init`` ran and ``exit`` did not."""
    return state["runtime"] is not None
