"""The checkpoint journal of :func:`batchlab.run_batches`: written safely, never silently reused.

A long batch run saves what it finished after every batch, so a crash, a
Ctrl-C or a killed kernel loses at most one batch. The :class:`Journal` is
one append-only file: a header record (the run's fingerprint,
``runs.fingerprint``), then one record per finished batch (its outputs and
the run's small state), each closed by a SHA-256 of the record and flushed
with ``fsync``. Each batch writes only its own bytes, so the total I/O grows
with n, not n² (``benchmarks/checkpoint_io.py``). A record cut short by a kill
is the batch in flight: it is dropped (and cut off the file) on resume; a
complete record whose hash differs is damage and refused. Arrays are stored
as raw bytes with a JSON header (no pickle): reading a checkpoint cannot run
code. A journal from another run raises :class:`CheckpointError` naming what
differs, instead of being reused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from batchlab.runs.fingerprint import fingerprint

FORMAT = "batchlab-checkpoint"
VERSION = 1


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


def _corrupt(path: Path, why: str) -> CheckpointError:
    return CheckpointError(
        f"`checkpoint` file {str(path)!r} is corrupt or not a batchlab checkpoint ({why}); it is "
        f"not reused. Delete it to start over, or pass another `checkpoint` path."
    )


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


__all__ = ["CheckpointError", "Journal", "check_writable"]
