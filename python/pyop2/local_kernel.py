"""Today's ``pyop2.local_kernel``: the kernel classes (``Kernel``, ``LocalKernel``,
``CStringLocalKernel``, ``LoopyLocalKernel``), which live in ``pyop2.op2``."""

from .op2 import CStringLocalKernel, Kernel, LocalKernel, LoopyLocalKernel  # noqa: F401

__all__ = ["Kernel", "LocalKernel", "CStringLocalKernel", "LoopyLocalKernel"]
