"""PyOP2's logging: the ``pyop2`` logger, its level and its functions (``op2.info``, ...),
each line prefixed with the rank when there are several."""

import logging

from .mpi import MPI

__all__ = ["set_log_level", "debug", "info", "warning", "error", "critical"]

_logger = logging.getLogger("pyop2")
_handler = logging.StreamHandler()
_logger.addHandler(_handler)


def set_log_level(level):
    """The ``pyop2`` logger's level: a name (``"WARN"``, ``"INFO"``, ...) or a number."""
    if isinstance(level, str) and level.upper() == "WARN":
        level = "WARNING"
    _logger.setLevel(level.upper() if isinstance(level, str) else level)
    prefix = "[%d] " % MPI.comm.rank if MPI.comm.size > 1 else ""
    _handler.setFormatter(logging.Formatter(prefix + "%(name)s:%(levelname)s %(message)s"))


def debug(msg, *args, **kwargs):
    """Logs ``msg % args`` at level DEBUG on the ``pyop2`` logger."""
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    """Logs ``msg % args`` at level INFO on the ``pyop2`` logger."""
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    """Logs ``msg % args`` at level WARNING on the ``pyop2`` logger."""
    _logger.warning(msg, *args, **kwargs)


def error(msg, *args, **kwargs):
    """Logs ``msg % args`` at level ERROR on the ``pyop2`` logger."""
    _logger.error(msg, *args, **kwargs)


def critical(msg, *args, **kwargs):
    """Logs ``msg % args`` at level CRITICAL on the ``pyop2`` logger."""
    _logger.critical(msg, *args, **kwargs)
