"""PyOP2's ``op2.configuration``: the known keys, their environment variables and defaults,
checked by type when set; unknown keys are kept, as PyOP2 kept them."""

import os
import tempfile

from .exceptions import ConfigurationError

__all__ = ["Configuration", "configuration"]


class Configuration:
    """A mapping of configuration keys (``configuration[key]``, ``configuration[key] =
    value``, ``reset()``, ``reconfigure(**kwargs)``) whose defaults come from the environment
    (``PYOP2_BACKEND``, ``PYOP2_LAZY``, ...)."""

    # key: (environment variable, type, default)
    _KEYS = {
        "backend": ("PYOP2_BACKEND", str, "sequential"),
        "debug": ("PYOP2_DEBUG", int, 0),
        "log_level": ("PYOP2_LOG_LEVEL", (str, int), "WARNING"),
        "lazy_evaluation": ("PYOP2_LAZY", bool, True),
        "lazy_max_trace_length": ("PYOP2_MAX_TRACE_LENGTH", int, 0),
        "dump_gencode": ("PYOP2_DUMP_GENCODE", bool, False),
        "dump_gencode_path": ("PYOP2_DUMP_GENCODE_PATH", str,
                              os.path.join(tempfile.gettempdir(), "pyop2-gencode")),
        "compiler": ("PYOP2_BACKEND_COMPILER", str, ""),
        "simd_isa": ("PYOP2_SIMD_ISA", str, ""),
    }

    def __init__(self):
        self._set = set()
        self.reset()

    def reset(self):
        """Back to the defaults (read from the environment)."""
        self._values = {}
        self._set = set()
        for key, (env, typ, default) in self._KEYS.items():
            raw = os.environ.get(env)
            conv = typ[0] if isinstance(typ, tuple) else typ
            # As PyOP2 did: the type's constructor (so a bool is True for any non-empty string).
            self._values[key] = default if raw is None else conv(raw)

    def reconfigure(self, **kwargs):
        """Sets every keyword as a key."""
        for k, v in kwargs.items():
            self[k] = v

    def snapshot(self):
        """What :meth:`restore` puts back (``init`` undoes a failed start with it)."""
        return dict(self._values), set(self._set)

    def restore(self, snapshot):
        """The values of an earlier :meth:`snapshot`."""
        self._values, self._set = dict(snapshot[0]), set(snapshot[1])

    def __getitem__(self, key):
        return self._values[key]

    def __setitem__(self, key, value):
        known = self._KEYS.get(key)
        if known is not None:
            if not isinstance(value, known[1]) or (known[1] is int and isinstance(value, bool)):
                raise ConfigurationError("Values for configuration key %s must be of type %r"
                                         % (key, known[1]))
            if key == "backend" and "backend" in self._set and value != self._values[key]:
                raise ConfigurationError("The backend is already set")
            self._set.add(key)
        self._values[key] = value

    def __contains__(self, key):
        return key in self._values

    def __repr__(self):
        return "Configuration(%r)" % (self._values,)


configuration = Configuration()
