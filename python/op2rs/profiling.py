"""PyOP2's ``pyop2.profiling``: named wall-clock timers a program starts and stops itself
(``tic``/``toc``, ``Timer``, the ``profile`` decorator) and a summary table. op2rs's own loop
timings are the runtime's (``OP2_PROFILE``); these time whatever the program wraps."""

import csv
import itertools
import sys
import time

__all__ = ["Timer", "profile", "tic", "toc", "summary", "get_timers", "reset"]


class Timer:
    """A named timer: ``Timer(name=None, timer=time.time)``; one instance per name (asking
    again for a name gives the same timer). ``start()`` and ``stop()`` bracket an interval."""

    _timers = {}
    _unnamed = itertools.count()

    def __new__(cls, name=None, timer=time.time):
        if name is None:
            # PyOP2 failed here (section 24 of PYOP2-API.md); a fresh name is what it meant.
            name = "timer%d" % next(cls._unnamed)
        got = Timer._timers.get(name)
        if got is not None:
            return got
        t = super().__new__(cls)
        t._name, t._timer, t._start, t._timings = name, timer, None, []
        Timer._timers[name] = t
        return t

    def start(self):
        """Starts an interval."""
        self._start = self._timer()

    def stop(self):
        """Ends the interval started last and records it; returns its length."""
        assert self._start is not None, "Timer %s has not been started yet." % self._name
        t = self._timer() - self._start
        self._timings.append(t)
        self._start = None
        return t

    name = property(lambda self: self._name)
    ncalls = property(lambda self: len(self._timings))
    total = property(lambda self: sum(self._timings))
    average = property(lambda self: self.total / self.ncalls if self._timings else 0.0)

    @property
    def elapsed(self):
        """Time since the running interval started (an AssertionError when none runs)."""
        assert self._start is not None, "Timer %s has not been started yet." % self._name
        return self._timer() - self._start

    @classmethod
    def summary(cls, filename=None):
        """Prints a table of every timer (total, calls, average), or writes it as CSV to
        ``filename``."""
        rows = [(t.name, t.total, t.ncalls, t.average) for t in Timer._timers.values()]
        header = ("Timer", "Total time", "Calls", "Average time")
        if isinstance(filename, str):
            with open(filename, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(header)
                w.writerows(rows)
            return
        width = max([len(header[0])] + [len(r[0]) for r in rows])
        out = sys.stdout
        out.write("%-*s | %12s | %8s | %12s\n" % ((width,) + header))
        for name, total, calls, avg in rows:
            out.write("%-*s | %12.6f | %8d | %12.6f\n" % (width, name, total, calls, avg))

    @classmethod
    def get_timers(cls):
        """Every timer, by name."""
        return Timer._timers

    @classmethod
    def reset(cls):
        """Forgets every timer."""
        Timer._timers = {}


class profile(Timer):
    """A Timer that decorates a function: ``@profile("name")`` times every call."""

    def __call__(self, f):
        def timed(*args, **kwargs):
            self.start()
            try:
                return f(*args, **kwargs)
            finally:
                self.stop()
        timed.__name__ = getattr(f, "__name__", "timed")
        timed.__doc__ = getattr(f, "__doc__", None)
        return timed


def tic(name):
    """Starts the timer ``name``."""
    Timer(name).start()


def toc(name):
    """Stops the timer ``name``; returns the interval."""
    return Timer(name).stop()


def summary(filename=None):
    """:meth:`Timer.summary`."""
    Timer.summary(filename)


def get_timers():
    """:meth:`Timer.get_timers`."""
    return Timer.get_timers()


def reset():
    """:meth:`Timer.reset`."""
    Timer.reset()
