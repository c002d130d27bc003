"""Kernels the package writes around a user's kernel, for what op2-rs's loops do not take as
they are (a pointer handed through, layers counted from each column's own start): the wrapper
has the user's parameters as op2-rs read them, some replaced or added, and calls the user's
kernel with each parameter's name or an expression in its place."""

import re

__all__ = ["params_of", "write"]


def _param_name(text):
    """The name a parameter's declaration ``text`` declares (``double *x[3]`` -> ``x``)."""
    m = re.search(r"([A-Za-z_]\w*)\s*$", re.sub(r"\[[^\]]*\]", "", text))
    return m.group(1) if m else None


def params_of(kernel, why):
    """``kernel``'s parameters as ``(text, name)`` pairs, as op2-rs read them from its source
    (``NotImplementedError`` naming ``why`` when macros hide them)."""
    texts = kernel._native.param_texts()
    names = [_param_name(t) for t in texts] if texts is not None else None
    if names is None or None in names:
        raise NotImplementedError("%s: the parameters of kernel %s are hidden by macros"
                                  % (why, kernel.name))
    return list(zip(texts, names))


def write(kernel, kernel_type, name, params, call, code=None, head="", ldargs=(), cflags=(),
          effects=False):
    """A kernel ``name`` (of ``kernel_type``) taking ``params`` (declarations) that calls
    ``kernel`` with ``call`` (expressions), after ``head`` and ``code`` (the user's source,
    ``kernel.code`` by default); compiled and linked as ``kernel`` is, with ``cflags`` and
    ``ldargs`` added; ``effects``: it acts on state outside its args."""
    source = "%s#include <stdint.h>\n%s\nvoid %s(%s)\n{\n  %s(%s);\n}\n" % (
        head, kernel.code if code is None else code, name, ", ".join(params), kernel.name,
        ", ".join(call))
    return kernel_type._wrapping(
        source, name, kernel,
        tuple(getattr(kernel, "_ldargs", ())) + tuple(ldargs),
        tuple(getattr(kernel, "_cflags", ())) + tuple(cflags), effects)
