"""Checkpoints that are written atomically and never silently reused.

A long batch run saves what it finished after every batch, so a crash, a
Ctrl-C or a killed kernel loses at most one batch. Three rules keep a
checkpoint trustworthy:

* **Atomic write.** The file is written under a temporary name in the same
  folder, flushed to disk, then renamed over the old one (``os.replace``):
  a reader sees the old checkpoint or the new one, never half of one.
* **No pickle.** Arrays go into ``np.savez``; everything else is a JSON
  manifest stored inside the same ``.npz`` (as bytes), read back with
  ``allow_pickle=False``. Loading a checkpoint cannot run code.
* **Fingerprint.** The manifest records what the results belong to (the
  function, the items, the batch settings) and a SHA-256 of every array.
  A checkpoint from another run, or a damaged one, raises
  :class:`CheckpointError` with what differs, instead of being reused.

:func:`batchlab.run_batches` writes a :class:`Journal`: one append-only file,
a header record (the fingerprint), then one record per finished batch (its
outputs and the run's small state), each closed by a SHA-256 of the record
and flushed with ``fsync``. Each batch writes only its own bytes, so the
total I/O grows with n, not n² (``benchmarks/checkpoint_io.py``). A record
cut short by a kill is the batch in flight: it is dropped (and cut off the
file) on resume; a complete record whose hash differs is damage and refused.

:func:`fn_fingerprint` identifies a function by what decides its output: its
bytecode and constants, nested code, default arguments, closure values, the
globals it reads, ``functools.partial`` arguments and callable objects'
attributes (arrays by their bytes), so ``lambda b: b * 3`` never resumes a
run of ``lambda b: b * 2``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import struct
import tempfile
import types
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

FORMAT = "batchlab-checkpoint"
VERSION = 1
_MANIFEST = "__manifest__"


class CheckpointError(ValueError):
    """A checkpoint that is corrupt, or that belongs to a different run."""


def _atomic_write(path: Path, write) -> None:
    """Writes ``path`` through a temp file in the same folder, fsynced, then renamed over it.

    A kill mid-write leaves the old file intact (and a ``.tmp`` that the next start removes);
    any error removes the temp file and is re-raised.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: its arrays, its JSON state and what it belongs to."""

    path: str
    arrays: dict[str, np.ndarray]
    state: dict[str, Any]
    parts: dict[str, Any]

    def __repr__(self) -> str:
        names = ", ".join(f"{k}{tuple(v.shape)}" for k, v in self.arrays.items())
        return f"Checkpoint({self.path!r}: arrays {names}; state keys {sorted(self.state)})"


def save_checkpoint(
    path: str | os.PathLike,
    arrays: dict[str, np.ndarray],
    state: dict[str, Any],
    parts: dict[str, Any],
) -> None:
    """Writes ``arrays`` and a JSON manifest to ``path`` atomically.

    Args:
      path: the checkpoint file (``.npz``); its folder must exist.
      arrays: name -> array; names must not start with ``__``.
      state: JSON-able progress (positions, failures, logs).
      parts: JSON-able description of the run; its :func:`fingerprint` is
        checked by :func:`load_checkpoint`.

    Example:
      >>> import numpy as np, tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "run.npz")
      >>> save_checkpoint(p, {"out": np.arange(3)}, {"next": 3}, {"fn": "f"})
      >>> load_checkpoint(p, {"fn": "f"}).state
      {'next': 3}
    """
    path = Path(path)
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    for name, a in arrays.items():
        if name.startswith("__") or a.dtype == object:
            raise ValueError(
                f"checkpoint array {name!r} must be a numeric array with a plain name, got {a.dtype}."
            )
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "fingerprint": fingerprint(parts),
        "parts": parts,
        "state": state,
        "arrays": {k: _sha256(v) for k, v in arrays.items()},
        "state_sha256": _state_hash(state),
    }
    blob = np.frombuffer(json.dumps(manifest, sort_keys=True, default=str).encode(), dtype=np.uint8)
    _atomic_write(path, lambda f: np.savez(f, **arrays, **{_MANIFEST: blob}))


def _state_hash(state: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()


def _corrupt(path: Path, why: str) -> CheckpointError:
    return CheckpointError(
        f"`checkpoint` file {str(path)!r} is corrupt or not a batchlab checkpoint ({why}); it is "
        f"not reused. Delete it to start over, or pass another `checkpoint` path."
    )


def load_checkpoint(path: str | os.PathLike, parts: dict[str, Any]) -> Checkpoint | None:
    """Reads a checkpoint written by :func:`save_checkpoint`, or ``None`` if there is none.

    Args:
      path: the checkpoint file.
      parts: the description of the current run; it must equal the one the
        checkpoint was written with.

    Returns:
      The :class:`Checkpoint`, or ``None`` when ``path`` does not exist.

    Raises:
      CheckpointError: the file cannot be read, an array's hash differs
        (damaged file), or ``parts`` differ (another run's checkpoint).
    """
    path = Path(path)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            if _MANIFEST not in npz.files:
                raise _corrupt(path, "no manifest")
            manifest = json.loads(npz[_MANIFEST].tobytes().decode())
            arrays = {k: npz[k] for k in npz.files if k != _MANIFEST}
    except CheckpointError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as e:
        raise _corrupt(path, f"{type(e).__name__}: {e}") from e
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _corrupt(path, "unknown format")
    if manifest.get("version") != VERSION:
        raise _corrupt(
            path, f"format version {manifest.get('version')!r}, this batchlab reads {VERSION}"
        )
    expected = manifest.get("arrays", {})
    if sorted(expected) != sorted(arrays):
        raise _corrupt(
            path, f"arrays {sorted(arrays)} do not match the manifest's {sorted(expected)}"
        )
    for name, a in arrays.items():
        if _sha256(a) != expected[name]:
            raise _corrupt(path, f"array {name!r} does not match its SHA-256")
    if manifest.get("state_sha256") != _state_hash(manifest.get("state", {})):
        raise _corrupt(path, "its state does not match its SHA-256")
    _check_parts(path, manifest, parts)
    return Checkpoint(str(path), arrays, manifest.get("state", {}), manifest.get("parts", {}))


# ------------------------------------------------------------- fingerprints
_PLAIN = (type(None), bool, int, float, complex, str, bytes)


class Unfingerprintable(Exception):
    """``fn`` holds a value whose content cannot be hashed (it names the value)."""


def _hash_value(h, value: Any, seen: set, depth: int, where: str) -> None:
    if isinstance(value, _PLAIN):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, (np.ndarray, np.generic, jax.Array)):
        h.update(_sha256(np.asarray(value)).encode())
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
    if depth > 6 or module.split(".")[0] in ("jax", "jaxlib", "numpy", "builtins", "math", "scipy"):
        h.update(f"lib:{module}.{name};".encode())  # a library function: its name is its identity
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


def fn_fingerprint_parts(fn: Any) -> dict[str, str]:
    """:func:`fn_fingerprint` split by source, so a mismatch can say what changed.

    For a plain function: ``"fn code"`` (bytecode, constants, nested code,
    defaults) and one entry per closure variable and global it reads; for
    other callables (partials, callable objects) one ``"fn"`` entry.
    """
    inner = fn
    while getattr(inner, "__wrapped__", None) is not None and inner.__wrapped__ is not inner:
        inner = inner.__wrapped__
    if not isinstance(inner, types.FunctionType):
        return {"fn": fn_fingerprint(fn)}
    seen = {id(inner)}

    def one(value, where, code=False):
        h = hashlib.sha256()
        if code:
            _hash_code(h, value, seen, 1, where)
            _hash_value(h, (inner.__defaults__, inner.__kwdefaults__), seen, 1, f"{where} defaults")
        else:
            _hash_value(h, value, seen, 1, where)
        return h.hexdigest()[:16]

    out = {"fn code": one(inner.__code__, "fn", code=True)}
    for var, cell in zip(inner.__code__.co_freevars, inner.__closure__ or (), strict=False):
        try:
            content = cell.cell_contents
        except ValueError:
            content = None
        out[f"fn closure variable {var!r}"] = one(content, f"closure variable {var!r}")
    for var in sorted(_global_names(inner.__code__)):
        if var in inner.__globals__:
            out[f"fn global {var!r}"] = one(inner.__globals__[var], f"global {var!r}")
    return out


def fn_fingerprint(fn: Any) -> str:
    """A SHA-256 (16 hex digits) of what decides ``fn``'s output.

    Raises:
      Unfingerprintable: ``fn`` reads a value that cannot be hashed (an
        open file, a generator, an object without ``__dict__``).

    Example:
      >>> fn_fingerprint(lambda b: b * 2) == fn_fingerprint(lambda b: b * 2)
      True
      >>> fn_fingerprint(lambda b: b * 2) == fn_fingerprint(lambda b: b * 3)
      False
    """
    h = hashlib.sha256()
    _hash_callable(h, fn, set(), 0, "fn")
    return h.hexdigest()[:16]


# ------------------------------------------------------------------ journal
_MAGIC = b"BATCHLAB-JOURNAL-1\n"
_RECORD = b"REC1"


def check_writable(path: str | os.PathLike, name: str = "checkpoint") -> Path:
    """Raises ``ValueError`` unless ``path``'s folder exists and accepts a new file; cleans orphans.

    Temporary files left by a write that was killed (``.<name>.*.tmp``) are
    removed here, on the next start.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`{name}` must be a file path (str), got {type(path).__name__} {path!r}.")
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ValueError(
            f"`{name}` must be a file path, got the folder {str(path)!r}; pass e.g. {str(path / 'run.ckpt')!r}."
        )
    if not folder.is_dir():
        raise ValueError(
            f"`{name}` folder {str(folder)!r} does not exist; create it first "
            f"(os.makedirs({str(folder)!r}, exist_ok=True)) or pass another path."
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ValueError(
            f"`{name}` folder {str(folder)!r} is not writable ({e.strerror or e}); pass a path in a "
            f"folder you can write, e.g. tempfile.mkdtemp()."
        ) from e
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(
            f"`{name}` file {str(path)!r} is read-only; make it writable or pass another path."
        )
    for orphan in folder.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            orphan.unlink()
    return path


def _encode(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    for name, a in arrays.items():
        if a.dtype.hasobject:
            raise ValueError(f"checkpoint array {name!r} must be a numeric array, got {a.dtype}.")
    header = {
        **header,
        "arrays": [[k, a.dtype.str, list(a.shape), a.nbytes] for k, a in arrays.items()],
    }
    text = json.dumps(header, sort_keys=True, default=str).encode()
    body = (
        _RECORD
        + struct.pack("<Q", len(text))
        + text
        + b"".join(a.tobytes() for a in arrays.values())
    )
    return body + hashlib.sha256(body).digest()


def _decode(data: bytes, at: int, path: Path):
    """(header, arrays, next offset), or None when the record at ``at`` is cut short."""
    if len(data) - at < 12:
        return None
    if data[at : at + 4] != _RECORD:
        raise _corrupt(path, f"no record marker at byte {at}")
    (n,) = struct.unpack("<Q", data[at + 4 : at + 12])
    if at + 12 + n > len(data):
        return None
    try:
        header = json.loads(data[at + 12 : at + 12 + n].decode())
        specs = header["arrays"]
        total = sum(int(s[3]) for s in specs)
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as e:
        raise _corrupt(path, f"unreadable record header at byte {at}: {e}") from e
    end = at + 12 + n + total
    if end + 32 > len(data):
        return None
    if hashlib.sha256(data[at:end]).digest() != data[end : end + 32]:
        raise _corrupt(path, f"the record at byte {at} does not match its SHA-256")
    arrays, pos = {}, at + 12 + n
    for name, dtype, shape, nbytes in specs:
        dt = np.dtype(dtype)
        if dt.hasobject:
            raise _corrupt(path, f"array {name!r} has an object dtype")
        arrays[name] = np.frombuffer(data[pos : pos + nbytes], dt).reshape(shape).copy()
        pos += nbytes
    return header, arrays, end + 32


class Journal:
    """An append-only checkpoint: a fingerprinted header, then one record per batch.

    Example:
      >>> import numpy as np, tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "run.ckpt")
      >>> j = Journal.open(p, {"fn": "f"})
      >>> j.records
      []
      >>> j.append({"position": 2}, {"indices": np.arange(2)})
      >>> [h["position"] for h, _ in Journal.open(p, {"fn": "f"}).records]
      [2]
    """

    def __init__(self, path: Path, records: list, size: int, dropped: int) -> None:
        self.path, self.records, self.size, self.dropped_bytes = path, records, size, dropped

    @classmethod
    def open(cls, path: str | os.PathLike, parts: dict[str, Any]) -> Journal:
        """Reads (and verifies) the journal at ``path``, or creates it with ``parts``' header."""
        path = check_writable(path)
        if not path.exists():
            header = {
                "format": FORMAT,
                "version": VERSION,
                "fingerprint": fingerprint(parts),
                "parts": parts,
            }
            blob = _MAGIC + _encode(header, {})
            _atomic_write(path, lambda f: f.write(blob))
            return cls(path, [], len(blob), 0)
        data = path.read_bytes()
        if not data.startswith(_MAGIC):
            raise _corrupt(
                path, "not a batchlab run journal (an old .npz checkpoint, or another file)"
            )
        first = _decode(data, len(_MAGIC), path)
        if first is None:
            raise _corrupt(path, "its header is cut short")
        header, _, at = first
        if header.get("format") != FORMAT or header.get("version") != VERSION:
            raise _corrupt(
                path, f"format {header.get('format')!r} version {header.get('version')!r}"
            )
        _check_parts(path, header, parts)
        records = []
        while True:
            rec = _decode(data, at, path)
            if rec is None:
                break
            records.append(rec[:2])
            at = rec[2]
        return cls(path, records, at, len(data) - at)

    def append(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Appends one record and fsyncs; on a write error the file is cut back to its last record."""
        blob = _encode(header, arrays)
        with open(self.path, "r+b") as f:
            f.truncate(self.size)  # drops a record a kill cut short
            f.seek(self.size)
            try:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            except BaseException:
                with contextlib.suppress(OSError):
                    f.truncate(self.size)
                raise
        self.size += len(blob)
        self.records.append((header, arrays))


def _check_parts(path: Path, manifest: dict[str, Any], parts: dict[str, Any]) -> None:
    if manifest.get("fingerprint") != fingerprint(parts):
        theirs = manifest.get("parts", {})
        differ = sorted(k for k in set(theirs) | set(parts) if theirs.get(k) != parts.get(k))
        detail = "; ".join(f"{k}: {theirs.get(k)!r} there, {parts.get(k)!r} now" for k in differ)
        raise CheckpointError(
            f"`checkpoint` file {str(path)!r} was written by a different run ({detail or 'fingerprint differs'}); "
            f"it is not reused. Delete it or pass another `checkpoint` path to start over."
        )


__all__ = [
    "Checkpoint",
    "CheckpointError",
    "Journal",
    "check_writable",
    "digest",
    "fingerprint",
    "fn_fingerprint",
    "load_checkpoint",
    "save_checkpoint",
]
