"""Today's ``pyop2.configuration``: ``Configuration`` (a ``dict`` of today's keys, each default
read from its ``PYOP2_*`` environment variable and checked by type when set) and the process's
``configuration``.

op2-rs compiles its loops itself (``OP2_CFLAGS``, docs/05-codegen.md), always without relaxed
floating point: these keys reach code that a program compiles through
:func:`pyop2.compilation.load`, and ``log_level`` reaches op2rs's logger at ``op2.init``. The
run-time keys of op2-rs (``backend``, ``lazy_evaluation``) are op2rs's own configuration's
(``op2rs.configuration``), which ``op2.init(backend=...)`` sets."""

import os
from tempfile import gettempdir

from .exceptions import ConfigurationError

__all__ = ["Configuration", "configuration"]


def _env_value(env, typ, default):
    """The key's value from ``env`` if set, else ``default``: booleans are written ``0``/``1``
    in the environment (as today's PyOP2 reads them)."""
    conv = typ if isinstance(typ, type) else typ[0]
    raw = os.environ.get(env)
    if raw is None:
        return default
    try:
        return bool(int(raw)) if conv is bool else conv(raw)
    except ValueError:
        raise ValueError("Cannot convert value of environment variable %s to %r"
                         % (env, conv)) from None


class Configuration(dict):
    """PyOP2's configuration: ``configuration[key]``, ``configuration[key] = value`` (a known
    key's value must have its type, else :class:`ConfigurationError`), ``reset()``,
    ``reconfigure(**kwargs)`` (checked) and ``unsafe_reconfigure(**kwargs)`` (not checked).
    Unknown keys are kept as they are given.

    Keys: ``cc``, ``cxx``, ``ld`` (compilers, empty for the system's), ``cflags``,
    ``cxxflags``, ``ldflags`` (extra flags), ``simd_width``, ``debug`` (no optimisation),
    ``safe_math`` (no flag relaxing IEEE arithmetic), ``compute_kernel_flops``, ``type_check``,
    ``check_src_hashes``, ``log_level``, ``cache_dir``, ``node_local_compilation``,
    ``no_fork_available``, ``print_cache_info``, ``matnest``, ``block_sparsity``,
    ``spmd_strict``."""

    #: key: (environment variable, type or types, default)
    DEFAULTS = {
        "cc": ("PYOP2_CC", str, ""),
        "cxx": ("PYOP2_CXX", str, ""),
        "ld": ("PYOP2_LD", str, ""),
        "cflags": ("PYOP2_CFLAGS", str, ""),
        "cxxflags": ("PYOP2_CXXFLAGS", str, ""),
        "ldflags": ("PYOP2_LDFLAGS", str, ""),
        "simd_width": ("PYOP2_SIMD_WIDTH", int, 4),
        "debug": ("PYOP2_DEBUG", bool, False),
        "safe_math": ("PYOP2_SAFE_MATH", bool, False),
        "compute_kernel_flops": ("PYOP2_COMPUTE_KERNEL_FLOPS", bool, False),
        "type_check": ("PYOP2_TYPE_CHECK", bool, True),
        "check_src_hashes": ("PYOP2_CHECK_SRC_HASHES", bool, True),
        "log_level": ("PYOP2_LOG_LEVEL", (str, int), "WARNING"),
        "cache_dir": ("PYOP2_CACHE_DIR", str,
                      os.path.join(gettempdir(), "pyop2-cache-uid%d" % os.getuid())),
        "node_local_compilation": ("PYOP2_NODE_LOCAL_COMPILATION", bool, True),
        "no_fork_available": ("PYOP2_NO_FORK_AVAILABLE", bool, False),
        "print_cache_info": ("PYOP2_CACHE_INFO", bool, False),
        "matnest": ("PYOP2_MATNEST", bool, True),
        "block_sparsity": ("PYOP2_BLOCK_SPARSITY", bool, True),
        "spmd_strict": ("PYOP2_SPMD_STRICT", bool, False),
    }

    def __init__(self):
        defaults = {key: _env_value(env, typ, default)
                    for key, (env, typ, default) in self.DEFAULTS.items()}
        super().__init__(defaults)
        self._defaults = defaults
        self._set = set()

    def reset(self):
        """Back to the defaults read when this configuration was made."""
        self.update(self._defaults)
        self._set = set()

    def reconfigure(self, **kwargs):
        """Sets each keyword as a key, checked as ``configuration[key] = value`` is."""
        for key, value in kwargs.items():
            self[key] = value

    def unsafe_reconfigure(self, **kwargs):
        """Sets each keyword as a key without checking its type."""
        self.update(kwargs)

    def __setitem__(self, key, value):
        known = self.DEFAULTS.get(key)
        if known is not None:
            typ = known[1]
            # bool is an int in Python, but a flag is not a width and a width is not a flag.
            wrong = not isinstance(value, typ) or (typ is int and isinstance(value, bool))
            if wrong:
                raise ConfigurationError("Values for configuration key %s must be of type %r, "
                                         "not %r" % (key, typ, type(value)))
        self._set.add(key)
        super().__setitem__(key, value)


configuration = Configuration()


def __getattr__(name):
    # ``target``: the loopy target of today's generated code, made on first use so that loopy
    # is needed only by programs that use it.
    if name == "target":
        from loopy.target.c import CWithGNULibcTarget
        globals()["target"] = CWithGNULibcTarget()
        return globals()["target"]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
