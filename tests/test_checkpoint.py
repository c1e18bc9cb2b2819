"""The checkpoint journal and fingerprints: no pickle, damaged and mismatched files refused."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from batchlab.runs.checkpoint import (
    _MAGIC,
    _RECORD,
    CheckpointError,
    Journal,
    check_writable,
    digest,
    fn_fingerprint,
)

PARTS = {"fn": "f", "items": "abc"}


def test_digest_is_stable():
    a = {"w": np.arange(4, dtype=np.float32)}
    assert digest(a) == digest({"w": np.arange(4, dtype=np.float32)})
    assert digest(a) != digest({"w": np.arange(4, dtype=np.float64)})
    assert digest(a) != digest([np.arange(4, dtype=np.float32)])


def test_journal_roundtrip_bit_for_bit(tmp_path):
    path = tmp_path / "run.ckpt"
    j = Journal.open(path, PARTS, settings={"batch_size": 4})
    arrays = {
        "indices": np.arange(3),
        "out_0": np.random.default_rng(0).normal(size=(3, 2)),
        "out_1": np.array([True, False, True]),
    }
    j.append({"position": 3}, arrays)
    j.append({"position": 5}, {"indices": np.arange(3, 5)})
    again = Journal.open(path, PARTS)
    assert [h["position"] for h, _ in again.records] == [3, 5] and again.size == path.stat().st_size
    for k, v in arrays.items():
        got = again.records[0][1][k]
        assert got.dtype == v.dtype and got.tobytes() == v.tobytes()
    # batch settings are stored, not fingerprinted: another batch size reopens the same journal
    other = Journal.open(path, PARTS, settings={"batch_size": 8})
    assert other.settings["batch_size"] == 4 and len(other.records) == 2
    with pytest.raises(CheckpointError, match=r"different run \(items: 'abc' there, 'xyz' now\)"):
        Journal.open(path, {**PARTS, "items": "xyz"})


def test_journal_damage_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    Journal.open(path, PARTS).append({"position": 1}, {"indices": np.arange(1)})
    blob = path.read_bytes()
    path.write_bytes(blob[: len(_MAGIC) + 6])
    with pytest.raises(CheckpointError, match=r"corrupt .*cut short inside its header"):
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
    with pytest.raises(ValueError, match=r"must be a file path this run can write.*is a folder"):
        check_writable(tmp_path)
    (tmp_path / "ro.ckpt").write_bytes(b"")
    monkeypatch.setattr(os, "access", lambda *a: False)  # root ignores chmod; mock the check
    with pytest.raises(ValueError, match=r"`checkpoint` must be .*the file is read-only"):
        check_writable(tmp_path / "ro.ckpt")
    with pytest.raises(ValueError, match=r"`checkpoint` folder .* does not exist"):
        check_writable(tmp_path / "nowhere" / "run.ckpt")


def _make_closure(k):
    return lambda x: x * k


class _Obj:
    def __init__(self, w):
        self.w = w

    def method(self, x):
        return x * self.w


X = jax.ShapeDtypeStruct((3,), jnp.float32)


def test_fn_fingerprint_is_the_jaxpr_and_its_constants():
    import functools

    assert fn_fingerprint(_make_closure(2.0), X) == fn_fingerprint(_make_closure(2.0), X)
    assert fn_fingerprint(_make_closure(2.0), X) != fn_fingerprint(_make_closure(3.0), X)
    four = jax.ShapeDtypeStruct((4,), jnp.float32)
    assert fn_fingerprint(_make_closure(2.0), X) != fn_fingerprint(_make_closure(2.0), four)
    ones, zeros = _Obj(np.ones(3, np.float32)).method, _Obj(np.zeros(3, np.float32)).method
    assert fn_fingerprint(ones, X) != fn_fingerprint(zeros, X)  # a closed-over array's bytes
    assert fn_fingerprint(_Obj(jnp.ones(3)).method, X) == fn_fingerprint(ones, X)
    nested_a = lambda x: (lambda y: y + 1)(x)  # noqa: E731
    nested_b = lambda x: (lambda y: y + 2)(x)  # noqa: E731
    assert fn_fingerprint(nested_a, X) != fn_fingerprint(nested_b, X)
    p = functools.partial(jnp.multiply, 3.0)
    assert fn_fingerprint(p, X) != fn_fingerprint(functools.partial(jnp.multiply, 4.0), X)
    assert fn_fingerprint(p, X) == fn_fingerprint(lambda x: 3.0 * x, X)  # one program


SCRIPT = """
import sys
import jax, jax.numpy as jnp, numpy as np
from batchlab.runs.checkpoint import fn_fingerprint

w = np.linspace(0, 1, 9, dtype=np.float32).reshape(3, 3)

def fn(x):
    h = jax.nn.gelu(x @ w) + jax.nn.relu(x)  # custom_jvp rules
    back = jax.pure_callback(lambda v: np.sin(v), jax.ShapeDtypeStruct(x.shape, x.dtype), h)
    return jax.checkpoint(lambda v: jnp.tanh(v).sum())(back)

print(fn_fingerprint(fn, jax.ShapeDtypeStruct((3,), jnp.float32)))
"""


def test_fn_fingerprint_is_the_same_in_a_new_process():
    """A resume runs in another process: nothing of the fingerprint may be an address."""
    import subprocess
    import sys

    run = lambda: subprocess.run(  # noqa: E731
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True
    ).stdout.strip()
    first, second = run(), run()
    assert len(first) == 16 and first == second


CODE_SCRIPT = """
import functools, sys
import numpy as np
from batchlab.runs.checkpoint import code_fingerprint

class Scaler:
    def __init__(self, k):
        self.k, self.w = k, np.arange(3.0)
    def __call__(self, b):
        return helper(b) * self.k  # comment: not part of the fingerprint

def helper(b):
    return b + 1

fns = [helper, lambda b: b * 2, functools.partial(helper), Scaler(2), Scaler(2).__call__]
print(" ".join(code_fingerprint(f) for f in fns))
"""


@pytest.mark.parametrize("how", ["file", "-c"])
def test_code_fingerprint_is_the_same_in_a_new_process_and_follows_the_code(tmp_path, how):
    """A manual fn's fingerprint (source, or bytecode without a source file) holds no address
    and no hash seed; a changed helper it calls, or comment-only edits, are told apart."""
    import subprocess
    import sys

    def run(text):
        script = tmp_path / "job.py"
        script.write_text(text)
        argv = [str(script)] if how == "file" else ["-c", text]
        return subprocess.run(
            [sys.executable, *argv], capture_output=True, text=True, timeout=120, check=True
        ).stdout.split()

    first, second = run(CODE_SCRIPT), run(CODE_SCRIPT)
    assert len(first) == 5 and first == second and len(set(first)) == 5
    changed = run(CODE_SCRIPT.replace("return b + 1", "return b + 2"))
    assert [a != b for a, b in zip(first, changed, strict=True)] == [1, 0, 1, 1, 1]
    if how == "file":  # comments are not in the syntax tree
        assert run(CODE_SCRIPT.replace("# comment: not", "# not")) == first


def test_output_structure_is_stored_in_jax_protobuf_form():
    import jax

    from batchlab.runs.results import decode_treedef, encode_treedef

    tree = jax.tree_util.tree_structure({"a": (1, None, [2, 3]), "b": 4})
    assert decode_treedef(encode_treedef(tree)) == tree
    assert encode_treedef(jax.tree_util.tree_structure({1: 2})) is None  # retraced instead
    from collections import namedtuple

    point = namedtuple("point", "x y")
    assert encode_treedef(jax.tree_util.tree_structure(point(1, 2))) is None  # retraced instead


def test_journal_header_and_dtype_checks(tmp_path):
    import struct

    from batchlab.runs.checkpoint import _encode

    path = tmp_path / "run.ckpt"
    # another version of the format: refused by its first line
    path.write_bytes(b"BATCHLAB-JOURNAL-1\n" + _encode({"parts": PARTS}, {}))
    with pytest.raises(CheckpointError, match=r"not a batchlab run journal"):
        Journal.open(path, PARTS)
    # a record whose header claims an object array: refused, never loaded with pickle
    import hashlib
    import json as _json

    good = _MAGIC + _encode({"parts": PARTS}, {})
    text = _json.dumps({"arrays": [["x", "|O", [1], 8]]}).encode()
    body = _RECORD + struct.pack("<Q", len(text)) + text + b"\0" * 8
    path.write_bytes(good + body + hashlib.sha256(body).digest())
    with pytest.raises(CheckpointError, match=r"array 'x' has an object dtype"):
        Journal.open(path, PARTS)


def test_the_same_run_name_resumes_under_another_function_name(tmp_path):
    """A named run was refused when fn's name changed ("run_name 'x' there, 'x' now")."""
    import batchlab

    xs, path = np.ones((8, 3), np.float32), tmp_path / "run.ckpt"

    def device(b):
        return b * 2

    batchlab.run_batches(
        device,
        xs[:4],
        batch_size=4,
        strategy="manual",
        checkpoint=path,
        run_name="x",
        progress=False,
    )
    with pytest.raises(batchlab.CheckpointError, match=r"items"):
        batchlab.run_batches(
            lambda b: b * 2,
            xs,
            batch_size=4,
            strategy="manual",
            checkpoint=path,
            run_name="x",
            progress=False,
        )
    path.unlink()
    first = batchlab.run_batches(
        device, xs, batch_size=4, strategy="manual", checkpoint=path, run_name="x", progress=False
    )
    again = batchlab.run_batches(
        lambda b: b * 2,
        xs,
        batch_size=4,
        strategy="manual",
        checkpoint=path,
        run_name="x",
        progress=False,
    )
    assert again.resumed_items == 8 and np.array_equal(again.outputs, first.outputs)
