"""Checkpoints: atomic writes, no pickle, corrupt and mismatched files refused."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

from batchlab.checkpoint import (
    CheckpointError,
    digest,
    fingerprint,
    load_checkpoint,
    save_checkpoint,
)

PARTS = {"fn": "f", "items": "abc", "batch_size": 4}


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("n", [0, 5])
def test_roundtrip(tmp_path, dtype, n):
    path = tmp_path / "ck.npz"
    arrays = {"indices": np.arange(n), "out_0": np.ones((n, 3), dtype)}
    save_checkpoint(path, arrays, {"position": n, "failures": [[1, "bad", "msg"]]}, PARTS)
    ck = load_checkpoint(path, PARTS)
    assert ck.state == {"position": n, "failures": [[1, "bad", "msg"]]}
    for k, v in arrays.items():
        np.testing.assert_array_equal(ck.arrays[k], v)
        assert ck.arrays[k].dtype == v.dtype
    assert "Checkpoint(" in repr(ck)


def test_missing_file_is_none(tmp_path):
    assert load_checkpoint(tmp_path / "nope.npz", PARTS) is None


def test_atomic_overwrite_leaves_no_temp_files(tmp_path):
    path = tmp_path / "ck.npz"
    for step in range(3):
        save_checkpoint(path, {"x": np.full(4, step)}, {"step": step}, PARTS)
    assert sorted(os.listdir(tmp_path)) == ["ck.npz"]
    assert load_checkpoint(path, PARTS).state["step"] == 2


def test_failed_write_keeps_the_old_checkpoint(tmp_path):
    path = tmp_path / "ck.npz"
    save_checkpoint(path, {"x": np.arange(3)}, {"step": 1}, PARTS)
    with pytest.raises(ValueError, match=r"must be a numeric array"):
        save_checkpoint(path, {"x": np.array([object()])}, {"step": 2}, PARTS)
    with pytest.raises(ValueError, match=r"plain name"):
        save_checkpoint(path, {"__manifest__": np.arange(2)}, {"step": 2}, PARTS)
    assert load_checkpoint(path, PARTS).state["step"] == 1
    assert sorted(os.listdir(tmp_path)) == ["ck.npz"]


def test_truncated_file_is_refused(tmp_path):
    path = tmp_path / "ck.npz"
    save_checkpoint(path, {"x": np.arange(1000)}, {}, PARTS)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"corrupt or not a batchlab checkpoint .*Delete it"):
        load_checkpoint(path, PARTS)


def test_garbage_and_foreign_npz_are_refused(tmp_path):
    path = tmp_path / "ck.npz"
    path.write_text("not a zip")
    with pytest.raises(CheckpointError, match=r"corrupt"):
        load_checkpoint(path, PARTS)
    np.savez(path, x=np.arange(3))
    with pytest.raises(CheckpointError, match=r"no manifest"):
        load_checkpoint(path, PARTS)


def _rewrite(path, mutate):
    """Rewrites a checkpoint's members with ``mutate(name, bytes) -> bytes`` (valid zip CRCs)."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile(path, "w") as z:
        for n, b in members.items():
            z.writestr(n, mutate(n, b))


def test_tampered_array_is_refused(tmp_path):
    path = tmp_path / "ck.npz"
    save_checkpoint(path, {"x": np.zeros(64, np.float32)}, {}, PARTS)
    _rewrite(path, lambda n, b: b[:-4] + np.float32(1).tobytes() if n == "x.npy" else b)
    with pytest.raises(CheckpointError, match=r"array 'x' does not match its SHA-256"):
        load_checkpoint(path, PARTS)


def test_wrong_version_is_refused(tmp_path):
    path = tmp_path / "ck.npz"
    save_checkpoint(path, {"x": np.zeros(2)}, {}, PARTS)
    with np.load(path) as z:
        manifest = json.loads(z["__manifest__"].tobytes())
    manifest["version"] = 99
    blob = np.frombuffer(json.dumps(manifest).encode(), np.uint8)
    np.savez(path, x=np.zeros(2), __manifest__=blob)
    with pytest.raises(CheckpointError, match=r"format version 99"):
        load_checkpoint(path, PARTS)
    manifest["format"] = "other"
    np.savez(
        path, x=np.zeros(2), __manifest__=np.frombuffer(json.dumps(manifest).encode(), np.uint8)
    )
    with pytest.raises(CheckpointError, match=r"unknown format"):
        load_checkpoint(path, PARTS)
    np.savez(
        path,
        y=np.zeros(2),
        __manifest__=np.frombuffer(
            json.dumps({**manifest, "format": "batchlab-checkpoint", "version": 1}).encode(),
            np.uint8,
        ),
    )
    with pytest.raises(CheckpointError, match=r"do not match the manifest"):
        load_checkpoint(path, PARTS)


def test_mismatched_run_is_refused_naming_what_differs(tmp_path):
    path = tmp_path / "ck.npz"
    save_checkpoint(path, {"x": np.zeros(2)}, {}, PARTS)
    with pytest.raises(CheckpointError, match=r"different run .*batch_size: 4 there, 8 now"):
        load_checkpoint(path, {**PARTS, "batch_size": 8})


def test_digest_and_fingerprint_are_stable():
    a = {"w": np.arange(4, dtype=np.float32)}
    assert digest(a) == digest({"w": np.arange(4, dtype=np.float32)})
    assert digest(a) != digest({"w": np.arange(4, dtype=np.float64)})
    assert digest(a) != digest([np.arange(4, dtype=np.float32)])
    assert (
        fingerprint({"a": 1, "b": 2})
        == fingerprint({"b": 2, "a": 1})
        != fingerprint({"a": 2, "b": 2})
    )
