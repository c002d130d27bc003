"""Today's ``pyop2.exceptions``: the same exception classes as op2rs's (a program catching
``pyop2.exceptions.MapValueError`` catches what op2-rs raises)."""

from op2rs.exceptions import *  # noqa: F401,F403
from op2rs.exceptions import __all__ as _old_all

__all__ = list(_old_all)
