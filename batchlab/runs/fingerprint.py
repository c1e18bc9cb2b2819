"""What a checkpoint belongs to: fingerprints of functions, data and settings."""

from __future__ import annotations

import functools
import hashlib
import json
import types
from typing import Any

import jax
import numpy as np

_ARRAYS = (np.ndarray, np.generic, jax.Array)
_PLAIN = (type(None), bool, int, float, complex, str, bytes)
# callables from these packages are named, not hashed (their code is the library's); a pytree
# node from them (an equinox layer) is still hashed by its leaves and static fields
_LIBRARIES = ("jax", "jaxlib", "numpy", "builtins", "math", "scipy", "equinox", "optax", "flax")


class Unfingerprintable(Exception):
    """``fn`` holds a value whose content cannot be hashed (it names the value)."""


def _sha256(array: np.ndarray) -> str:
    h = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def digest(tree: Any) -> str:
    """SHA-256 of a pytree's structure and of every leaf's dtype, shape and bytes.

    Example:
      >>> import numpy as np
      >>> digest([np.zeros(3)]) == digest([np.zeros(3)]) != digest([np.ones(3)])
      True
    """
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    h = hashlib.sha256(str(treedef).encode())
    for leaf in leaves:
        h.update(_sha256(np.asarray(leaf)).encode())
    return h.hexdigest()


def fingerprint(parts: dict[str, Any]) -> str:
    """A short, stable hash of JSON-able ``parts`` (what a checkpoint belongs to)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _is_node(value: Any) -> bool:
    """A registered pytree node other than the containers hashed item by item."""
    if isinstance(value, (tuple, list, dict, type(None), type)):
        return False
    try:  # a node without children (flax nnx's PytreeState) is a node, not a leaf
        leaves = jax.tree_util.tree_leaves(value)
    except Exception:
        return False
    return not (len(leaves) == 1 and leaves[0] is value)


def _is_library(fn: Any) -> bool:
    return (getattr(fn, "__module__", None) or "").split(".")[0] in _LIBRARIES


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _cells(fn: types.FunctionType) -> list[tuple[str, Any]]:
    """``fn``'s closure variables and their values."""
    out = []
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            out.append((var, cell.cell_contents))
        except ValueError:  # a cell not yet assigned
            out.append((var, None))
    return out


def _hash(h, v: Any, seen: set, depth: int, where: str) -> None:
    """Feeds what decides ``v`` (a value or a callable) into ``h``; ``where`` names it."""
    put = lambda text: h.update(text.encode())  # noqa: E731
    kind = type(v)
    if isinstance(v, _PLAIN):
        return put(f"{kind.__name__}:{v!r};")
    if isinstance(v, _ARRAYS):
        return put(_sha256(np.asarray(v)))
    if kind is object:  # a bare sentinel (a default meaning "not given")
        return put("sentinel;")
    if isinstance(v, dict):
        put(f"dict[{len(v)}]")
        for k in sorted(v, key=repr):
            _hash(h, k, seen, depth, where)
            _hash(h, v[k], seen, depth, f"{where}[{k!r}]")
        return None
    if isinstance(v, (tuple, list, frozenset, set)):
        items = sorted(v, key=repr) if isinstance(v, (set, frozenset)) else v
        put(f"{kind.__name__}[{len(items)}]")
        for i, x in enumerate(items):
            _hash(h, x, seen, depth, f"{where}[{i}]")
        return None
    if isinstance(v, types.ModuleType):
        return put(f"module:{v.__name__};")
    if isinstance(v, type):
        return put(f"class:{v.__module__}.{v.__qualname__};")
    if isinstance(v, types.CodeType):
        h.update(v.co_code)
        put(repr(v.co_names))
        for const in v.co_consts:
            _hash(h, const, seen, depth, f"{where} constant")
        return None
    if id(v) in seen:
        return put("<cycle>")
    seen.add(id(v))
    name = getattr(v, "__qualname__", None) or kind.__qualname__
    if depth <= 12 and _is_node(v):  # a model: type, static fields, leaves, its own __call__
        children, treedef = jax.tree_util.tree_flatten(v, is_leaf=lambda x: x is not v)
        put(f"pytree:{kind.__module__}.{kind.__qualname__}[{len(children)}];")
        node = treedef.node_data()
        if node is not None:
            _hash(h, node[1], seen, depth + 1, f"{where} static fields")
        for i, child in enumerate(children):
            _hash(h, child, seen, depth + 1, f"{where} leaf {i}")
        call = getattr(kind, "__call__", None)  # noqa: B004
        if isinstance(call, types.FunctionType) and not _is_library(call):
            _hash(h, call, seen, depth + 1, f"{where}.__call__")
    elif not callable(v):
        state = getattr(v, "__dict__", None)
        if not isinstance(state, dict) or depth > 6:
            raise Unfingerprintable(f"{where} is a {kind.__name__}")
        put(f"object:{kind.__module__}.{kind.__qualname__};")
        _hash(h, state, seen, depth + 1, f"{where} attributes")
    elif depth > 6 or _is_library(v):
        put(f"lib:{getattr(v, '__module__', None) or ''}.{name};")  # its name is its identity
        if isinstance(v, types.FunctionType) and depth <= 6:
            # ...but a closure a library built (optax.adam(1e-3)'s update) holds its settings
            for var, value in _cells(v):
                _hash(h, value, seen, depth + 1, f"{where} closure {var!r}")
            _hash(h, v.__defaults__, seen, depth + 1, f"{where} defaults")
    elif isinstance(v, functools.partial):
        put("partial")
        _hash(h, (v.func, v.args, v.keywords), seen, depth + 1, f"{where} partial")
    elif getattr(v, "__wrapped__", v) is not v and v.__wrapped__ is not None:  # jax.jit, wraps
        put(f"wrapper:{kind.__name__};")
        _hash(h, v.__wrapped__, seen, depth + 1, where)
    elif isinstance(v, types.MethodType):
        _hash(h, (v.__func__, v.__self__), seen, depth + 1, f"{where}.__self__")
    elif isinstance(v, types.FunctionType):
        put(f"fn:{name};")
        _hash(h, (v.__code__, v.__defaults__, v.__kwdefaults__), seen, depth, f"{where}")
        for var, value in _cells(v):
            _hash(h, value, seen, depth + 1, f"closure variable {var!r} of {name}")
        for var in sorted(_global_names(v.__code__) & set(v.__globals__)):
            _hash(h, v.__globals__[var], seen, depth + 1, f"global {var!r} read by {name}")
    elif isinstance(v, types.BuiltinFunctionType):
        put(f"builtin:{getattr(v, '__module__', None) or ''}.{name};")
    else:  # a callable object: its class's __call__ and its attributes
        put(f"object:{kind.__module__}.{kind.__qualname__};")
        call = getattr(kind, "__call__", None)  # noqa: B004
        if isinstance(call, types.FunctionType):
            _hash(h, call, seen, depth + 1, f"{where}.__call__")
        if getattr(v, "__dict__", None) is None:
            raise Unfingerprintable(
                f"{where} is a {kind.__name__} object without attributes to hash"
            )
        _hash(h, v.__dict__, seen, depth + 1, f"attributes of {where}")
    return None


def fn_fingerprint(fn: Any) -> str:
    """16 hex digits of SHA-256 of what decides ``fn``'s output (code, constants, defaults,
    closures, globals it reads, attributes, a model's leaves); raises :class:`Unfingerprintable`
    for a value that cannot be hashed (an open file).

    Example:
      >>> fn_fingerprint(lambda b: b * 2) == fn_fingerprint(lambda b: b * 2)
      True
      >>> fn_fingerprint(lambda b: b * 2) == fn_fingerprint(lambda b: b * 3)
      False
    """
    h = hashlib.sha256()
    _hash(h, fn, set(), 0, "fn")
    return h.hexdigest()[:16]
