"""PyOP2's ``pyop2.utils`` command-line helpers: ``parser`` and ``parse_args``, so programs
doing ``op2.init(**utils.parse_args(...))`` run unchanged."""

import argparse

__all__ = ["parser", "parse_args"]


def parser(description=None, group=False):
    """An ArgumentParser with PyOP2's options: ``-b/--backend``, ``-d/--debug`` and
    ``-l/--log-level`` (in an argument group "pyop2" when ``group``)."""
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = p.add_argument_group("pyop2", "backend configuration options") if group else p
    g.add_argument("-b", "--backend", action="store", default="sequential",
                   choices=["sequential", "openmp", "opencl", "cuda"],
                   help="select backend" if group else "select pyop2 backend")
    g.add_argument("-d", "--debug", action="store", type=int, choices=range(8),
                   default=argparse.SUPPRESS,
                   help="set debug level" if group else "set pyop2 debug level")
    g.add_argument("-l", "--log-level", action="store", default="WARN",
                   choices=["CRITICAL", "ERROR", "WARN", "INFO", "DEBUG"],
                   help="set logging level" if group else "set pyop2 logging level")
    return p


def parse_args(*args, **kwargs):
    """The options of :func:`parser` as a dict (``parse_args`` of its arguments)."""
    return vars(parser(*args, **kwargs).parse_args())
