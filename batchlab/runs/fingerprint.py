"""What a checkpoint belongs to: the program ``fn`` traces to, the items, the settings."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import jax
import numpy as np


def digest(tree: Any) -> str:
    """SHA-256 of a pytree's structure and of every leaf's dtype, shape and bytes.

    Example:
      >>> import numpy as np
      >>> digest([np.zeros(3)]) == digest([np.zeros(3)]) != digest([np.ones(3)])
      True
    """
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    h = hashlib.sha256(str(treedef).encode())
    for leaf in map(np.asarray, leaves):
        h.update(f"{leaf.dtype.str}{leaf.shape}".encode())
        h.update(np.ascontiguousarray(leaf).tobytes())
    return h.hexdigest()


def fn_fingerprint(fn: Callable, spec: Any) -> str:
    """16 hex digits of SHA-256 of ``jax.make_jaxpr(fn)(spec)``: the program and the constants
    it closes over (weights, a global it reads), which is what ``jit`` compiles. Python that
    traces to the same program is the same run.

    Example:
      >>> import jax
      >>> x = jax.ShapeDtypeStruct((3,), "float32")
      >>> fn_fingerprint(lambda b: b * 2, x) == fn_fingerprint(lambda items: items * 2, x)
      True
      >>> fn_fingerprint(lambda b: b * 2, x) == fn_fingerprint(lambda b: b * 3, x)
      False
    """
    closed = jax.make_jaxpr(lambda x: fn(x))(spec)  # a new function: jit's trace cache would
    # keep the program of a global's old value
    return hashlib.sha256((str(closed.jaxpr) + digest(closed.consts)).encode()).hexdigest()[:16]
