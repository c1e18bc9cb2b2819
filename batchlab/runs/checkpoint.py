"""The checkpoint journal of :func:`batchlab.run_batches`: written safely, never silently reused.

One append-only file: a header record (the run's fingerprint, :mod:`batchlab.runs.fingerprint`),
then one record per finished batch (raw array bytes and a JSON header: no pickle, reading runs
no code), each closed by its SHA-256 and fsynced, so a kill loses at most the batch in flight
and the I/O grows with n, not n². A record cut short by a kill is dropped on resume; one whose
hash differs is damage and refused. A journal of another run raises :class:`CheckpointError`
saying what differs, in words. How the run is cut into batches (``settings``) is stored, not
fingerprinted: a run resumes at another batch size without recomputing a finished item.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from batchlab._util.format import format_bytes
from batchlab.runs.fingerprint import fingerprint, weights_changed

FORMAT = "batchlab-checkpoint"
VERSION = 1
# how a run is cut into batches: stored, not fingerprinted (a resume may change them)
SETTINGS = ("batch_size", "budget_bytes", "min_batch_size", "multiple_of", "tolerance")


class CheckpointError(ValueError):
    """A checkpoint that is corrupt, or that belongs to a different run."""


def _atomic_write(path: Path, write) -> None:
    """Writes ``path`` through a fsynced temp file renamed over it (a kill leaves the old file)."""
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


def _corrupt(path: Path, why: str) -> CheckpointError:
    return CheckpointError(
        f"`checkpoint` file {str(path)!r} is corrupt or not a batchlab checkpoint ({why}); it is "
        f"not reused. Delete it to start over, or pass another `checkpoint` path."
    )


_MAGIC = b"BATCHLAB-JOURNAL-1\n"
_RECORD = b"REC1"


def check_writable(path: str | os.PathLike, name: str = "checkpoint") -> Path:
    """Raises ``ValueError`` unless ``path``'s folder accepts a new file; removes killed writes' temps."""
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


def check_room(path: str | os.PathLike, needed_bytes: int, name: str = "checkpoint") -> None:
    """Raises ``ValueError`` when ``path``'s folder has less free space than ``needed_bytes``."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # cannot tell: the first save will say so if it fails
    if needed_bytes > free:
        raise ValueError(
            f"`{name}` folder {str(folder)!r} has {format_bytes(free)} free, but this run's outputs "
            f"need about {format_bytes(needed_bytes)} there; free some space or pass a `{name}` path "
            f"on a disk with room (nothing has run)."
        )


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

    def __init__(self, path, records, size, dropped, settings=None, vouched=False) -> None:
        self.path, self.records, self.size, self.dropped_bytes = path, records, size, dropped
        self.settings: dict[str, Any] = settings or {}
        self.vouched = vouched  # resumed under run_name= over a journal of a fingerprinted fn

    @classmethod
    def open(
        cls,
        path: str | os.PathLike,
        parts: dict[str, Any],
        *,
        settings: dict[str, Any] | None = None,
        described: dict[str, str] | None = None,
    ) -> Journal:
        """Reads (and verifies) the journal at ``path``, or creates it with ``parts``' header.

        ``parts`` are fingerprinted and compared; ``settings`` stored, never compared;
        ``described`` puts ``fn``'s parts in words for a refusal. A ``"run_name"`` in
        ``parts`` vouches for ``fn`` (``journal.vouched``).
        """
        path = check_writable(path)
        settings = dict(settings or {})
        if not path.exists():
            header = {
                "format": FORMAT,
                "version": VERSION,
                "fingerprint": fingerprint(parts),
                "parts": parts,
                "settings": settings,
                "described": dict(described or {}),
            }
            blob = _MAGIC + _encode(header, {})
            try:
                _atomic_write(path, lambda f: f.write(blob))
            except OSError as e:
                raise CheckpointError(
                    f"`checkpoint` file {str(path)!r} could not be created ({e.strerror or e}); "
                    f"nothing has run. Free space in its folder or pass another `checkpoint` path."
                ) from e
            return cls(path, [], len(blob), 0, settings)
        data = path.read_bytes()
        if not data.startswith(_MAGIC):
            if _MAGIC.startswith(data):
                raise _corrupt(path, f"it is cut short: {len(data)} bytes, not even its header")
            raise _corrupt(
                path, "not a batchlab run journal (an old .npz checkpoint, or another file)"
            )
        first = _decode(data, len(_MAGIC), path)
        if first is None:
            raise _corrupt(path, "it is cut short inside its header")
        header, _, at = first
        if header.get("format") != FORMAT or header.get("version") != VERSION:
            raise _corrupt(
                path, f"format {header.get('format')!r} version {header.get('version')!r}"
            )
        theirs = dict(header.get("parts", {}))
        stored = {k: theirs.pop(k) for k in SETTINGS if k in theirs}  # older journals kept them
        ours = {k: v for k, v in parts.items() if k not in SETTINGS}
        vouched = check_parts(path, theirs, ours, header.get("described") or {}, described or {})
        records = []
        while True:
            rec = _decode(data, at, path)
            if rec is None:
                break
            records.append(rec[:2])
            at = rec[2]
        settings = {**stored, **(header.get("settings") or {})}
        return cls(path, records, at, len(data) - at, settings, vouched)

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


def _is_fn_key(key: str) -> bool:
    return key == "run_name" or key == "fn" or key.startswith("fn ")


def _in_words(key: str, old: Any, new: Any, was: dict, now: dict) -> str:
    """One difference, in words: which part, then and now (printable values as they are)."""
    old_text, new_text = was.get(key), now.get(key)
    if key.startswith("fn global ") or key.startswith("fn closure variable "):
        what = "fn's " + key[3:]
        if old is None:
            return f"{what} is new (it was not read when the checkpoint was written)"
        if new is None:
            return f"{what} is no longer read"
        weights = weights_changed(old_text, new_text) if old_text and new_text else None
        if weights:
            kind = new_text.split(" leaves: ")[0] + " leaves)"
            return (
                f"{what} ({kind}) has other weights than when the checkpoint was written: {weights}"
            )
        if old_text and new_text and old_text != new_text:
            return f"{what} was {old_text} when the checkpoint was written and is {new_text} now"
        about = f" ({new_text})" if new_text else ""
        return f"{what}{about} changed (its content differs, or what it reads does)"
    if key == "fn code":
        return "fn's code changed (its bytecode, constants or defaults)"
    if key == "fn":
        return "fn is another function or object" + (
            f" ({old_text} there, {new_text} now)" if old_text and new_text else ""
        )
    if key == "run_name":
        return f"run_name was {old!r} when the checkpoint was written and is {new!r} now"
    return f"{key}: {old!r} there, {new!r} now"


def check_parts(
    path: Path,
    theirs: dict[str, Any],
    parts: dict[str, Any],
    was: dict[str, str] | None = None,
    now: dict[str, str] | None = None,
) -> bool:
    """Raises :class:`CheckpointError` unless ``theirs`` (the journal's) and ``parts`` agree;
    True when ``parts``' ``run_name`` vouches over a journal of a fingerprinted ``fn``."""
    was, now = was or {}, now or {}
    vouched = "run_name" in parts and "run_name" not in theirs
    keys = set(theirs) | set(parts)
    if vouched or ("run_name" in parts and theirs.get("run_name") == parts["run_name"]):
        keys = {k for k in keys if not _is_fn_key(k)}  # the name vouches: fn's name is not compared
    data_keys = sorted(k for k in keys if not _is_fn_key(k) and theirs.get(k) != parts.get(k))
    if data_keys:
        detail = "; ".join(f"{k}: {theirs.get(k)!r} there, {parts.get(k)!r} now" for k in data_keys)
        raise CheckpointError(
            f"`checkpoint` file {str(path)!r} was written by a different run ({detail}); it is not "
            f"reused. Delete it or pass another `checkpoint` path to start over, or pass the same "
            f"items and settings to resume it."
        )
    fn_keys = sorted(k for k in keys if _is_fn_key(k) and theirs.get(k) != parts.get(k))
    if not fn_keys:
        return vouched
    if "run_name" in theirs and "run_name" not in parts:
        raise CheckpointError(
            f"`checkpoint` file {str(path)!r} was written under run_name={theirs['run_name']!r}; "
            f"pass run_name={theirs['run_name']!r} to resume it, or delete it (or pass another "
            f"`checkpoint` path) to start over."
        )
    if "run_name" in theirs:  # both named, differently
        raise CheckpointError(
            f"`checkpoint` file {str(path)!r} was written by a different run (run_name "
            f"{theirs['run_name']!r} there, {parts['run_name']!r} now); it is not reused. Pass "
            f"run_name={theirs['run_name']!r} to resume it, or delete it (or pass another "
            f"`checkpoint` path) to start over."
        )
    changes = [
        _in_words(k, theirs.get(k), parts.get(k), was, now)
        for k in fn_keys
        if not (k == "fn" and theirs.get(k) == parts.get(k))
    ]
    raise CheckpointError(
        f"`checkpoint` file {str(path)!r} was written by a different run of fn, as far as "
        f"its fingerprint tells: {'; '.join(changes)}. It is not reused as it is. If `fn` still computes the same "
        f"outputs (the change is a counter, a log path, a setting that does not touch the "
        f"results), resume the finished work deliberately: run_batches(..., checkpoint="
        f"{str(path)!r}, run_name='my-run-v1'). If its outputs differ now, start over: delete the "
        f"file or pass another `checkpoint` path."
    )


__all__ = ["SETTINGS", "CheckpointError", "Journal", "check_parts", "check_room", "check_writable"]
