"""The checkpoint journal of :func:`batchlab.run_batches`: written safely, never silently reused.

One append-only file: a header record (the run's fingerprint, :mod:`batchlab.runs.fingerprint`),
then one record per finished batch (raw array bytes and a JSON header: no pickle, reading runs
no code), each closed by its SHA-256 and fsynced, so a kill loses at most the batch in flight.
A record cut short by a kill is dropped on resume; one whose hash differs is damage and
refused. How the run is cut into batches (``settings``) is stored, not fingerprinted: a run
resumes at another batch size.
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
_MAGIC = b"BATCHLAB-JOURNAL-1\n"
_RECORD = b"REC1"


class CheckpointError(ValueError):
    """A checkpoint that is corrupt, or that belongs to a different run."""


def _corrupt(path: Path, why: str) -> CheckpointError:
    return CheckpointError(
        f"`checkpoint` file {str(path)!r} is corrupt or not a batchlab checkpoint ({why}); it is "
        f"not reused. Delete it to start over, or pass another `checkpoint` path."
    )


def _folder(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def check_writable(path: str | os.PathLike, name: str = "checkpoint") -> Path:
    """Raises ``ValueError`` unless ``path``'s folder accepts a new file; removes killed writes' temps."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`{name}` must be a file path (str), got {type(path).__name__} {path!r}.")
    path = Path(path)
    folder = _folder(path)
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


def check_room(path: str | os.PathLike, needed_bytes: int) -> None:
    """Raises ``ValueError`` when ``path``'s folder has less free space than ``needed_bytes``."""
    folder = _folder(Path(path))
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # cannot tell: the first save will say so if it fails
    if needed_bytes > free:
        raise ValueError(
            f"`checkpoint` folder {str(folder)!r} has {format_bytes(free)} free, but this run's "
            f"outputs need about {format_bytes(needed_bytes)} there; free some space or pass a "
            f"`checkpoint` path on a disk with room (nothing has run)."
        )


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
    """An append-only checkpoint: a fingerprinted header, then one record per batch.

    Example:
      >>> import numpy as np, tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "run.ckpt")
      >>> j = Journal.open(p, {"fn": "f"})
      >>> j.append({"position": 2}, {"indices": np.arange(2)})
      >>> [h["position"] for h, _ in Journal.open(p, {"fn": "f"}).records]
      [2]
    """

    def __init__(self, path: Path, records: list, size: int, dropped: int, settings: dict):
        self.path, self.records, self.size, self.dropped_bytes = path, records, size, dropped
        self.settings = settings

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
        ``described`` puts ``fn``'s parts in words for a refusal.
        """
        path, settings, described = check_writable(path), dict(settings or {}), described or {}
        if not path.exists():
            header = {"format": FORMAT, "version": VERSION, "fingerprint": fingerprint(parts)}
            header.update(parts=parts, settings=settings, described=described)
            blob = _MAGIC + _encode(header, {})
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=_folder(path))
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
        check_parts(path, header.get("parts", {}), parts, header.get("described") or {}, described)
        records = []
        while (rec := _decode(data, at, path)) is not None:
            records.append(rec[:2])
            at = rec[2]
        return cls(path, records, at, len(data) - at, header.get("settings") or {})

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
    return key in ("run_name", "fn") or key.startswith("fn ")


def _in_words(key: str, old: Any, new: Any, was: dict, now: dict) -> str:
    """One difference of fn's parts, in words: which part, then and now."""
    old_text, new_text = was.get(key), now.get(key)
    if key == "fn code":
        return "fn's code changed (its bytecode, constants or defaults)"
    if key == "fn":
        both = f" ({old_text} there, {new_text} now)" if old_text and new_text else ""
        return f"fn is another function or object{both}"
    what = "fn's " + key[3:]
    if old is None:
        return f"{what} is new (it was not read when the checkpoint was written)"
    if new is None:
        return f"{what} is no longer read"
    weights = weights_changed(old_text, new_text) if old_text and new_text else None
    if weights:
        kind = new_text.split(" leaves: ")[0] + " leaves)"
        return f"{what} ({kind}) has other weights than when the checkpoint was written: {weights}"
    if old_text and new_text and old_text != new_text:
        return f"{what} was {old_text} when the checkpoint was written and is {new_text} now"
    about = f" ({new_text})" if new_text else ""
    return f"{what}{about} changed (its content differs, or what it reads does)"


def check_parts(path: Path, theirs: dict, parts: dict, was: dict, now: dict) -> None:
    """Raises :class:`CheckpointError` unless ``theirs`` (the journal's) and ``parts`` agree;
    ``was``/``now`` put fn's parts in words. A ``"run_name"`` in both vouches for ``fn``."""
    ckpt = f"`checkpoint` file {str(path)!r}"
    keys = set(theirs) | set(parts)
    if "run_name" in parts and theirs.get("run_name") in (None, parts["run_name"]):
        keys = {k for k in keys if not _is_fn_key(k)}
    differ = sorted(k for k in keys if theirs.get(k) != parts.get(k))
    data_keys = [k for k in differ if not _is_fn_key(k)]
    if data_keys:
        detail = "; ".join(f"{k}: {theirs.get(k)!r} there, {parts.get(k)!r} now" for k in data_keys)
        raise CheckpointError(
            f"{ckpt} was written by a different run ({detail}); it is not reused. Delete it or pass "
            f"another `checkpoint` path to start over, or pass the same items and settings to "
            f"resume it."
        )
    if not differ:
        return
    name = theirs.get("run_name")
    restart = "delete it (or pass another `checkpoint` path) to start over"
    if name is not None and "run_name" not in parts:
        raise CheckpointError(
            f"{ckpt} was written under run_name={name!r}; pass run_name={name!r} to resume it, or "
            f"{restart}."
        )
    if name is not None:  # both named, differently
        raise CheckpointError(
            f"{ckpt} was written by a different run (run_name {name!r} there, "
            f"{parts['run_name']!r} now); it is not reused. Pass run_name={name!r} to resume it, "
            f"or {restart}."
        )
    changes = "; ".join(_in_words(k, theirs.get(k), parts.get(k), was, now) for k in differ)
    raise CheckpointError(
        f"{ckpt} was written by a different run of fn, as far as its fingerprint tells: "
        f"{changes}. It is not reused as it is. If `fn` still computes the same outputs (the "
        f"change is a counter, a log path, a setting that does not touch the results), resume "
        f"the finished work deliberately: run_batches(..., checkpoint={str(path)!r}, "
        f"run_name='my-run-v1'). If its outputs differ now, start over: delete the file or pass "
        f"another `checkpoint` path."
    )
