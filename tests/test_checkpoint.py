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


def test_tampered_state_is_refused(tmp_path):
    path = tmp_path / "ck.npz"
    save_checkpoint(path, {"x": np.zeros(2)}, {"position": 4}, PARTS)
    with np.load(path) as z:
        manifest = json.loads(z["__manifest__"].tobytes())
    manifest["state"]["position"] = 400  # the arrays' hashes still match: only the state changed
    np.savez(
        path, x=np.zeros(2), __manifest__=np.frombuffer(json.dumps(manifest).encode(), np.uint8)
    )
    with pytest.raises(CheckpointError, match=r"its state does not match its SHA-256"):
        load_checkpoint(path, PARTS)


# ------------------------------------------------------------------ journal
from batchlab.checkpoint import (  # noqa: E402  # noqa: E402
    _MAGIC,
    _RECORD,
    Journal,
    check_writable,
    fn_fingerprint,
    fn_fingerprint_parts,
)


def test_journal_roundtrip_bit_for_bit(tmp_path):
    path = tmp_path / "run.ckpt"
    j = Journal.open(path, PARTS)
    arrays = {
        "indices": np.arange(3),
        "out_0": np.random.default_rng(0).normal(size=(3, 2)),
        "out_1": np.array([True, False, True]),
    }
    j.append({"position": 3}, arrays)
    j.append({"position": 5}, {"indices": np.arange(3, 5)})
    again = Journal.open(path, PARTS)
    assert [h["position"] for h, _ in again.records] == [3, 5] and again.dropped_bytes == 0
    for k, v in arrays.items():
        got = again.records[0][1][k]
        assert got.dtype == v.dtype and got.tobytes() == v.tobytes()
    with pytest.raises(CheckpointError, match=r"different run .*batch_size: 4 there, 8 now"):
        Journal.open(path, {**PARTS, "batch_size": 8})


def test_journal_damage_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    Journal.open(path, PARTS).append({"position": 1}, {"indices": np.arange(1)})
    blob = path.read_bytes()
    path.write_bytes(blob[: len(_MAGIC) + 6])
    with pytest.raises(CheckpointError, match=r"its header is cut short"):
        Journal.open(path, PARTS)
    path.write_bytes(blob + b"JUNKJUNKJUNKJUNK")
    with pytest.raises(CheckpointError, match=r"no record marker at byte"):
        Journal.open(path, PARTS)
    header_end = blob.index(_RECORD, len(_MAGIC) + 4)
    bad = bytearray(blob)
    bad[header_end + 12] = ord("!")  # the second record's JSON no longer parses
    path.write_bytes(bytes(bad))
    with pytest.raises(CheckpointError, match=r"unreadable record header|SHA-256"):
        Journal.open(path, PARTS)
    with pytest.raises(ValueError, match=r"must be a numeric array"):
        Journal.open(tmp_path / "other.ckpt", PARTS).append({}, {"x": np.array([object()])})


def test_check_writable(tmp_path, monkeypatch):
    with pytest.raises(TypeError, match=r"`checkpoint` must be a file path"):
        check_writable(3)
    with pytest.raises(ValueError, match=r"must be a file path, got the folder"):
        check_writable(tmp_path)
    (tmp_path / "ro.ckpt").write_bytes(b"")
    monkeypatch.setattr(os, "access", lambda *a: False)  # root ignores chmod; mock the check
    with pytest.raises(ValueError, match=r"`checkpoint` file .* is read-only"):
        check_writable(tmp_path / "ro.ckpt")


def _make_closure(k):
    return lambda x: x * k


class _Obj:
    def __init__(self, w):
        self.w = w

    def method(self, x):
        return x * self.w


def test_fn_fingerprint_sees_what_decides_the_output():
    import functools

    assert fn_fingerprint(_make_closure(2)) == fn_fingerprint(_make_closure(2))
    assert fn_fingerprint(_make_closure(2)) != fn_fingerprint(_make_closure(np.float32(2)))
    assert fn_fingerprint(_Obj(np.ones(3)).method) != fn_fingerprint(_Obj(np.zeros(3)).method)
    nested_a = lambda x: (lambda y: y + 1)(x)  # noqa: E731
    nested_b = lambda x: (lambda y: y + 2)(x)  # noqa: E731
    assert fn_fingerprint(nested_a) != fn_fingerprint(nested_b)  # nested code constants
    p = functools.partial(max, 3)
    assert fn_fingerprint(p) != fn_fingerprint(functools.partial(max, 4))
    assert list(fn_fingerprint_parts(_make_closure(2))) == ["fn code", "fn closure variable 'k'"]
    gen = (i for i in range(3))
    from batchlab.checkpoint import Unfingerprintable

    with pytest.raises(Unfingerprintable, match=r"closure variable 'gen'"):
        fn_fingerprint(lambda x: x + next(gen))


def test_output_structure_is_stored_as_json():
    import jax

    from batchlab.run_result import treedef_from_json, treedef_to_json

    tree = jax.tree_util.tree_structure({"a": (1, None, [2, 3]), "b": 4})
    assert treedef_from_json(treedef_to_json(tree)) == tree
    from collections import namedtuple

    point = namedtuple("point", "x y")
    assert treedef_to_json(jax.tree_util.tree_structure(point(1, 2))) is None  # retraced instead


def test_journal_header_and_dtype_checks(tmp_path):
    import struct

    from batchlab.checkpoint import FORMAT, _encode

    path = tmp_path / "run.ckpt"
    path.write_bytes(_MAGIC + _encode({"format": FORMAT, "version": 99, "parts": {}}, {}))
    with pytest.raises(CheckpointError, match=r"version 99"):
        Journal.open(path, PARTS)
    # a record whose header claims an object array: refused, never loaded with pickle
    import hashlib
    import json as _json

    good = _MAGIC + _encode(
        {"format": FORMAT, "version": 1, "fingerprint": fingerprint(PARTS), "parts": PARTS}, {}
    )
    text = _json.dumps({"arrays": [["x", "|O", [1], 8]]}).encode()
    body = _RECORD + struct.pack("<Q", len(text)) + text + b"\0" * 8
    path.write_bytes(good + body + hashlib.sha256(body).digest())
    with pytest.raises(CheckpointError, match=r"array 'x' has an object dtype"):
        Journal.open(path, PARTS)


def test_callable_object_without_attributes_is_unfingerprintable():
    from batchlab.checkpoint import Unfingerprintable

    class Slotted:
        __slots__ = ()

        def __call__(self, x):
            return x

    with pytest.raises(Unfingerprintable, match=r"object without attributes to hash"):
        fn_fingerprint(Slotted())
