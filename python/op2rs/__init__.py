"""op2rs: PyOP2's API (0.8 to 0.10) over op2-rs. A PyOP2 program runs with its import line
changed from ``from pyop2 import op2`` to ``from op2rs import op2``.

Modules, lowest first: ``exceptions``, ``datatypes``, ``configuration``, ``runtime``, ``mpi``,
``logger``, ``lifecycle``, ``access``, ``sets``, ``maps``, ``kernels``, ``parloop``, ``data``,
``la``, ``distributed``; ``op2`` gathers their public names, ``utils`` has PyOP2's
command-line helpers."""

from . import op2, utils  # noqa: F401
from .op2 import *  # noqa: F401,F403

__version__ = "0.1.0"
