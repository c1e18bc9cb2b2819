"""Input checks that run before anything is traced: each names the argument in backticks,
shows what was received and says how to fix it."""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import psutil

ARRAY_TYPES = (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct)


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _iterable(v: Any) -> bool:
    return hasattr(v, "__iter__") and not isinstance(v, (str, bytes))


def check_callable(fn: Any, name: str = "fn") -> Callable:
    """Raises ``TypeError`` unless ``fn`` is callable."""
    if not callable(fn):
        raise TypeError(
            f"`{name}` must be a function (callable), got {type(fn).__name__} {fn!r:.60}. "
            f"Pass the function itself, e.g. measure(my_fn, x), not its result measure(my_fn(x))."
        )
    return fn


def check_array_tree(tree: Any, name: str = "args") -> None:
    """Raises ``TypeError``, with its path, at a leaf that is not an array, a number or None."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: x is None)
    for path, leaf in leaves:
        if leaf is None or isinstance(leaf, (*ARRAY_TYPES, numbers.Number)):
            continue
        text = repr(leaf)
        got = f"{type(leaf).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"
        raise TypeError(
            f"`{name}{jax.tree_util.keystr(path)}` is a {got}; JAX can only trace arrays, numbers "
            f"and pytrees (tuples, lists, dicts) of them. Convert it with jnp.asarray(...), or, "
            f"if it is a configuration value, mark it static: static_argnums=(i,) or "
            f"static_argnames=('name',)."
        )


def check_int(value: Any, name: str, minimum: int = 0, *, allow_none: bool = False) -> int | None:
    """Returns ``value`` if it is an int of at least ``minimum`` (or ``None`` when allowed)."""
    if value is None and allow_none:
        return None
    if not _is_int(value):
        kind = "a positive int" if minimum == 1 else "an int"
        raise TypeError(f"`{name}` must be {kind}, got {type(value).__name__} {value!r}.")
    if value < minimum:
        raise ValueError(f"`{name}` must be at least {minimum}, got {name}={value}.")
    return int(value)


def check_positive_int(value: Any, name: str, *, allow_none: bool = False) -> int | None:
    """Returns ``value`` if it is a positive int (or ``None`` when allowed)."""
    return check_int(value, name, 1, allow_none=allow_none)


def check_positive_float(value: Any, name: str) -> float:
    """Returns ``value`` as a float if it is a positive real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a number, got {type(value).__name__} {value!r}.")
    if not value > 0:
        raise ValueError(f"`{name}` must be positive, got {name}={value}.")
    return float(value)


def check_bool(value: Any, name: str) -> bool:
    """Returns ``value`` if it is True or False (numpy bools too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be True or False, got {type(value).__name__} {value!r}.")
    return bool(value)


def check_choice(value: Any, name: str, choices: Any) -> Any:
    """Returns ``value`` if it is one of ``choices`` (strings)."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"`{name}` must be one of {list(choices)}, got {name}={value!r}.")
    return value


def check_positive_ints(values: Any, name: str) -> list[int]:
    """A non-empty sequence of positive ints (e.g. batch sizes)."""
    items = list(values) if _iterable(values) else None
    if not items or not all(_is_int(v) and v >= 1 for v in items):
        wrong_type = items is None or not all(map(_is_int, items))
        raise (TypeError if wrong_type else ValueError)(
            f"`{name}` must be a non-empty list of positive ints, e.g. [1, 2, 4], got "
            f"{values!r:.60}."
        )
    return [int(v) for v in items]


def check_numeric_array(value: Any, name: str) -> np.ndarray | jax.Array:
    """Raises ``TypeError`` unless ``value`` is (convertible to) a numeric or bool array."""
    if isinstance(value, jax.Array):
        return value
    try:
        kind = np.asarray(value).dtype
    except (ValueError, TypeError):
        kind = None
    numeric = kind is not None and (kind.kind in "biufc" or kind.name == "bfloat16")
    if not numeric or value is None or isinstance(value, (str, bytes)):
        raise TypeError(
            f"`{name}` must be a numeric array, got {type(value).__name__} {value!r:.40}"
            + (f" (dtype {kind})." if kind is not None else ".")
        )
    return value


def check_argnums(argnums: Any, n_args: int, name: str) -> tuple[int, ...]:
    """``donate_argnums`` / ``static_argnums``: ints naming given positional arguments."""
    nums = (argnums,) if isinstance(argnums, numbers.Integral) else argnums
    nums = tuple(nums) if _iterable(nums) else (None,)
    if not all(map(_is_int, nums)):
        raise TypeError(f"`{name}` must hold ints (an int or a tuple of ints), got {argnums!r}.")
    for n in nums:
        if not -n_args <= n < n_args:
            raise ValueError(
                f"`{name}` names argument {n} but only {n_args} positional argument(s) were "
                f"given (valid: 0..{n_args - 1})."
            )
    return nums


def check_dtype(dtype: Any, name: str = "dtype") -> np.dtype | None:
    """``None`` or something numpy reads as a dtype; a misspelling gets the closest name."""
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError as e:
        text = dtype.lower() if isinstance(dtype, str) else ""
        names = [n for n in np.sctypeDict if isinstance(n, str)]
        close = difflib.get_close_matches(text, [*names, "bfloat16"], n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise TypeError(
            f"`{name}` must be a dtype (e.g. np.float32, 'int32'), got {dtype!r}: {e}.{hint}"
        ) from None


def check_lossless_cast(arrays: Any, dtype: np.dtype, name: str = "dtype") -> None:
    """Raises ``ValueError`` if casting any of ``arrays`` to ``dtype`` would change a value
    (numpy's ``astype`` truncates 1.5 -> 1 and wraps 300 -> uint8 silently)."""
    for i, a in enumerate(arrays):
        src = np.asarray(a)
        if src.size == 0 or src.dtype.kind not in "biufc":
            continue
        with np.errstate(all="ignore"):
            cast = src.astype(dtype)
            back = cast.astype(src.dtype)
        if not np.array_equal(back, src, equal_nan=src.dtype.kind in "fc"):
            j = int(np.flatnonzero((back != src).ravel())[0])
            raise ValueError(
                f"`{name}`={np.dtype(dtype).name} would change values: item {i} holds "
                f"{src.ravel()[j].item()!r} ({src.dtype}), stored as {cast.ravel()[j].item()!r}. "
                "Pass a dtype that holds the data, or cast the items first (np.astype truncates "
                "and wraps)."
            )


def check_fits_memory(n_bytes: int, name: str, what: str) -> None:
    """Raises ``ValueError`` when ``n_bytes`` would not fit the host's available memory."""
    available = psutil.virtual_memory().available
    if n_bytes > available:
        raise ValueError(
            f"`{name}` asks for {what}: {n_bytes / 2**30:.1f} GiB, more than the "
            f"{available / 2**30:.1f} GiB of memory available; pick a smaller `{name}`."
        )
