"""The op2-rs runtime a program runs on (started by ``op2.init``), default names, and what
``op2.exit`` clears.

Every object that needs the runtime asks :func:`current`, which raises PyOP2's
``RuntimeError`` before ``init`` and after ``exit``."""

import weakref

from .exceptions import NameTypeError

__all__ = ["state", "current", "fresh_name", "on_exit", "viewed"]

# "runtime": the native runtime (None outside init..exit); "backend": PyOP2's name of it;
# "finalised": whether exit ran.
state = {"runtime": None, "backend": None, "finalised": False}

# Dats that have handed out writable NumPy views since a loop last used them: a loop using one
# makes those views read-only (PyOP2's rule). Usually empty, so a loop pays nothing for it.
viewed = weakref.WeakSet()

# Caches of objects tied to a runtime, emptied when it goes (`on_exit`).
_caches = []

_counters = {}


def current():
    """The running runtime (``RuntimeError`` outside ``init``..``exit``)."""
    rt = state["runtime"]
    if rt is None:
        if state["finalised"]:
            raise RuntimeError("op2.exit has been called")
        raise RuntimeError("You must call op2.init() before using op2")
    return rt


def fresh_name(kind, name):
    """``name``, or ``<kind>_<n>`` when it is None (``NameTypeError`` when not a str)."""
    if name is None:
        n = _counters.get(kind, 0)
        _counters[kind] = n + 1
        return "%s_%d" % (kind, n)
    if not isinstance(name, str):
        raise NameTypeError("name must be of type str")
    return name


def on_exit(cache):
    """Registers a dict emptied by ``op2.exit`` (its objects belong to the runtime); returns it."""
    _caches.append(cache)
    return cache


def clear_caches():
    """Empties every cache registered with :func:`on_exit`."""
    for c in _caches:
        c.clear()
