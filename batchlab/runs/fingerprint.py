"""What a checkpoint belongs to: fingerprints of functions, data and settings.

:func:`fn_fingerprint` hashes what decides a function's output: bytecode and constants,
nested code, defaults, closure values, the globals it reads, ``functools.partial``
arguments, callable objects' attributes, and a pytree node (an ``equinox.Module``, a flax
module) as its type, static fields and leaves (arrays by their bytes), so ``lambda b: b * 3``
never resumes a run of ``lambda b: b * 2`` and other weights never resume a model's run.
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


def _sha256(array: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update(f"{array.dtype.str}{array.shape}".encode())
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
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_PLAIN = (type(None), bool, int, float, complex, str, bytes)
# callables from these packages are named, not hashed (their code is the library's); a pytree
# node from them (an equinox layer) is still hashed by its leaves and static fields
_LIBRARIES = ("jax", "jaxlib", "numpy", "builtins", "math", "scipy", "equinox", "optax", "flax")


def _is_pytree_node(value: Any) -> bool:
    """A registered pytree node other than the containers hashed item by item."""
    if isinstance(value, (tuple, list, dict, type(None), type)):
        return False
    try:  # a node without children (flax nnx's PytreeState) is a node, not a leaf
        leaves = jax.tree_util.tree_leaves(value)
    except Exception:
        return False
    return not (len(leaves) == 1 and leaves[0] is value)


def _hash_pytree(h, value: Any, seen: set, depth: int, where: str) -> None:
    """One pytree node: its type, static node data, then each child (arrays by bytes)."""
    children, treedef = jax.tree_util.tree_flatten(value, is_leaf=lambda x: x is not value)
    kind = type(value)
    h.update(f"pytree:{kind.__module__}.{kind.__qualname__}[{len(children)}];".encode())
    node = treedef.node_data()
    if node is not None:
        _hash_value(h, node[1], seen, depth + 1, f"{where} static fields")
    for i, child in enumerate(children):
        _hash_value(h, child, seen, depth + 1, f"{where} leaf {i}")
    call = getattr(kind, "__call__", None)  # noqa: B004
    if isinstance(call, types.FunctionType) and not _is_library(call):
        _hash_callable(h, call, seen, depth + 1, f"{where}.__call__")


def _is_library(fn: Any) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return module.split(".")[0] in _LIBRARIES


class Unfingerprintable(Exception):
    """``fn`` holds a value whose content cannot be hashed (it names the value)."""


def _hash_value(h, value: Any, seen: set, depth: int, where: str) -> None:
    if isinstance(value, _PLAIN):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, (np.ndarray, np.generic, jax.Array)):
        h.update(_sha256(np.asarray(value)).encode())
    elif type(value) is object:  # a bare sentinel (a default meaning "not given")
        h.update(b"sentinel;")
    elif depth <= 12 and _is_pytree_node(value):
        if id(value) in seen:
            h.update(b"<cycle>")
            return
        seen.add(id(value))
        _hash_pytree(h, value, seen, depth, where)
    elif isinstance(value, (tuple, list, frozenset, set)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        h.update(f"{type(value).__name__}[{len(items)}]".encode())
        for i, v in enumerate(items):
            _hash_value(h, v, seen, depth, f"{where}[{i}]")
    elif isinstance(value, dict):
        h.update(f"dict[{len(value)}]".encode())
        for k in sorted(value, key=repr):
            _hash_value(h, k, seen, depth, where)
            _hash_value(h, value[k], seen, depth, f"{where}[{k!r}]")
    elif isinstance(value, types.ModuleType):
        h.update(f"module:{value.__name__};".encode())
    elif isinstance(value, type):
        h.update(f"class:{value.__module__}.{value.__qualname__};".encode())
    elif isinstance(value, types.CodeType):
        _hash_code(h, value, seen, depth, where)
    elif callable(value):
        _hash_callable(h, value, seen, depth + 1, where)
    else:
        state = getattr(value, "__dict__", None)
        if not isinstance(state, dict) or depth > 6:
            raise Unfingerprintable(f"{where} is a {type(value).__name__}")
        if id(value) in seen:
            h.update(b"<cycle>")
            return
        seen.add(id(value))
        h.update(f"object:{type(value).__module__}.{type(value).__qualname__};".encode())
        _hash_value(h, state, seen, depth + 1, f"{where} attributes")


def _hash_code(h, code: types.CodeType, seen: set, depth: int, where: str) -> None:
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        _hash_value(h, const, seen, depth, f"{where} constant")


def _hash_callable(h, fn: Any, seen: set, depth: int, where: str) -> None:
    if id(fn) in seen:
        h.update(b"<recursion>")
        return
    seen.add(id(fn))
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    if depth <= 12 and _is_pytree_node(fn):  # an equinox module as fn: weights and static fields
        _hash_pytree(h, fn, seen, depth, where)
        return
    if depth > 6 or _is_library(fn):
        h.update(f"lib:{module}.{name};".encode())  # a library function: its name is its identity
        if isinstance(fn, types.FunctionType) and depth <= 6:
            # ...but a closure a library built (optax.adam(1e-3)'s update) holds its settings
            for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
                with contextlib.suppress(ValueError):
                    _hash_value(h, cell.cell_contents, seen, depth + 1, f"{where} closure {var!r}")
            _hash_value(h, fn.__defaults__, seen, depth + 1, f"{where} defaults")
        return
    if isinstance(fn, functools.partial):
        h.update(b"partial")
        _hash_callable(h, fn.func, seen, depth, where)
        _hash_value(h, fn.args, seen, depth, f"{where} partial args")
        _hash_value(h, fn.keywords, seen, depth, f"{where} partial keywords")
        return
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is not None and wrapped is not fn:  # jax.jit, functools.wraps
        h.update(f"wrapper:{type(fn).__name__};".encode())
        _hash_callable(h, wrapped, seen, depth, where)
        return
    if isinstance(fn, types.MethodType):
        _hash_callable(h, fn.__func__, seen, depth, where)
        _hash_value(h, fn.__self__, seen, depth, f"{where}.__self__")
        return
    if isinstance(fn, types.FunctionType):
        h.update(f"fn:{name};".encode())
        _hash_code(h, fn.__code__, seen, depth, f"{where}")
        _hash_value(h, fn.__defaults__, seen, depth, f"{where} defaults")
        _hash_value(h, fn.__kwdefaults__, seen, depth, f"{where} keyword defaults")
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell (not yet assigned)
                content = None
            _hash_value(h, content, seen, depth, f"closure variable {var!r} of {name}")
        names = _global_names(fn.__code__)
        for var in sorted(names):
            if var in fn.__globals__:
                _hash_value(h, fn.__globals__[var], seen, depth, f"global {var!r} read by {name}")
        return
    if isinstance(fn, types.BuiltinFunctionType):
        h.update(f"builtin:{module}.{name};".encode())
        return
    # a callable object: its class's __call__ and its attributes
    call = type(fn).__dict__.get("__call__") or getattr(type(fn), "__call__", None)  # noqa: B004
    h.update(f"object:{type(fn).__module__}.{type(fn).__qualname__};".encode())
    if isinstance(call, types.FunctionType):
        _hash_callable(h, call, seen, depth, f"{where}.__call__")
    state = getattr(fn, "__dict__", None)
    if state is None:
        raise Unfingerprintable(
            f"{where} is a {type(fn).__name__} object without attributes to hash"
        )
    _hash_value(h, state, seen, depth, f"attributes of {where}")


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _reads(fn: Any) -> tuple[Any, list[tuple[str, Any]]]:
    """The plain function inside ``fn``'s wrappers (or None) and what it reads, by part name."""
    inner = fn
    while getattr(inner, "__wrapped__", None) is not None and inner.__wrapped__ is not inner:
        inner = inner.__wrapped__
    if not isinstance(inner, types.FunctionType):
        return None, []
    reads = []
    for var, cell in zip(inner.__code__.co_freevars, inner.__closure__ or (), strict=False):
        try:
            reads.append((f"fn closure variable {var!r}", cell.cell_contents))
        except ValueError:  # an empty cell (not yet assigned)
            reads.append((f"fn closure variable {var!r}", None))
    for var in sorted(_global_names(inner.__code__)):
        if var in inner.__globals__:
            reads.append((f"fn global {var!r}", inner.__globals__[var]))
    return inner, reads


def fn_fingerprint_parts(fn: Any) -> dict[str, str]:
    """:func:`fn_fingerprint` split by source (``"fn code"``, one entry per closure variable and
    global read) for a plain function; one ``"fn"`` entry for other callables."""
    inner, reads = _reads(fn)
    if inner is None:
        return {"fn": fn_fingerprint(fn)}
    seen = {id(inner)}
    h = hashlib.sha256()
    _hash_code(h, inner.__code__, seen, 1, "fn")
    _hash_value(h, (inner.__defaults__, inner.__kwdefaults__), seen, 1, "fn defaults")
    out = {"fn code": h.hexdigest()[:16]}
    for key, value in reads:
        h = hashlib.sha256()
        _hash_value(h, value, seen, 1, key[3:])
        out[key] = h.hexdigest()[:16]
    return out


def describe(value: Any, depth: int = 0) -> str:
    """A value in a few words for a refusal: its repr when short and plain, else its kind.

    Example:
      >>> describe(2.0), describe("run.log"), describe(np.zeros((3, 2), np.float32))
      ('2.0', "'run.log'", 'a float32 array of shape (3, 2)')
    """
    if isinstance(value, _PLAIN):
        text = repr(value)
        return text if len(text) <= 80 else f"a {type(value).__name__} of {len(value)} characters"
    if isinstance(value, (np.ndarray, np.generic, jax.Array)):
        return f"a {np.dtype(value.dtype).name} array of shape {tuple(np.shape(value))}"
    if isinstance(value, (tuple, list)) and len(value) <= 4 and depth < 2:
        inner = ", ".join(describe(v, depth + 1) for v in value)
        text = (
            f"({inner}{',' if len(value) == 1 else ''})"
            if isinstance(value, tuple)
            else f"[{inner}]"
        )
        if len(text) <= 120:
            return text
    if isinstance(value, types.FunctionType) and depth < 2:
        name = value.__qualname__
        reads = [
            f"{var}={describe(value.__globals__[var], 2)}"
            for var in sorted(_global_names(value.__code__))
            if var in value.__globals__ and isinstance(value.__globals__[var], _PLAIN)
        ]
        return f"function {name}" + (f" reading {', '.join(reads)}" if reads else "")
    kind = type(value)
    if _is_pytree_node(value):  # a model: each weight by path, dtype, shape and a short hash
        leaves = jax.tree_util.tree_flatten_with_path(value)[0]
        weights = "; ".join(
            f"{jax.tree_util.keystr(path)} {_weight(leaf)}" for path, leaf in leaves[:_WEIGHTS]
        )
        more = f"; {len(leaves) - _WEIGHTS} more" if len(leaves) > _WEIGHTS else ""
        return (
            f"a {kind.__qualname__} ({kind.__module__.split('.')[0]} pytree, {len(leaves)} "
            f"leaves: {weights}{more})"
        )
    return f"a {kind.__qualname__} object"


_WEIGHTS = 64  # the leaves of a model named in a refusal's words, at most


def _weight(leaf: Any) -> str:
    if isinstance(leaf, (np.ndarray, np.generic, jax.Array)):
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
    return {"fn": describe(fn)} if inner is None else {k: describe(v) for k, v in reads}


def fn_fingerprint(fn: Any) -> str:
    """A SHA-256 (16 hex digits) of what decides ``fn``'s output; raises
    :class:`Unfingerprintable` for a value that cannot be hashed (an open file, a generator).

    Example:
      >>> fn_fingerprint(lambda b: b * 2) == fn_fingerprint(lambda b: b * 2)
      True
      >>> fn_fingerprint(lambda b: b * 2) == fn_fingerprint(lambda b: b * 3)
      False
    """
    h = hashlib.sha256()
    _hash_callable(h, fn, set(), 0, "fn")
    return h.hexdigest()[:16]


__all__ = [
    "Unfingerprintable",
    "describe",
    "digest",
    "fingerprint",
    "fn_descriptions",
    "fn_fingerprint",
    "fn_fingerprint_parts",
    "weights_changed",
]
