"""Resumes that keep every finished item: another batch size, a manual fn by name, refusals in
words, damaged files, failed saves, and Ctrl-C in a script (issues 24 and 26)."""

from __future__ import annotations

import copy
import errno
import functools
import os
import signal
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import batchlab
from batchlab.runs.checkpoint import _MAGIC

SCALE = 2.0
LOG_PATH = "run-1.log"  # what a script takes from sys.argv: it does not change the outputs


def item_fn(x):
    return jnp.tanh(x).sum() * SCALE


def logged_fn(x):
    _ = LOG_PATH  # read, but not used in the computation
    return jnp.tanh(x).sum() * 2.0


def data(n, d=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def counting(fn, seen):
    """A batched fn that records every item index it computes (item value -> index)."""

    def batched(batch):
        if isinstance(batch, np.ndarray):  # a real call, not planning's trace
            seen.extend(np.asarray(batch)[:, -1].astype(int).tolist())
        return jax.vmap(fn)(batch[:, :-1])

    return batched


def indexed(n):
    xs = data(n)
    return np.concatenate([xs, np.arange(n, dtype=np.float32)[:, None]], axis=1)


def interrupt_after(fn, calls):
    def batched(batch):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        return fn(batch)

    return batched


@pytest.mark.parametrize("first, second", [(8, 3), (3, 8), (8, 8)])
def test_resume_at_another_batch_size_recomputes_nothing(tmp_path, first, second):
    xs, path = indexed(30), tmp_path / "run.ckpt"
    clean = batchlab.run_batches(
        counting(item_fn, []), xs, batch_size=5, strategy="manual", progress=False
    )
    seen, calls = [], []
    kw = dict(strategy="manual", progress=False, checkpoint=path, run_name="sizes")
    with pytest.raises(KeyboardInterrupt):
        batchlab.run_batches(
            interrupt_after(counting(item_fn, seen), calls), xs, batch_size=first, **kw
        )
    done = sorted(seen)
    assert done == list(range(2 * first))
    seen.clear()
    budget = 2**20 if second == first else None  # same size, another budget: other settings
    resumed = batchlab.run_batches(
        counting(item_fn, seen), xs, batch_size=second, budget_bytes=budget, **kw
    )
    assert resumed.complete and resumed.resumed_items == 2 * first and resumed.resumed_at_other_size
    # no finished item computed again (a last, short batch repeats its last item as padding)
    assert min(seen) == 2 * first and sorted(set(seen)) == list(range(2 * first, 30))
    np.testing.assert_array_equal(resumed.indices, clean.indices)
    np.testing.assert_allclose(resumed.outputs, clean.outputs, rtol=1e-6)
    assert "other batch settings" in repr(resumed)


CALLS: list = []
SEEN: list = []


def logged_batch(batch):
    if len(CALLS) == 2 and STOP["on"]:
        raise KeyboardInterrupt  # a kill after two saved batches
    CALLS.append(1)
    SEEN.extend(np.asarray(batch)[:, -1].astype(int).tolist())
    return jax.vmap(logged_fn)(batch[:, :-1])


STOP = {"on": True}


def test_a_manual_fn_resumes_by_its_source_or_by_name_losing_nothing(tmp_path):
    xs, path = indexed(24), tmp_path / "run.ckpt"
    kw = dict(batch_size=4, strategy="manual", checkpoint=path, progress=False)
    CALLS.clear(), SEEN.clear()
    STOP["on"] = True
    with pytest.raises(KeyboardInterrupt):  # no run_name: fn's source names the run
        batchlab.run_batches(logged_batch, xs, **kw)
    assert sorted(SEEN) == list(range(8))
    STOP["on"] = False
    SEEN.clear()
    resumed = batchlab.run_batches(logged_batch, xs, **kw)
    assert resumed.complete and resumed.resumed_items == 8
    assert sorted(SEEN) == list(range(8, 24))  # every finished item kept, none recomputed
    clean = batchlab.run_batches(logged_fn, xs[:, :-1], batch_size=4, progress=False)
    np.testing.assert_array_equal(resumed.outputs, clean.outputs)
    named = dict(kw, checkpoint=tmp_path / "named.ckpt", run_name="my-run-v1")
    batchlab.run_batches(logged_batch, xs, **named)
    again = batchlab.run_batches(lambda b: logged_batch(b), xs, **named)  # the name vouches
    assert again.resumed_items == 24  # the same name resumes again, whatever fn is now


class Scaler:
    def __init__(self, k):
        self.k = k

    def __call__(self, b):
        return b * self.k


def times(b, k):
    return b * k


def scaled_by(k):
    return lambda b: b * k


def twice(b):
    return b * 2


def thrice(b):
    return b * 3


@pytest.mark.parametrize(
    "before, after",
    [
        (twice, thrice),  # another body
        (lambda b: b * 2, lambda b: b * 3),
        (scaled_by(2), scaled_by(3)),  # a closure 2 -> 3
        (functools.partial(times, k=2), functools.partial(times, k=3)),
        (Scaler(2), Scaler(3)),
        (Scaler(2).__call__, Scaler(3).__call__),
    ],
    ids=["body", "lambda", "closure", "partial", "object", "method"],
)
def test_a_changed_manual_fn_is_refused_and_the_same_one_resumes(tmp_path, before, after):
    """Issue 48's five faults that lost data: each changed function is refused before any work;
    the unchanged one (a new object of the same code and values) resumes."""
    xs, path = np.arange(12, dtype=np.float32).reshape(6, 2), tmp_path / "run.ckpt"
    kw = dict(batch_size=2, strategy="manual", checkpoint=path, progress=False)
    first = batchlab.run_batches(before, xs[:4], **dict(kw, checkpoint=tmp_path / "same.ckpt"))
    fresh = copy.deepcopy(before)  # the same code and values, another object
    same = batchlab.run_batches(fresh, xs[:4], **dict(kw, checkpoint=tmp_path / "same.ckpt"))
    assert same.resumed_items == 4 and np.array_equal(same.outputs, first.outputs)
    batchlab.run_batches(before, xs, **kw)
    journal = path.read_bytes()
    with pytest.raises(batchlab.CheckpointError, match=r"fn changed since the journal.*source"):
        batchlab.run_batches(after, xs, **kw)
    assert path.read_bytes() == journal  # refused: no stale output mixed with new ones


def test_a_global_that_does_not_change_the_jaxpr_resumes_without_run_name(tmp_path):
    """The fingerprint is the program jit compiles: a log path read in Python is the same run,
    a constant that enters the program is not."""
    global LOG_PATH, SCALE
    path = tmp_path / "run.ckpt"
    first = batchlab.run_batches(logged_fn, data(8), batch_size=4, checkpoint=path, progress=False)
    LOG_PATH = "run-2.log"  # the next session takes another log path from sys.argv
    try:
        again = batchlab.run_batches(
            logged_fn, data(8), batch_size=4, checkpoint=path, progress=False
        )
        assert again.resumed_items == 8 and np.array_equal(again.outputs, first.outputs)
        batchlab.run_batches(item_fn, data(8), batch_size=4, checkpoint=path.with_suffix(".2"))
        SCALE = 3.0
        with pytest.raises(batchlab.CheckpointError, match=r"fn changed since the journal"):
            batchlab.run_batches(
                item_fn, data(8), batch_size=4, checkpoint=path.with_suffix(".2"), progress=False
            )
    finally:
        LOG_PATH, SCALE = "run-1.log", 2.0


def test_run_name_refusals_say_how_to_resume(tmp_path):
    path = tmp_path / "run.ckpt"
    batchlab.run_batches(
        item_fn, data(4), batch_size=2, checkpoint=path, run_name="a", progress=False
    )
    with pytest.raises(
        batchlab.CheckpointError, match=r"different run \(run_name: 'a' there, 'b' now\)"
    ):
        batchlab.run_batches(
            item_fn, data(4), batch_size=2, checkpoint=path, run_name="b", progress=False
        )
    with pytest.raises(
        batchlab.CheckpointError, match=r"different run \(run_name: 'a' there, None now\)"
    ):
        batchlab.run_batches(item_fn, data(4), batch_size=2, checkpoint=path, progress=False)


def test_run_name_still_checks_the_items(tmp_path):
    path = tmp_path / "run.ckpt"
    batchlab.run_batches(item_fn, data(4), batch_size=2, checkpoint=path, progress=False)
    with pytest.raises(
        batchlab.CheckpointError, match=r"different run \(items: .*pass the same items"
    ):
        batchlab.run_batches(
            item_fn, data(4, seed=1), batch_size=2, checkpoint=path, run_name="x", progress=False
        )


@pytest.mark.parametrize("keep", [0, 5, len(_MAGIC) - 1, len(_MAGIC) + 3])
def test_a_truncated_checkpoint_is_damaged_not_another_run(tmp_path, keep):
    path = tmp_path / "run.ckpt"
    batchlab.run_batches(item_fn, data(4), batch_size=2, checkpoint=path, progress=False)
    path.write_bytes(path.read_bytes()[:keep])
    with pytest.raises(batchlab.CheckpointError, match=r"corrupt .*cut short") as info:
        batchlab.run_batches(item_fn, data(4), batch_size=2, checkpoint=path, progress=False)
    assert "different run" not in str(info.value)


def test_a_checkpoint_that_cannot_be_created_fails_before_any_work(monkeypatch, tmp_path):
    calls = []
    real = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(
        batchlab.CheckpointError, match=r"could not be created \(No space left.*nothing has run"
    ):
        batchlab.run_batches(
            lambda b: calls.append(1) or b,
            data(4),
            batch_size=2,
            strategy="manual",
            checkpoint=tmp_path / "c.ckpt",
            run_name="v1",
        )
    monkeypatch.setattr(os, "fsync", real)
    assert calls == [] and not (tmp_path / "c.ckpt").exists()


def test_a_failed_first_save_is_said_in_the_result_and_on_screen(monkeypatch, tmp_path):
    path, real, n = tmp_path / "run.ckpt", os.fsync, {"calls": 0}

    def fsync(fd):
        n["calls"] += 1
        if n["calls"] == 2:  # the header went through; the first batch's save does not
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.warns(
        RuntimeWarning, match=r"run_batches stopped: the save of the batch at item 0"
    ):
        r = batchlab.run_batches(item_fn, data(8), batch_size=4, checkpoint=path, progress=False)
    monkeypatch.setattr(os, "fsync", real)
    assert not r.complete and "keeps only the 0 batch(es)" in r.checkpoint_error
    assert list(r.indices) == [0, 1, 2, 3] and "CHECKPOINT NOT SAVED" in repr(r)
    resumed = batchlab.run_batches(item_fn, data(8), batch_size=4, checkpoint=path, progress=False)
    assert resumed.complete and resumed.resumed_items == 0 and resumed.checkpoint_error is None


def test_a_second_ctrl_c_stops_at_once_and_resume_is_identical(tmp_path):
    xs, path, calls = data(20), tmp_path / "run.ckpt", []

    def fn(batch):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)  # the first: stop after this batch
            os.kill(os.getpid(), signal.SIGINT)  # the second: stop now
        return jax.vmap(item_fn)(batch)

    kw = dict(batch_size=4, strategy="manual", checkpoint=path, run_name="twice", progress=False)
    with pytest.raises(KeyboardInterrupt) as info:
        batchlab.run_batches(fn, xs, **kw)
    assert list(info.value.result.indices) == [0, 1, 2, 3]  # the batch in flight is dropped
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    resumed = batchlab.run_batches(fn, xs, **kw)
    assert resumed.resumed_items == 4 and resumed.complete
    clean = batchlab.run_batches(item_fn, xs, batch_size=4, progress=False)
    np.testing.assert_array_equal(resumed.outputs, clean.outputs)


SCRIPT = """
import os, signal, sys
import jax, jax.numpy as jnp, numpy as np
import batchlab

calls = []

def fn(batch):
    calls.append(1)
    if len(calls) == 2 and sys.argv[2] == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the terminal
    return jax.vmap(lambda x: jnp.tanh(x).sum())(batch)

xs = np.arange(60, dtype=np.float32).reshape(20, 3) / 60
r = batchlab.run_batches(fn, xs, batch_size=4, strategy="manual", checkpoint=sys.argv[1],
                         run_name="script", progress=False)
print("NEXT LINE RAN", r.complete, r.resumed_items)
"""


def test_ctrl_c_in_a_script_stops_it_with_its_work_saved(tmp_path):
    script, path = tmp_path / "job.py", tmp_path / "run.ckpt"
    script.write_text(textwrap.dedent(SCRIPT))
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    run = lambda mode: subprocess.run(  # noqa: E731
        [sys.executable, str(script), str(path), mode],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=Path(__file__).parent.parent,
    )
    first = run("interrupt")
    assert first.returncode != 0 and "NEXT LINE RAN" not in first.stdout
    assert "RunInterrupted: run_batches stopped by Ctrl-C" in first.stderr
    assert "8 of 20 items finished" in first.stderr
    second = run("resume")
    assert second.returncode == 0, second.stderr[-2000:]
    assert "NEXT LINE RAN True 8" in second.stdout


SLOW_SCRIPT = """
import os, sys, time
import jax, jax.numpy as jnp, numpy as np
import batchlab

def fn(batch):
    print("batch", os.getpid(), flush=True)
    time.sleep(0.2)
    return jax.vmap(lambda x: jnp.tanh(x).sum())(batch)

xs = np.arange(60, dtype=np.float32).reshape(20, 3) / 60
r = batchlab.run_batches(fn, xs, batch_size=4, strategy="manual", checkpoint=sys.argv[1],
                         run_name="script", progress=False)
print("NEXT LINE RAN", r.complete, r.resumed_items)
"""


def test_a_script_stopped_by_a_real_sigint_exits_with_status_130(tmp_path):
    """Issue 34: a Ctrl-C'd script exited 1 (CPython exits by SIGINT only for a plain
    KeyboardInterrupt; RunInterrupted is a subclass); now a shell reads 130."""
    script, path = tmp_path / "job.py", tmp_path / "run.ckpt"
    script.write_text(SLOW_SCRIPT)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    shell = subprocess.Popen(  # the script in a shell, as make or a CI step runs it
        ["sh", "-c", f'"{sys.executable}" "{script}" "{path}"; echo "status $?"'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=Path(__file__).parent.parent,
    )
    first = shell.stdout.readline().split()  # fn runs: the run's SIGINT handler is in place
    assert first[0] == "batch", first
    os.kill(int(first[1]), signal.SIGINT)  # a real SIGINT to the script, as Ctrl-C sends it
    out, err = shell.communicate(timeout=120)
    assert "status 130" in out, (out, err[-2000:])
    assert "NEXT LINE RAN" not in out and "RunInterrupted: run_batches stopped by Ctrl-C" in err
    again = subprocess.run(
        [sys.executable, str(script), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=Path(__file__).parent.parent,
    )
    assert again.returncode == 0 and "NEXT LINE RAN True" in again.stdout, again.stderr[-2000:]


class Pooled(typing.NamedTuple):
    total: jax.Array
    peak: jax.Array


def pooled(x):  # one item; `x @ x` fails on a batch's shape
    return Pooled(x @ x, x.max())


def pooled_batch(batch):  # a whole batch; fails on one item's shape
    return Pooled((batch * batch).sum(axis=1), batch.max(axis=1))


@pytest.mark.parametrize("strategy", ["vmap", "manual"])
def test_a_resume_rebuilds_a_namedtuple_output_the_journal_cannot_store(tmp_path, strategy):
    # the journal stores dicts, lists and tuples; a namedtuple's structure is traced again
    xs, path = data(10), tmp_path / "run.ckpt"
    fn = pooled if strategy == "vmap" else pooled_batch
    kw = dict(batch_size=4, strategy=strategy, progress=False, checkpoint=path, run_name="pool")
    first = batchlab.run_batches(fn, xs, **kw)
    resumed = batchlab.run_batches(fn, xs, **kw)  # every item from the journal
    assert resumed.resumed_items == 10 and first.complete and resumed.complete
    assert type(resumed.outputs) is Pooled and type(first.outputs) is Pooled
    np.testing.assert_allclose(resumed.outputs.total, (xs * xs).sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(resumed.outputs.peak, xs.max(axis=1))


def test_a_resume_runs_the_failed_items_first_then_goes_on_at_its_size(tmp_path):
    xs, path, state = indexed(10), tmp_path / "run.ckpt", {"bad": True}
    xs[1, 0] = 1e6  # a marker: item 1 fails while "bad" holds

    def fn(batch):
        b = np.asarray(batch)
        if state["bad"] and 4 in b[:, -1]:
            raise KeyboardInterrupt  # stopped at the second window
        if state["bad"] and (b[:, 0] == 1e6).any():
            raise ValueError("item out of range")
        return jax.vmap(item_fn)(batch[:, :-1])

    kw = dict(batch_size=4, strategy="manual", progress=False, checkpoint=path, run_name="retry")
    with pytest.raises(KeyboardInterrupt):
        batchlab.run_batches(fn, xs, **kw)
    state["bad"] = False  # fixed: item 1 runs now
    r = batchlab.run_batches(fn, xs, **kw)
    assert r.complete and r.failures == () and r.resumed_items == 4
    new = [(b.start, b.size, b.items, b.status) for b in r.batches[-3:]]
    # the retried item alone (a short batch sizes nothing), then the run at 4 from item 4
    assert new == [(1, 1, 1, "ok"), (4, 4, 4, "ok"), (8, 2, 2, "ok")], new


def test_a_checkpoint_written_on_another_device_is_refused_not_mixed_in(tmp_path, monkeypatch):
    """A TPU's default float32 matmul is one bf16 pass: its outputs must not join a CPU's."""
    path = tmp_path / "run.ckpt"
    first = batchlab.run_batches(item_fn, data(4), batch_size=2, checkpoint=path, progress=False)
    assert first.complete
    monkeypatch.setattr("batchlab.runs.runner.device_label", lambda: "tpu (TPU v5 lite)")
    with pytest.raises(batchlab.CheckpointError, match=r"device: 'cpu \(cpu\)' there, 'tpu"):
        batchlab.run_batches(item_fn, data(4), batch_size=2, checkpoint=path, progress=False)
