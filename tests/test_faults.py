"""Fault injection for run_batches: kills, Ctrl-C, real out-of-memory, full or read-only
checkpoint folders, foreign checkpoints. Every resumed run equals an uninterrupted run bit
for bit; nothing is lost, nothing computed twice beyond the batch in flight."""

from __future__ import annotations

import errno
import functools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import batchlab
from batchlab.runs.checkpoint import Journal
from batchlab.runs.results import BatchFnError

HERE = Path(__file__).parent
BIG = 2**23  # jnp.outer of 2**23 float32s: a 256 TiB buffer, RESOURCE_EXHAUSTED at once


def item_fn(x):
    return jnp.tanh(x).sum() * 2.0


def data(n, d=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def equal(a, b):
    """Bit for bit: same indices, same failures, same output bytes and dtype."""
    np.testing.assert_array_equal(a.indices, b.indices)
    assert a.failures == b.failures
    for x, y in zip(
        jax.tree_util.tree_leaves(a.outputs), jax.tree_util.tree_leaves(b.outputs), strict=True
    ):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


@functools.cache
def real_oom() -> jax.errors.JaxRuntimeError:
    """The error XLA:CPU itself raises for a 256 TiB buffer."""
    try:
        jax.jit(lambda v: jnp.outer(v, v))(jnp.ones(BIG, jnp.float32)).block_until_ready()
    except jax.errors.JaxRuntimeError as e:
        assert "RESOURCE_EXHAUSTED" in str(e)
        return e
    raise AssertionError("a 256 TiB buffer was allocated")


def grows(limit):
    """A batched fn that really runs out of memory (XLA RESOURCE_EXHAUSTED) above ``limit`` items."""

    def fn(batch):
        out = jax.vmap(item_fn)(batch)
        if batch.shape[0] > limit:  # memory grows with the batch: past `limit` it does not fit
            v = jnp.ones(BIG, jnp.float32) * batch[0, 0]
            return out, jnp.outer(v, v)
        return out

    return fn


# ------------------------------------------------------------- SIGKILL, SIGABRT
@pytest.mark.parametrize("sig, kills", [("KILL", 20), ("ABRT", 10)])
def test_sigkill_at_random_points_then_resume_is_bit_identical(tmp_path, sig, kills):
    """SIGKILL (the OOM killer) and SIGABRT (LLVM aborting in a compile) at random points."""
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "_faults" / "sigkill_driver.py"),
            str(tmp_path),
            str(kills),
            "7",
            sig,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=HERE.parent,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    fig = json.loads(proc.stdout.strip().splitlines()[-1])
    assert fig["killed_while_running"] == kills and fig["complete"] and fig["identical"]
    assert fig["missing"] == 0 and fig["orphans"] == []
    assert 0 <= fig["extra_computations"] <= kills * 4  # at most the batch in flight per kill
    assert sum(fig["resumed_items"]) > 0  # the kills came after real progress, not only at start-up


ABORT_SCRIPT = """
import os, resource, sys
import jax, jax.numpy as jnp, numpy as np
import batchlab
import batchlab.runs.attempt as attempt

resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
calls = []

def host(batch):  # memory gets tight after two batches: a batch above 4 items is out of memory
    calls.append(len(batch))
    if len(calls) > 2 and len(batch) > 4:
        raise MemoryError(f"no room for {len(batch)} items")
    return np.tanh(batch).sum(axis=1)

def fn(x):
    out = jax.ShapeDtypeStruct((), x.dtype)
    return jax.pure_callback(host, out, x, vmap_method="broadcast_all")

real = attempt.compile_program

def compile_or_abort(f, *specs):  # the stand-in: LLVM aborts compiling the retry size
    if sys.argv[2] == "abort" and jax.tree_util.tree_leaves(specs)[0].shape[0] < 8:
        os.abort()
    return real(f, *specs)

attempt.compile_program = compile_or_abort
xs = np.random.default_rng(0).normal(size=(40, 5)).astype(np.float32)
r = batchlab.run_batches(fn, xs, batch_size=8, checkpoint=sys.argv[1], progress=False)
np.save(sys.argv[1] + ".out.npy", r.outputs)
print("DONE", r.complete, r.resumed_items, r.retries, r.batch_sizes)
"""


def test_an_abort_while_compiling_a_retry_size_loses_nothing(tmp_path):
    """Issue 34: under a tight address-space limit LLVM aborts the process while XLA compiles
    the smaller size a memory error asked for (status 134). The stand-in aborts at that very
    point (compile_program for the retry size: a real LLVM abort cannot be had on demand);
    the rerun resumes the checkpoint: the finished batches are kept, the rest runs."""
    script, path = tmp_path / "job.py", tmp_path / "run.ckpt"
    script.write_text(ABORT_SCRIPT)
    run = lambda mode, p: subprocess.run(  # noqa: E731
        [sys.executable, str(script), str(p), mode],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        cwd=HERE.parent,
    )
    first = run("abort", path)
    assert first.returncode == -signal.SIGABRT, (first.returncode, first.stderr[-2000:])
    assert path.exists() and "DONE" not in first.stdout
    second = run("resume", path)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "DONE True 16 " in second.stdout  # the two batches of 8 before the abort kept
    clean = run("resume", tmp_path / "clean.ckpt")
    assert "DONE True 0 " in clean.stdout, clean.stderr[-2000:]
    resumed, uninterrupted = (np.load(f"{p}.out.npy") for p in (path, tmp_path / "clean.ckpt"))
    assert resumed.tobytes() == uninterrupted.tobytes()


def test_orphan_temp_files_are_cleaned_on_the_next_start(tmp_path):
    path = tmp_path / "run.ckpt"
    orphan = tmp_path / ".run.ckpt.abc123.tmp"
    orphan.write_bytes(b"x" * 2**20)  # what a kill during the first (atomic) write leaves
    batchlab.run_batches(item_fn, data(4), batch_size=2, checkpoint=path, progress=False)
    assert sorted(os.listdir(tmp_path)) == ["run.ckpt"]


def test_torn_last_record_is_dropped_damaged_record_refused(tmp_path):
    xs, path = data(12), tmp_path / "run.ckpt"
    clean = batchlab.run_batches(item_fn, xs, batch_size=4, progress=False)
    batchlab.run_batches(item_fn, xs, batch_size=4, checkpoint=path, progress=False)
    blob = path.read_bytes()
    path.write_bytes(blob[:-10])  # a kill in the middle of the last append
    resumed = batchlab.run_batches(item_fn, xs, batch_size=4, checkpoint=path, progress=False)
    assert resumed.resumed_items == 8 and resumed.complete
    equal(resumed, clean)
    damaged = bytearray(path.read_bytes())
    damaged[-40] ^= 0xFF  # one flipped byte inside a complete record
    path.write_bytes(bytes(damaged))
    with pytest.raises(batchlab.CheckpointError, match=r"does not match its SHA-256"):
        batchlab.run_batches(item_fn, xs, batch_size=4, checkpoint=path, progress=False)


# ------------------------------------------------------------------ Ctrl-C
def test_ctrl_c_inside_fn_stops_and_resume_is_bit_identical(tmp_path):
    xs, calls = data(20), {"n": 0}

    def fn(batch):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # Ctrl-C while Python runs fn
        return jax.vmap(item_fn)(batch)

    kw = dict(batch_size=4, strategy="manual", progress=False)
    clean = batchlab.run_batches(jax.vmap(item_fn), xs, **kw)
    path = tmp_path / "run.ckpt"
    with pytest.raises(batchlab.runs.RunInterrupted, match=r"8 of 20 items finished") as info:
        batchlab.run_batches(fn, xs, checkpoint=path, run_name="c", **kw)
    first = info.value.result
    assert not first.complete and "KeyboardInterrupt" in first.stop_reason
    assert first.failures == () and list(first.indices) == list(range(8))
    equal(batchlab.run_batches(fn, xs, checkpoint=path, run_name="c", **kw), clean)


def test_ctrl_c_inside_the_compiled_program_is_not_bisected(tmp_path):
    """A KeyboardInterrupt in a host callback surfaces as JaxRuntimeError: it must stop the run."""
    xs, calls = data(20), {"n": 0}

    def host(v):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return v

    def fn(x):
        x = jax.pure_callback(
            host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential"
        )
        return item_fn(x)

    logger = __import__("logging").getLogger("jax._src.callback")
    level, logger.level = logger.level, 50  # jax logs the callback's traceback
    try:
        path = tmp_path / "run.ckpt"
        kw = dict(batch_size=4, progress=False, checkpoint=path, run_name="p")
        with pytest.raises(KeyboardInterrupt) as info:
            batchlab.run_batches(fn, xs, **kw)
        first = info.value.result
        assert not first.complete and "KeyboardInterrupt" in first.stop_reason
        assert first.failures == ()  # not bisected into "failed items"
        resumed = batchlab.run_batches(fn, xs, **kw)
    finally:
        logger.level = level
    equal(resumed, batchlab.run_batches(item_fn, xs, batch_size=4, progress=False))


def test_sigint_during_the_compiled_program_stops_after_that_batch():
    xs, calls = data(20), {"n": 0}

    def host(v):
        calls["n"] += 1
        if calls["n"] == 7:  # per item (sequential callback): inside the second batch
            os.kill(os.getpid(), signal.SIGINT)  # the kernel's interrupt button
        return v

    def fn(x):
        return item_fn(
            jax.pure_callback(
                host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential"
            )
        )

    with pytest.raises(KeyboardInterrupt, match=r"stopped by Ctrl-C") as info:
        batchlab.run_batches(fn, xs, batch_size=5, progress=False)
    r = info.value.result
    assert not r.complete and "Ctrl-C" in r.stop_reason and list(r.indices) == list(range(10))


# ---------------------------------------------------------- out of memory
def test_real_oom_at_run_time_finds_the_largest_size_that_fits():
    xs = data(50)
    r = batchlab.run_batches(grows(11), xs, batch_size=32, strategy="manual", progress=False)
    assert r.complete and max(r.batch_sizes) == 11 and r.batches[-2].size == 11  # not 8 (32/4)
    assert r.batches[-1].size == r.batches[-1].items == 10  # the remainder, at its own size
    assert all(
        b.status == "out of memory (XLA RESOURCE_EXHAUSTED)"
        for b in r.batches
        if not b.status.startswith("ok")
    )
    # 32 -> 16 fail, 8 runs; then 12, 10 (runs), 11 (runs): bisection between success and failure
    assert [b.size for b in r.batches][:6] == [32, 16, 8, 12, 10, 11]
    equal(r, batchlab.run_batches(item_fn, xs, batch_size=11, progress=False))


def test_real_oom_at_batch_size_one_stops_with_the_result():
    r = batchlab.run_batches(grows(0), data(8), batch_size=4, strategy="manual", progress=False)
    assert r.indices.size == 0 and not r.complete
    assert "out of memory (XLA RESOURCE_EXHAUSTED) even at batch size 1" in r.stop_reason


def test_oom_at_compile_time_is_memory_not_an_error_in_fn(monkeypatch):
    """On TPU (and sometimes GPU) RESOURCE_EXHAUSTED comes from compile(); raise XLA's own error."""
    original = jax.stages.Lowered.compile

    def compile_(self, *a, **k):
        if self.in_avals[0][0].shape[0] > 6:
            raise real_oom()
        return original(self, *a, **k)

    monkeypatch.setattr(jax.stages.Lowered, "compile", compile_)
    xs = data(30)
    r = batchlab.run_batches(item_fn, xs, batch_size=16, progress=False)
    assert r.complete and r.failures == () and max(r.batch_sizes) == 6
    assert any(b.status.startswith("out of memory") for b in r.batches)


def test_oom_during_bisection_ends_in_a_result():
    xs = data(24)
    xs[5, 0] = 1e6  # a bad item: the batch fails, bisection runs halves

    def fn(batch):
        if batch.shape[0] == 4:  # the halves' size runs out of memory (real XLA error)
            v = jnp.ones(BIG, jnp.float32)
            return jnp.outer(v, v)
        if (np.asarray(batch)[:, 0] == 1e6).any():
            raise ValueError("sensor reading out of range")
        return jax.vmap(item_fn)(batch)

    r = batchlab.run_batches(fn, xs, batch_size=8, strategy="manual", progress=False)
    assert r.complete and r.failed_indices == [5] and len(r.indices) == 23
    assert any(b.status.startswith("out of memory") for b in r.batches)


def test_host_memory_error_is_out_of_memory():
    calls = {"n": 0}

    def fn(batch):
        calls["n"] += 1
        if batch.shape[0] > 3:
            raise MemoryError("host allocation failed")
        return jax.vmap(item_fn)(batch)

    r = batchlab.run_batches(fn, data(9), batch_size=8, strategy="manual", progress=False)
    assert r.complete and max(r.batch_sizes) == 3 and r.failures == ()  # 8, 4 fail; 2, 3 run


# ----------------------------------------------- checkpoint folder faults
def test_unwritable_checkpoint_folder_fails_before_any_work(monkeypatch, tmp_path):
    calls = []

    def fn(batch):
        calls.append(1)
        return jax.vmap(item_fn)(batch)

    with pytest.raises(ValueError, match=r"`checkpoint` folder .* does not exist"):
        batchlab.run_batches(
            fn, data(4), batch_size=2, strategy="manual", checkpoint="/nonexistent/ck.ckpt"
        )

    def refuse(*a, **k):
        raise PermissionError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("tempfile.NamedTemporaryFile", refuse)  # what a read-only mount does
    with pytest.raises(ValueError, match=r"`checkpoint` folder .* is not writable \(Read-only"):
        batchlab.run_batches(
            fn, data(4), batch_size=2, strategy="manual", checkpoint=tmp_path / "ck.ckpt"
        )
    assert calls == []


def test_disk_full_mid_run_keeps_the_result_and_the_checkpoint(monkeypatch, tmp_path):
    xs, path = data(20), tmp_path / "run.ckpt"
    clean = batchlab.run_batches(item_fn, xs, batch_size=4, progress=False)
    real_fsync, writes = os.fsync, {"n": 0}

    def fsync(fd):
        writes["n"] += 1
        if writes["n"] == 4:  # the header, two batches, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.warns(RuntimeWarning, match=r"the save of the batch at item 8 failed"):
        first = batchlab.run_batches(item_fn, xs, batch_size=4, checkpoint=path, progress=False)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert f"failed (No space left on device); {str(path)!r} keeps only the 2 batch(es)" in (
        first.checkpoint_error
    )
    assert not first.complete and "No space left" in first.stop_reason
    assert list(first.indices) == list(range(12))  # the batch whose write failed is in the result
    assert len(Journal.open(path, _parts_of(path)).records) == 2  # the checkpoint before it
    resumed = batchlab.run_batches(item_fn, xs, batch_size=4, checkpoint=path, progress=False)
    assert resumed.resumed_items == 8
    equal(resumed, clean)


def _parts_of(path):
    from batchlab.runs.checkpoint import _MAGIC, _decode

    return _decode(path.read_bytes(), len(_MAGIC), path)[0]["parts"]


# ------------------------------------------------------ foreign checkpoints
K = 2.0


def scale_by_k(x):
    return x.sum() * K


class Scaler:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x.sum() * self.k


def closure(k):
    return lambda x: x.sum() * k


def times(x, k):
    return x.sum() * k


FOREIGN = {
    "lambdas differing in a constant": (lambda x: x.sum() * 2, lambda x: x.sum() * 3),
    "closures over different values": (closure(2.0), closure(3.0)),
    "partials with different arguments": (
        functools.partial(times, k=2.0),
        functools.partial(times, k=3.0),
    ),
    "callable objects with different attributes": (Scaler(2.0), Scaler(3.0)),
    "other functions": (item_fn, lambda x: x.sum()),
    "defaults differing": (lambda x, k=2.0: x.sum() * k, lambda x, k=3.0: x.sum() * k),
    "jitted lambdas differing in a constant": (
        jax.jit(lambda x: x.sum() * 2),
        jax.jit(lambda x: x.sum() * 3),
    ),
}


@pytest.mark.parametrize("case", sorted(FOREIGN))
def test_foreign_fn_checkpoint_is_refused(tmp_path, case):
    first, second = FOREIGN[case]
    path = tmp_path / "run.ckpt"
    batchlab.run_batches(first, data(6), batch_size=2, checkpoint=path, progress=False)
    with pytest.raises(batchlab.CheckpointError, match=r"different run \(fn changed"):
        batchlab.run_batches(second, data(6), batch_size=2, checkpoint=path, progress=False)
    again = batchlab.run_batches(first, data(6), batch_size=2, checkpoint=path, progress=False)
    assert again.resumed_items == 6  # the same fn resumes


def test_a_global_the_fn_reads_is_part_of_its_fingerprint(tmp_path):
    global K
    path = tmp_path / "run.ckpt"
    batchlab.run_batches(scale_by_k, data(4), batch_size=2, checkpoint=path, progress=False)
    K = 3.0
    try:
        with pytest.raises(
            batchlab.CheckpointError,
            match=r"fn changed since the journal was written.*run_name='my-run-v1'.*start over",
        ):
            batchlab.run_batches(scale_by_k, data(4), batch_size=2, checkpoint=path, progress=False)
    finally:
        K = 2.0


def test_foreign_items_are_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    batchlab.run_batches(item_fn, data(6), batch_size=2, checkpoint=path, progress=False)
    with pytest.raises(batchlab.CheckpointError, match=r"different run .*items"):
        batchlab.run_batches(
            item_fn, data(6, seed=1), batch_size=2, checkpoint=path, progress=False
        )


@pytest.mark.parametrize(
    "error, said",
    [
        (None, r"TracerArrayConversionError: The numpy\.ndarray conversion method __array__\(\) "),
        (ValueError(), r"ValueError: \)\. Run it without `checkpoint`"),
    ],
)
def test_a_fn_that_cannot_be_traced_asks_for_a_run_name(tmp_path, error, said):
    calls = []

    def fn(x):  # host code a trace cannot see through
        calls.append(1)
        if error is not None:
            raise error
        return np.asarray(x).sum()

    path = tmp_path / "run.ckpt"
    with pytest.raises(batchlab.CheckpointError, match=r"cannot be traced .*\(" + said) as e:
        batchlab.run_batches(fn, data(4), batch_size=2, checkpoint=path, progress=False)
    assert "run_name='my-run-v1'" in str(e.value) and not path.exists()  # before any work


def test_the_journal_header_names_what_the_run_belongs_to(tmp_path):
    from batchlab.runs.checkpoint import digest, fn_fingerprint

    xs, path = data(6), tmp_path / "run.ckpt"
    batchlab.run_batches(item_fn, xs, batch_size=2, checkpoint=path, progress=False)
    spec = jax.ShapeDtypeStruct(xs.shape[1:], xs.dtype)
    assert _parts_of(path) == {
        "fn": fn_fingerprint(item_fn, spec),
        "items": digest(xs)[:16],
        "n_items": 6,
        "device": "cpu (cpu)",
        "check_nan": False,
        "batched": False,
    }
    same = batchlab.run_batches(item_fn, xs, batch_size=2, checkpoint=path, progress=False)
    assert same.resumed_items == 6 and not same.resumed_at_other_size  # its settings were stored


def test_an_npz_file_is_refused_as_a_checkpoint(tmp_path):
    path = tmp_path / "run.npz"
    np.savez(path, x=np.arange(3))
    with pytest.raises(batchlab.CheckpointError, match=r"not a batchlab run journal"):
        batchlab.run_batches(item_fn, data(4), batch_size=2, checkpoint=path, progress=False)


# --------------------------------------------------- failed items on resume
def test_failed_items_are_retried_on_resume(tmp_path):
    xs, broken = data(12), {"on": True}

    def fn(batch):
        if broken["on"] and (np.asarray(batch)[:, 0] == xs[5, 0]).any():
            raise RuntimeError("transient: network file system hiccup")
        return jax.vmap(item_fn)(batch)

    kw = dict(batch_size=4, strategy="manual", progress=False, run_name="flaky")
    path = tmp_path / "run.ckpt"
    first = batchlab.run_batches(fn, xs, checkpoint=path, **kw)
    assert first.failed_indices == [5]
    broken["on"] = False
    retried = batchlab.run_batches(fn, xs, checkpoint=path, **kw)
    assert retried.complete and retried.failures == ()
    equal(retried, batchlab.run_batches(item_fn, xs, batch_size=4, progress=False))


# -------------------------------------------------------- a broken fn
def test_fn_failing_on_every_item_is_a_bug_in_fn():
    def fn(x):
        return x @ jnp.ones((7,))  # wrong shape for every item

    with pytest.raises(BatchFnError, match=r"`fn` fails on every item the same way"):
        batchlab.run_batches(fn, data(8), batch_size=4, progress=False)


def test_batched_fn_losing_the_batch_axis_is_refused():
    with pytest.raises(BatchFnError, match=r"strategy='manual'.*shape \(6,\) for a batch of 8"):
        batchlab.run_batches(
            lambda b: b.sum(axis=1)[:6], data(8), batch_size=8, strategy="manual", progress=False
        )
