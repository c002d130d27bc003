"""Access descriptors (``op2.READ`` ... ``op2.MAX``) and ``op2.i``, the marker of a local
iteration space."""

from . import _op2
from .exceptions import ModeValueError

__all__ = ["Access", "READ", "WRITE", "RW", "INC", "MIN", "MAX", "IterationIndex", "i"]


class Access:
    """An access descriptor: ``Access("READ")`` is ``op2.READ`` (one object per mode, so that
    ``eval(repr(op2.READ))`` is usable wherever ``op2.READ`` is)."""

    _MODES = ["READ", "WRITE", "RW", "INC", "MIN", "MAX"]
    _made = {}

    def __new__(cls, mode):
        a = cls._made.get(mode) if isinstance(mode, str) else None
        if a is None:
            if mode not in cls._MODES:
                raise ModeValueError("Mode needs to be one of %s" % cls._MODES)
            a = object.__new__(cls)
            a._mode = mode
            # The native module's mode.
            a._native = getattr(_op2.AccessMode, mode.capitalize())
            cls._made[mode] = a
        return a

    def __getnewargs__(self):
        return (self._mode,)

    def __str__(self):
        return "OP2 Access: %s" % self._mode

    def __repr__(self):
        return "Access(%r)" % self._mode


READ = Access("READ")
WRITE = Access("WRITE")
RW = Access("RW")
INC = Access("INC")
MIN = Access("MIN")
MAX = Access("MAX")

# Modes by kind of argument (PyOP2's section on access descriptors).
DAT_MODES = (READ, WRITE, RW, INC)
GLOBAL_MODES = (READ, INC, MIN, MAX)
MAT_MODES = (WRITE, INC)
WRITES = (WRITE, RW, INC, MIN, MAX)


class IterationIndex:
    """``op2.i``: ``op2.i[n]`` marks map entry ``n`` of a local iteration space."""

    def __init__(self, index=None):
        assert index is None or isinstance(index, int), "i must be an int"
        self._index = index

    def __getitem__(self, idx):
        return IterationIndex(idx)

    @property
    def index(self):
        return self._index

    def __eq__(self, other):
        return isinstance(other, IterationIndex) and other._index == self._index

    def __hash__(self):
        return hash(("op2.i", self._index))

    def __repr__(self):
        return "IterationIndex(%r)" % (self._index,)

    def __str__(self):
        return "OP2 IterationIndex: %s" % (self._index,)


i = IterationIndex()
