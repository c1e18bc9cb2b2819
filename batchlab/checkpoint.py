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
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
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
    }
    blob = np.frombuffer(json.dumps(manifest, sort_keys=True, default=str).encode(), dtype=np.uint8)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays, **{_MANIFEST: blob})
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
    if manifest.get("fingerprint") != fingerprint(parts):
        theirs = manifest.get("parts", {})
        differ = sorted(k for k in set(theirs) | set(parts) if theirs.get(k) != parts.get(k))
        detail = "; ".join(f"{k}: {theirs.get(k)!r} there, {parts.get(k)!r} now" for k in differ)
        raise CheckpointError(
            f"`checkpoint` file {str(path)!r} was written by a different run ({detail or 'fingerprint differs'}); "
            f"it is not reused. Delete it or pass another `checkpoint` path to start over."
        )
    return Checkpoint(str(path), arrays, manifest.get("state", {}), manifest.get("parts", {}))


__all__ = [
    "Checkpoint",
    "CheckpointError",
    "digest",
    "fingerprint",
    "load_checkpoint",
    "save_checkpoint",
]
