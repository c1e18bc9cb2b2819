"""Input checks that run before anything is traced.

Errors name the argument in backticks, show what was received and say how
to fix it (the style of equinox and chex). Bad values raise ``ValueError``,
bad types ``TypeError``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

_ARRAY_TYPES = (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct)


def check_callable(fn: Any, name: str = "fn") -> Callable:
    """Raises ``TypeError`` unless ``fn`` is callable."""
    if not callable(fn):
        raise TypeError(
            f"`{name}` must be a function (callable), got {type(fn).__name__} {fn!r:.60}. "
            f"Pass the function itself, e.g. measure(my_fn, x), not its result measure(my_fn(x))."
        )
    return fn


def _describe(leaf: Any) -> str:
    text = repr(leaf)
    return f"{type(leaf).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def check_array_tree(tree: Any, name: str = "args") -> None:
    """Raises ``TypeError`` if any leaf of ``tree`` is not an array or a number.

    Leaves may be ``jax.Array``, ``numpy.ndarray``, numpy scalars, Python
    numbers, or ``jax.ShapeDtypeStruct`` (shape-only, for compile-only
    analysis). Anything else (a string, a list of ragged lists, ``None``
    where an array is expected) would fail deep inside tracing, so it is
    caught here with the path to the bad leaf.
    """
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: x is None)
    for path, leaf in leaves:
        if leaf is None:
            continue  # None is an empty pytree node: fine for JAX
        if isinstance(leaf, (*_ARRAY_TYPES, numbers.Number)):
            continue
        where = f"{name}{jax.tree_util.keystr(path)}"
        raise TypeError(
            f"`{where}` is a {_describe(leaf)}; JAX can only trace arrays, numbers and "
            f"pytrees (tuples, lists, dicts) of them. Convert it with jnp.asarray(...), or, "
            f"if it is a configuration value, mark it static: static_argnums=(i,) or "
            f"static_argnames=('name',)."
        )


def check_positive_int(value: Any, name: str, *, allow_none: bool = False) -> int | None:
    """Returns ``value`` if it is a positive int (or ``None`` when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be a positive int, got {type(value).__name__} {value!r}.")
    if value < 1:
        raise ValueError(f"`{name}` must be at least 1, got {name}={value}.")
    return int(value)


def check_positive_float(value: Any, name: str) -> float:
    """Returns ``value`` as a float if it is a positive real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a number, got {type(value).__name__} {value!r}.")
    if not value > 0:
        raise ValueError(f"`{name}` must be positive, got {name}={value}.")
    return float(value)
