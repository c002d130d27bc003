"""Kernels the package writes around a user's kernel, for what op2-rs's loops do not take as
they are (a pointer handed through, layers counted from each column's own start): the wrapper
has the user's parameters as op2-rs read them (renamed ``pyop2_p<i>``, so that none can hide
the user's kernel's own name), some replaced or added, and calls the user's kernel with each
parameter or an expression in its place."""

import re

__all__ = ["params_of", "c_type", "write"]


def _param_name(text):
    """The name a parameter's declaration ``text`` declares (``double *x[3]`` -> ``x``)."""
    m = re.search(r"([A-Za-z_]\w*)\s*$", re.sub(r"\[[^\]]*\]", "", text))
    return m.group(1) if m else None


def params_of(kernel, why):
    """``kernel``'s parameters as ``(declaration, name)`` pairs, the declaration naming its
    parameter ``pyop2_p<i>`` (``NotImplementedError`` naming ``why`` when macros hide the
    parameters or one has no name)."""
    texts = kernel._native.param_texts()
    if texts is None:
        raise NotImplementedError("%s: the parameters of kernel %s are hidden by macros"
                                  % (why, kernel.name))
    out = []
    for i, text in enumerate(texts):
        name = _param_name(text)
        # The last occurrence of the name is the declarator's (types come before it); with
        # nothing before it, the "name" is the type of an unnamed parameter.
        at = ([m.start() for m in re.finditer(r"\b%s\b" % re.escape(name), text)][-1]
              if name is not None else 0)
        if name is None or not text[:at].strip():
            raise NotImplementedError("%s: parameter %d of kernel %s (%r) has no name"
                                      % (why, i, kernel.name, text))
        out.append((text[:at] + "pyop2_p%d" % i + text[at + len(name):], "pyop2_p%d" % i))
    return out


def c_type(declaration, name):
    """The C type ``declaration`` gives its parameter ``name`` (``Mat pyop2_p1`` -> ``Mat``)."""
    return declaration[:declaration.rfind(name)].strip()


def write(kernel, kernel_type, name, params, call, code=None, head="", ldargs=(), cflags=(),
          effects=False):
    """A kernel ``name`` (of ``kernel_type``) taking ``params`` (declarations) that calls
    ``kernel`` with ``call`` (expressions), after ``head`` and ``code`` (the user's source,
    ``kernel.code`` by default); compiled and linked as ``kernel`` is, with ``cflags`` and
    ``ldargs`` added; ``effects``: it acts on state outside its args (so does a wrapper of a
    kernel that does)."""
    effects = effects or getattr(kernel, "_effects", False)
    source = "%s#include <stdint.h>\n%s\nvoid %s(%s)\n{\n  %s(%s);\n}\n" % (
        head, kernel.code if code is None else code, name, ", ".join(params), kernel.name,
        ", ".join(call))
    return kernel_type._wrapping(
        source, name, kernel,
        tuple(getattr(kernel, "_ldargs", ())) + tuple(ldargs),
        tuple(getattr(kernel, "_cflags", ())) + tuple(cflags), effects)
