"""What a checkpoint belongs to: fingerprints of functions, data and settings.

:func:`fn_fingerprint` hashes what decides a function's output: its code and constants,
defaults, closure values, the globals it reads, ``partial`` arguments, an object's attributes,
and a pytree node (an equinox or flax module) by its type, static fields and leaves.
:func:`fn_descriptions` puts the same parts in words, so a refusal can say what changed.
"""

from __future__ import annotations

import contextlib
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
_WEIGHTS = 64  # the leaves of a model named in a refusal's words, at most


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
    """``fn``'s closure variables and their values (None for a cell not yet assigned)."""
    out = []
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            out.append((var, cell.cell_contents))
        except ValueError:  # a cell not yet assigned
            out.append((var, None))
    return out


def _globals(fn: types.FunctionType) -> list[tuple[str, Any]]:
    """The globals ``fn``'s code (nested code too) names, and their values, by name."""
    names = sorted(_global_names(fn.__code__) & set(fn.__globals__))
    return [(v, fn.__globals__[v]) for v in names]


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
        for var, value in _globals(v):
            _hash(h, value, seen, depth + 1, f"global {var!r} read by {name}")
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
    """16 hex digits of SHA-256 of what decides ``fn``'s output; raises :class:`Unfingerprintable`
    for a value that cannot be hashed (an open file, a generator).

    Example:
      >>> fn_fingerprint(lambda b: b * 2) == fn_fingerprint(lambda b: b * 2)
      True
      >>> fn_fingerprint(lambda b: b * 2) == fn_fingerprint(lambda b: b * 3)
      False
    """
    h = hashlib.sha256()
    _hash(h, fn, set(), 0, "fn")
    return h.hexdigest()[:16]


def _reads(fn: Any) -> tuple[Any, list[tuple[str, Any]]]:
    """The plain function inside ``fn``'s wrappers (or None) and what it reads, by part name."""
    while getattr(fn, "__wrapped__", fn) is not fn and fn.__wrapped__ is not None:
        fn = fn.__wrapped__
    if not isinstance(fn, types.FunctionType):
        return None, []
    reads = [(f"fn closure variable {var!r}", value) for var, value in _cells(fn)]
    return fn, reads + [(f"fn global {var!r}", value) for var, value in _globals(fn)]


def fn_fingerprint_parts(fn: Any) -> dict[str, str]:
    """:func:`fn_fingerprint` split by source for a plain function (``"fn code"``, one entry per
    closure variable and global read); one ``"fn"`` entry for other callables."""
    inner, reads = _reads(fn)
    if inner is None:
        return {"fn": fn_fingerprint(fn)}
    seen, out = {id(inner)}, {}
    code = (inner.__code__, inner.__defaults__, inner.__kwdefaults__)
    for key, value in [("fn code", code), *reads]:
        h = hashlib.sha256()
        _hash(h, value, seen, 1, key[3:])
        out[key] = h.hexdigest()[:16]
    return out


def describe(value: Any, depth: int = 0) -> str:
    """A value in a few words for a refusal: its repr when short and plain, else its kind.

    Example:
      >>> describe(2.0), describe("run.log"), describe(np.zeros((3, 2), np.float32))
      ('2.0', "'run.log'", 'a float32 array of shape (3, 2)')
    """
    kind = type(value)
    if isinstance(value, _PLAIN):
        text = repr(value)
        return text if len(text) <= 80 else f"a {kind.__name__} of {len(value)} characters"
    if isinstance(value, _ARRAYS):
        return f"a {np.dtype(value.dtype).name} array of shape {tuple(np.shape(value))}"
    if isinstance(value, (tuple, list)) and len(value) <= 4 and depth < 2:
        inner = ", ".join(describe(v, depth + 1) for v in value)
        tuple_ = isinstance(value, tuple)
        text = f"({inner}{',' if len(value) == 1 else ''})" if tuple_ else f"[{inner}]"
        if len(text) <= 120:
            return text
    if isinstance(value, types.FunctionType) and depth < 2:
        reads = [f"{v}={describe(x, 2)}" for v, x in _globals(value) if isinstance(x, _PLAIN)]
        return f"function {value.__qualname__}" + (f" reading {', '.join(reads)}" if reads else "")
    if _is_node(value):  # a model: each weight by path, dtype, shape and a short hash
        leaves = jax.tree_util.tree_flatten_with_path(value)[0]
        weights = "; ".join(f"{jax.tree_util.keystr(p)} {_weight(x)}" for p, x in leaves[:_WEIGHTS])
        more = f"; {len(leaves) - _WEIGHTS} more" if len(leaves) > _WEIGHTS else ""
        return (
            f"a {kind.__qualname__} ({kind.__module__.split('.')[0]} pytree, {len(leaves)} "
            f"leaves: {weights}{more})"
        )
    return f"a {kind.__qualname__} object"


def _weight(leaf: Any) -> str:
    if isinstance(leaf, _ARRAYS):
        shape = ",".join(map(str, np.shape(leaf)))
        return f"{np.dtype(leaf.dtype).name}[{shape}] #{_sha256(np.asarray(leaf))[:8]}"
    return repr(leaf)[:40]


def weights_changed(was: str, now: str) -> str | None:
    """Which leaves of a model differ between two :func:`describe` texts (None if not models).

    Example:
      >>> a = "a Linear (flax pytree, 2 leaves: .b float32[2] #00; .w float32[3,2] #11)"
      >>> weights_changed(a, a.replace("#11", "#22"))
      '.w float32[3,2] has other values'
    """

    def leaves(text):
        _, sep, body = text.partition(" leaves: ")
        if not sep or not body.endswith(")"):
            return None
        return dict(item.split(" ", 1) for item in body[:-1].split("; ") if " " in item)

    old, new = leaves(was), leaves(now)
    if old is None or new is None:
        return None
    changes = []
    for path in [p for p in old if p in new and old[p] != new[p]]:
        a, b = old[path].split(" #")[0], new[path].split(" #")[0]
        changes.append(f"{path} {a} has other values" if a == b else f"{path} was {a}, is {b}")
    changes += [f"{p} is new" for p in new if p not in old and p != "more"]
    changes += [f"{p} is gone" for p in old if p not in new and p != "more"]
    if not changes:
        return None
    return "; ".join(changes[:4]) + (f"; and {len(changes) - 4} more" if len(changes) > 4 else "")


def fn_descriptions(fn: Any) -> dict[str, str]:
    """The parts of :func:`fn_fingerprint_parts`, in words (:func:`describe`); code stays unnamed."""
    inner, reads = _reads(fn)
    with contextlib.suppress(Exception):  # words are a courtesy: the fingerprint decides
        return {"fn": describe(fn)} if inner is None else {k: describe(v) for k, v in reads}
    return {}
