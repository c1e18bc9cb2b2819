"""The checkpoint journal of :func:`batchlab.run_batches`: a header naming the run (what the
checkpoint belongs to: the program ``fn`` traces to, the items, the settings), then one record
per finished batch (JSON and raw bytes, no pickle), each closed by its SHA-256 and fsynced: a
kill loses at most the batch in flight. Batch settings are stored, not compared."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import struct
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

_MAGIC = b"BATCHLAB-JOURNAL-2\n"  # format and version (2: the output structure as protobuf)
_RECORD = b"REC1"


class CheckpointError(ValueError):
    """A checkpoint that is corrupt, or that belongs to a different run."""


def digest(tree: Any) -> str:
    """SHA-256 of a pytree's structure and of every leaf's dtype, shape and bytes."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    h = hashlib.sha256(str(treedef).encode())
    for leaf in map(np.asarray, leaves):
        h.update(f"{leaf.dtype.str}{leaf.shape}".encode())
        h.update(np.ascontiguousarray(leaf).tobytes())
    return h.hexdigest()


def fn_fingerprint(fn: Callable, spec: Any) -> str:
    """16 hex digits of SHA-256 of ``jax.make_jaxpr(fn)(spec)``: the program and the constants
    it closes over (weights, a global it reads), which is what ``jit`` compiles. Python that
    traces to the same program is the same run (``tests/test_checkpoint.py`` shows which)."""
    closed = jax.make_jaxpr(lambda x: fn(x))(spec)  # a new function: jit's trace cache would
    # keep the program of a global's old value
    return hashlib.sha256((str(closed.jaxpr) + digest(closed.consts)).encode()).hexdigest()[:16]


def code_fingerprint(fn: Callable) -> str:
    """16 hex digits of SHA-256 of what a Python ``fn`` (``strategy="manual"``) is made of.

    Its bytecode (comments and layout aside), the values it closes over, a ``partial``'s arguments,
    a callable object's fields, and, the same way, the functions of its module that it calls.
    Nothing is an address, so a resume in another process reads the same digits; a changed body
    (``b * 3`` after ``b * 2``) or closed-over value (``Scaler(2)`` -> ``Scaler(3)``) reads others.
    What ``fn`` reads from files, globals that are not functions, or the host is not seen.

    Example:
      >>> code_fingerprint(lambda b: b * 2) == code_fingerprint(lambda b: b * 3)
      False
    """
    return hashlib.sha256(_code_key(fn, set()).encode()).hexdigest()[:16]


def _code_key(v: Any, seen: set) -> str:
    """A text that names ``v`` by value, never by address (see :func:`code_fingerprint`)."""
    if isinstance(v, (np.ndarray, jax.Array, np.generic)):
        return digest(v)
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes, type)):
        return repr(v)
    if isinstance(v, (list, tuple, dict)):
        items = (
            sorted(v.items(), key=lambda kv: repr(kv[0])) if isinstance(v, dict) else enumerate(v)
        )
        return f"{type(v).__name__}[{','.join(f'{k!r}:{_code_key(x, seen)}' for k, x in items)}]"
    if isinstance(v, types.ModuleType):
        return f"module {v.__name__}"
    if id(v) in seen:  # a recursive function, or one its helpers call back
        return "<seen>"
    seen.add(id(v))
    if isinstance(v, functools.partial):
        return f"partial({_code_key((v.func, v.args, v.keywords), seen)})"
    if isinstance(v, types.MethodType):
        return f"method({_code_key((v.__func__, v.__self__), seen)})"
    if isinstance(v, types.FunctionType):
        names, known = v.__code__.co_names, v.__globals__
        calls = {n: known[n] for n in names if isinstance(known.get(n), types.FunctionType)}
        cells = [c.cell_contents for c in v.__closure__ or ()]
        parts = (_bytecode_key(v.__code__), v.__defaults__, v.__kwdefaults__, cells, calls)
        return f"function({_code_key(parts, seen)})"
    if hasattr(v, "__wrapped__"):  # jax.jit(f)
        return f"wrapped({_code_key(v.__wrapped__, seen)})"
    if callable(v) and not isinstance(v, types.BuiltinFunctionType):  # a callable object
        call = type(v).__call__
        fields = getattr(v, "__dict__", None)
        own = call if isinstance(call, types.FunctionType) else type(v).__qualname__
        return f"{type(v).__qualname__}({_code_key((own, fields), seen)})"
    return f"{type(v).__module__}.{type(v).__qualname__}"


def _bytecode_key(code: types.CodeType) -> str:
    """``code``'s instructions, names and constants (a frozenset's sorted: no hash seed)."""
    consts = [
        _bytecode_key(c)
        if isinstance(c, types.CodeType)
        else repr(sorted(map(repr, c)) if isinstance(c, frozenset) else c)
        for c in code.co_consts
    ]
    return repr((code.co_code, code.co_names, code.co_varnames, consts))


def _corrupt(path: Path, why: str) -> CheckpointError:
    return CheckpointError(
        f"`checkpoint` file {str(path)!r} is corrupt or not a batchlab checkpoint ({why}); it is "
        f"not reused. Delete it to start over, or pass another `checkpoint` path."
    )


def check_writable(path: str | os.PathLike) -> Path:
    """Raises unless ``path`` is a file this run can write; removes killed writes' temp files."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            f"`checkpoint` must be a file path (str), got {type(path).__name__} {path!r}."
        )
    path, why, folder = Path(path), None, Path(path).parent
    if path.is_dir():
        why = "that is a folder"
    elif not folder.is_dir():
        why = f"the `checkpoint` folder {str(folder)!r} does not exist (os.makedirs it first)"
    elif path.exists() and not os.access(path, os.W_OK):
        why = "the file is read-only"
    else:  # a probe file: os.access can be wrong (network and read-only mounts, root)
        try:
            tempfile.NamedTemporaryFile(prefix=f".{path.name}.", suffix=".tmp", dir=folder).close()
        except OSError as e:
            why = f"the `checkpoint` folder {str(folder)!r} is not writable ({e.strerror or e})"
    if why is not None:
        raise ValueError(
            f"`checkpoint` must be a file path this run can write, got {str(path)!r}: {why}; pass "
            f"another path, e.g. os.path.join(tempfile.mkdtemp(), 'run.ckpt')."
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
    specs = [[k, a.dtype.str, list(a.shape), a.nbytes] for k, a in arrays.items()]
    text = json.dumps({**header, "arrays": specs}, sort_keys=True, default=str).encode()
    body = _RECORD + struct.pack("<Q", len(text)) + text
    body += b"".join(a.tobytes() for a in arrays.values())
    return body + hashlib.sha256(body).digest()


def _decode(data: bytes, at: int, path: Path):
    """(header, arrays, next offset), or None when the record at ``at`` is cut short."""
    if len(data) - at < 12:
        return None
    if data[at : at + 4] != _RECORD:
        raise _corrupt(path, f"no record marker at byte {at}")
    (n,) = struct.unpack("<Q", data[at + 4 : at + 12])
    pos = at + 12 + n
    if pos > len(data):
        return None
    try:
        header = json.loads(data[at + 12 : pos].decode())
        specs = header["arrays"]
        end = pos + sum(int(s[3]) for s in specs)
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as e:
        raise _corrupt(path, f"unreadable record header at byte {at}: {e}") from e
    if end + 32 > len(data):
        return None
    if hashlib.sha256(data[at:end]).digest() != data[end : end + 32]:
        raise _corrupt(path, f"the record at byte {at} does not match its SHA-256")
    arrays = {}
    for name, dtype, shape, nbytes in specs:
        if np.dtype(dtype).hasobject:
            raise _corrupt(path, f"array {name!r} has an object dtype")
        arrays[name] = np.frombuffer(data[pos : pos + nbytes], dtype).reshape(shape).copy()
        pos += nbytes
    return header, arrays, end + 32


class Journal:
    """An append-only checkpoint: a header (the run's ``parts``), then one record per batch."""

    def __init__(self, path: Path, records: list, size: int, settings: dict):
        self.path, self.records, self.size, self.settings = path, records, size, settings

    @classmethod
    def open(cls, path: str | os.PathLike, parts: dict, *, settings: dict | None = None) -> Journal:
        """Reads and verifies the journal at ``path`` (``parts`` must agree), or creates it."""
        path, settings = Path(path), dict(settings or {})  # run_batches checked it is writable
        if not path.exists():
            blob = _MAGIC + _encode({"parts": parts, "settings": settings}, {})
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            try:  # a fsynced temp file renamed over the path: a kill leaves no half header
                with os.fdopen(fd, "wb") as f:
                    f.write(blob)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except OSError as e:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise CheckpointError(
                    f"`checkpoint` file {str(path)!r} could not be created ({e.strerror or e}); "
                    f"nothing has run. Free space in its folder or pass another `checkpoint` path."
                ) from e
            return cls(path, [], len(blob), settings)
        data = path.read_bytes()
        if not data.startswith(_MAGIC):
            cut = f"it is cut short: {len(data)} bytes, not even its header"
            raise _corrupt(path, cut if _MAGIC.startswith(data) else "not a batchlab run journal")
        first = _decode(data, len(_MAGIC), path)
        if first is None:
            raise _corrupt(path, "it is cut short inside its header")
        header, _, at = first
        check_parts(path, header.get("parts", {}), parts)
        records = []
        while (rec := _decode(data, at, path)) is not None:
            records.append(rec[:2])
            at = rec[2]
        return cls(path, records, at, header.get("settings") or {})

    def append(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Appends one record and fsyncs; a failed write is cut back off."""
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


def check_parts(path: Path, theirs: dict, parts: dict) -> None:
    """Raises :class:`CheckpointError` unless the journal's ``theirs`` and ``parts`` agree; a
    ``"run_name"`` vouches for ``fn`` (its ``"fn"`` fingerprint is then not compared)."""
    keys = sorted((set(theirs) | set(parts)) - {"fn", "run_name"})
    if theirs.get("run_name") is not None:
        keys.append("run_name")
    elif parts.get("run_name") is None:
        keys.append("fn")
    if differ := [k for k in keys if theirs.get(k) != parts.get(k)]:
        say = lambda k: f"{k}: {theirs.get(k)!r} there, {parts.get(k)!r} now"  # noqa: E731
        detail = "; ".join(_FN_CHANGED if k == "fn" else say(k) for k in differ)
        raise CheckpointError(
            f"`checkpoint` file {str(path)!r} was written by a different run ({detail}); it is not "
            f"reused. Delete it or pass another `checkpoint` path to start over, or pass the same "
            f"items and settings to resume it."
        )


_FN_CHANGED = (
    "fn changed since the journal was written (its jaxpr, or with strategy='manual' its source, "
    "has other operations, or other values it closes over); if it still computes the same "
    "outputs, resume deliberately with run_name='my-run-v1'"
)
