"""run_batches: outputs in order, memory limits, bad items, interrupts, resume (fault injection)."""

from __future__ import annotations

import logging
import os
import re
import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close, fails_on_five

import batchlab
from batchlab.runs.errors import is_out_of_memory, short_message

OOM_MESSAGE = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4.00GiB."


def item_fn(x):
    return jnp.tanh(x).sum() * 2.0


def reference(xs):
    return np.asarray(jax.vmap(item_fn)(jnp.asarray(xs)))


def data(n, d=5, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(dtype)


def check_good(result, xs, expected_indices=None):
    """Every good item's output equals the fault-free run's, in input order."""
    full = reference(xs)
    idx = np.arange(len(xs)) if expected_indices is None else np.asarray(expected_indices)
    np.testing.assert_array_equal(result.indices, idx)
    if len(idx):
        assert_close(result.outputs, full[idx])


@pytest.mark.parametrize("n", [0, 1, 7, 16])
@pytest.mark.parametrize("batch_size", [1, 3, 4, 100])
def test_outputs_in_order_with_remainders(n, batch_size):
    xs = data(n)
    r = batchlab.run_batches(item_fn, xs, batch_size=batch_size, progress=False)
    assert r.complete and r.failures == () and r.retries == 0
    check_good(r, xs)
    assert sum(b.items for b in r.batches) == n


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_dtypes_and_list_of_pytrees(dtype):
    items = [{"a": np.full((3,), i, dtype), "b": np.asarray(i, dtype)} for i in range(6)]
    r = batchlab.run_batches(lambda t: t["a"].sum() + t["b"], items, batch_size=4, progress=False)
    assert r.outputs.dtype == dtype
    np.testing.assert_array_equal(r.outputs, [4 * i for i in range(6)])


def test_batched_fn_and_jitted(maybe_jit):
    xs = data(9)
    fn = maybe_jit(jax.vmap(item_fn))
    r = batchlab.run_batches(fn, xs, batch_size=4, strategy="manual", progress=False)
    check_good(r, xs)


def test_batch_size_from_max_batch_size_runs_within_budget():
    xs = data(64, d=32)
    planned = batchlab.max_batch_size(item_fn, xs[0], budget_bytes=4096, upper=64)
    r = batchlab.run_batches(
        item_fn, xs, batch_size=int(planned), budget_bytes=4096, progress=False
    )
    # every full batch at the planned size; the short last one at its own size (64 % planned)
    assert r.batch_sizes == sorted({int(planned), 64 % int(planned)}) and r.retries == 0
    assert r.batches[-1].size == r.batches[-1].items == 64 % int(planned)
    check_good(r, xs)


@pytest.mark.parametrize(("name", "want"), [("cpu", ()), ("tpu", (128, 8))])
def test_the_tiles_searched_are_the_backend_facts_largest_first(monkeypatch, name, want):
    """The search steps by the larger tile first (XLA:TPU's lane of 128, then its sublanes of 8)."""
    from batchlab._util.backend import FACTS
    from batchlab.runs import search

    monkeypatch.setattr(search, "backend_facts", lambda: FACTS[name])
    assert search.backend_tiles() == want


@pytest.mark.parametrize("tiles", [(), (128, 8)])
def test_over_budget_the_run_searches_the_plans_and_runs_only_what_fits(monkeypatch, tiles):
    """A batch over the budget by its plan is not halved run by run: max_batch_size's search
    finds the largest size that fits (along the backend's tiles where it pads), that size runs."""
    for where in ("runner", "budget"):  # the run's search and max_batch_size's, on one "backend"
        monkeypatch.setattr(f"batchlab.runs.{where}.backend_tiles", lambda: tiles)
    xs, budget = data(300, d=32), 3 * 4096
    ref = batchlab.max_batch_size(item_fn, xs[0], budget_bytes=budget, upper=255)
    best = int(ref)
    assert 1 < best < 255
    with batchlab.count_compiles() as compiles:
        r = batchlab.run_batches(item_fn, xs, batch_size=256, budget_bytes=budget, progress=False)
    assert [b.size for b in r.batches[:2]] == [256, best] and r.retries == 1
    assert r.batches[0].status.startswith("over budget") and r.batch_sizes[-1] == best
    assert max(r.batch_sizes) == best and r.complete
    # the sizes max_batch_size's search compiles (the answer among them: compiled once, run as
    # compiled), plus 256 and the short last batch; halving run by run compiled ~2 log2(256)
    assert compiles.count <= ref.compilations + 2, (compiles.count, ref.compilations)
    check_good(r, xs)


def test_nothing_fits_budget():
    r = batchlab.run_batches(item_fn, data(4, d=64), batch_size=4, budget_bytes=16, progress=False)
    assert not r.complete
    said = re.fullmatch(
        r"over budget \(planned bytes > budget_bytes\) even at batch size 1: "
        r"batch of 1 plans (\d+) bytes > budget_bytes=16",
        r.stop_reason,
    )
    assert said and int(said[1]) >= 64 * 4  # at least the item's own 64 float32 values


@pytest.mark.parametrize("seed", [0, 3])
def test_bad_values_found_by_bisection(seed):
    xs = data(37)
    bad = sorted(np.random.default_rng(seed).choice(37, size=3, replace=False).tolist())
    xs[bad, 0] = 1e6  # a marker the fake fn rejects

    calls = []

    def picky(batch):
        calls.append(batch.shape[0])
        if (np.asarray(batch)[:, 0] == 1e6).any():
            raise ValueError("item out of range")
        return jax.vmap(item_fn)(batch)

    r = batchlab.run_batches(picky, xs, batch_size=8, strategy="manual", progress=False)
    assert r.complete and r.failed_indices == bad
    assert all("item out of range" in f.message for f in r.failures)
    check_good(r, xs, [i for i in range(37) if i not in bad])
    assert len(calls) < 37  # bisection, not one call per item


def test_bad_shapes_and_dtypes_in_a_list():
    items = [np.full((4,), i, np.float32) for i in range(10)]
    items[2] = np.zeros((5,), np.float32)
    items[7] = np.zeros((4,), np.int32)
    r = batchlab.run_batches(lambda x: x.sum(), items, batch_size=4, progress=False)
    assert r.failed_indices == [2, 7] and {f.kind for f in r.failures} == {"bad item"}
    assert 0 <= r.seconds < 60  # this call's wall clock
    assert "item 2 is (5,) float32 where the other items are (4,) float32" in r.failures[0].message
    assert "int32" in r.failures[1].message
    np.testing.assert_array_equal(r.outputs, [4.0 * i for i in range(10) if i not in (2, 7)])


def test_bad_items_of_pytrees_are_described_leaf_by_leaf():
    x = np.ones(3, np.float32)
    items = [(x, x)] * 4 + [(x, "label"), (x,)]
    r = batchlab.run_batches(lambda p: p[0] @ p[1], items, batch_size=2, progress=False)
    assert r.failed_indices == [4, 5]
    common = "PyTreeDef((*, *)) with leaves [(3,) float32, (3,) float32]"
    assert [f.message for f in r.failures] == [
        f"item 4 is PyTreeDef((*, *)) with leaves [(3,) float32, a str (not an array)] "
        f"where the other items are {common}",
        f"item 5 is (3,) float32 where the other items are {common}",
    ]
    with pytest.raises(TypeError, match=r"^`items` must hold arrays .*; most items are a str "):
        batchlab.run_batches(lambda s: s, ["a", "b", x], batch_size=2, progress=False)
    # a list where the others are tuples is another structure, with the same leaves
    r = batchlab.run_batches(
        lambda p: p[0] @ p[1], [(x, x)] * 3 + [[x, x]], batch_size=2, progress=False
    )
    assert r.failed_indices == [3] and "item 3 is PyTreeDef([*, *]) with" in r.failures[0].message


def test_items_as_one_array_need_an_item_axis():
    r = batchlab.run_batches(
        lambda v: v * 2, np.arange(5.0, dtype=np.float32), batch_size=2, progress=False
    )
    assert r.outputs.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]  # items of shape ()
    for bad, got in ((np.float32(3.0), "float32"), (jnp.asarray(3.0), "ArrayImpl"), (3, "int")):
        with pytest.raises(
            TypeError, match=rf"with the items along axis 0, got {got}; wrap single"
        ):
            batchlab.run_batches(lambda v: v, bad, batch_size=2, progress=False)


def test_nan_check():
    xs = data(12)
    xs[5, 1] = np.nan
    r = batchlab.run_batches(item_fn, xs, batch_size=4, check_nan=True, progress=False)
    assert r.failed_indices == [5] and "NaN" in r.failures[0].message
    check_good(r, xs, [i for i in range(12) if i != 5])
    assert batchlab.run_batches(item_fn, xs, batch_size=4, progress=False).failures == ()


def test_nan_check_reads_every_float_leaf_of_a_tree_of_rows():
    """A NaN in the first float leaf is found though the last one is clean; rows of any shape;
    an integer leaf is not checked (it cannot hold NaN)."""
    xs = data(8)

    def fn(x):
        return {"a": jnp.outer(x, x) * x[0], "b": jnp.ones(3), "n": jnp.arange(2)}

    xs[6, 0] = np.nan
    r = batchlab.run_batches(fn, xs, batch_size=4, check_nan=True, progress=False)
    assert r.failed_indices == [6] and r.failures[0].kind == "NaN/inf output"
    assert r.outputs["a"].shape == (7, 5, 5) and r.outputs["n"].dtype == np.int32


def test_keyboard_interrupt_inside_a_batch_then_resume(tmp_path):
    xs = data(30)
    calls = {"n": 0}

    def interrupted_once(batch):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return jax.vmap(item_fn)(batch)

    path = str(tmp_path / "run.ckpt")
    kw = dict(batch_size=4, strategy="manual", checkpoint=path, progress=False, run_name="ki")
    with pytest.raises(
        KeyboardInterrupt, match=r"8 of 30 items finished.*rerun the same call"
    ) as info:
        batchlab.run_batches(interrupted_once, xs, **kw)  # run_name: fn reads a call counter
    r = info.value.result
    assert isinstance(info.value, batchlab.runs.RunInterrupted)
    assert not r.complete and "KeyboardInterrupt" in r.stop_reason
    check_good(r, xs, range(8))
    resumed = batchlab.run_batches(interrupted_once, xs, **kw)
    assert resumed.complete and resumed.resumed_items == 8
    uninterrupted = batchlab.run_batches(
        jax.vmap(item_fn), xs, batch_size=4, strategy="manual", progress=False
    )
    np.testing.assert_array_equal(resumed.outputs, uninterrupted.outputs)
    np.testing.assert_array_equal(resumed.indices, uninterrupted.indices)


def test_ctrl_c_stops_after_the_current_batch(tmp_path):
    xs = data(20)
    calls = {"n": 0}

    def send_sigint(batch):
        calls["n"] += 1
        if calls["n"] == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return jax.vmap(item_fn)(batch)

    with pytest.raises(
        KeyboardInterrupt, match=r"10 of 20 items finished.*pass checkpoint="
    ) as info:
        batchlab.run_batches(send_sigint, xs, batch_size=5, strategy="manual", progress=False)
    r = info.value.result
    assert not r.complete and "Ctrl-C" in r.stop_reason
    check_good(r, xs, range(10))  # the batch running when Ctrl-C came is kept
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_faults_together_resume_equals_fault_free(tmp_path):
    """Budget halving + NaN items + Ctrl-C + resume: the same result as one clean run."""
    xs = data(45, d=32)
    xs[[4, 30], 2] = np.nan
    trigger = {"at": -1, "calls": 0}

    def batch_fn(batch):
        if isinstance(batch, np.ndarray):  # a real call, not the planning trace
            trigger["calls"] += 1
            if trigger["calls"] == trigger["at"]:
                os.kill(os.getpid(), signal.SIGINT)
        return jax.vmap(item_fn)(batch)

    fits = int(batchlab.max_batch_size(item_fn, xs[0], budget_bytes=2048))
    kw = dict(
        batch_size=2 * fits,
        budget_bytes=2048,
        check_nan=True,
        strategy="manual",
        progress=False,
        run_name="together",  # batch_fn reads a call counter: name the run
    )
    clean = batchlab.run_batches(batch_fn, xs, **kw)
    assert clean.complete and clean.retries >= 1 and clean.failed_indices == [4, 30]
    assert clean.budget_bytes == 2048  # the result says what it ran under
    assert clean.batch_sizes == [fits]
    path = str(tmp_path / "ck.ckpt")
    trigger.update(at=2, calls=0)
    with pytest.raises(KeyboardInterrupt) as info:
        batchlab.run_batches(batch_fn, xs, checkpoint=path, **kw)
    first = info.value.result
    done = sum(b.items for b in first.batches if b.status.startswith("ok"))
    assert not first.complete and "Ctrl-C" in first.stop_reason and done == 2 * fits
    resumed = batchlab.run_batches(batch_fn, xs, checkpoint=path, **kw)
    assert resumed.complete and resumed.resumed_items == 2 * fits
    np.testing.assert_array_equal(resumed.outputs, clean.outputs)
    np.testing.assert_array_equal(resumed.indices, clean.indices)
    assert resumed.failures == clean.failures and resumed.retries == clean.retries
    again = batchlab.run_batches(batch_fn, xs, checkpoint=path, **kw)  # nothing left to do
    assert again.resumed_items == 45 and len(again.batches) == len(resumed.batches)
    np.testing.assert_array_equal(again.outputs, clean.outputs)


def test_checkpoint_mismatch_is_refused(tmp_path):
    path = str(tmp_path / "ck.ckpt")
    batchlab.run_batches(item_fn, data(6), batch_size=2, checkpoint=path, progress=False)
    with pytest.raises(batchlab.CheckpointError, match=r"different run .*items"):
        batchlab.run_batches(
            item_fn, data(6, seed=1), batch_size=2, checkpoint=path, progress=False
        )
    with pytest.raises(batchlab.CheckpointError, match=r"different run .*check_nan: False there"):
        batchlab.run_batches(
            item_fn, data(6), batch_size=2, check_nan=True, checkpoint=path, progress=False
        )
    other_size = batchlab.run_batches(
        item_fn, data(6), batch_size=3, checkpoint=path, progress=False
    )
    assert other_size.resumed_items == 6 and other_size.resumed_at_other_size  # not refused


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(batch_size=0), ValueError, "`batch_size` must be at least 1"),
        (dict(batch_size="big"), TypeError, "`batch_size` must be a positive int"),
        (dict(budget_bytes=-5), ValueError, "`budget_bytes` must be at least 1"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        batchlab.run_batches(item_fn, data(4), progress=False, **{"batch_size": 2, **kwargs})


def test_bad_items_argument():
    with pytest.raises(TypeError, match=r"`fn` must be a function"):
        batchlab.run_batches(3, data(4), batch_size=2)
    with pytest.raises(TypeError, match=r"`items` must be a list of items or an array"):
        batchlab.run_batches(item_fn, "abc", batch_size=2)
    with pytest.raises(ValueError, match=r"disagree on the number of items"):
        batchlab.run_batches(item_fn, (np.ones((3, 2)), np.ones((4, 2))), batch_size=2)
    with pytest.raises(TypeError, match=r"`items` must hold arrays"):
        batchlab.run_batches(item_fn, ["a", "b"], batch_size=2)


def test_error_helpers():
    assert is_out_of_memory(jax.errors.JaxRuntimeError(OOM_MESSAGE))
    assert is_out_of_memory(MemoryError())
    assert not is_out_of_memory(jax.errors.JaxRuntimeError("INTERNAL: something else"))
    assert short_message(RuntimeError("-----\nEqxError: the text\n-----")) == "EqxError: the text"
    assert (
        short_message(ValueError("bad\n  detail\nValueError: the real cause"))
        == "ValueError: the real cause"
    )
    assert short_message(ValueError("x")) == "ValueError: x"


def test_result_repr_and_output_lookup():
    xs = data(6)
    xs[3, 0] = np.nan
    r = batchlab.run_batches(item_fn, xs, batch_size=4, check_nan=True, progress=False)
    text = repr(r)
    assert "5 of 6 with output, 1 failed; complete" in text and "failed item 3" in text
    assert "<table" in r._repr_html_()


def test_run_batches_plans_a_host_loop_by_its_host_plan():
    """A strategy="host" function is called as given; its HostPlan is what the budget checks."""

    def outer(x):
        return jnp.tanh(jnp.outer(x, x)) @ x

    host = batchlab.batch(outer, strategy="host", chunk_size=8)
    xs = jax.random.normal(jax.random.key(0), (100, 32))
    budget = host.plan(xs[:40]).planned_bytes  # 40 items fit, 41 do not
    assert host.plan(xs[:41]).planned_bytes > budget
    r = batchlab.run_batches(
        host, xs, strategy="manual", batch_size=64, budget_bytes=budget, progress=False
    )
    assert (
        r.complete and max(r.batch_sizes) == 40
    )  # 64 was over budget by its plan: retried smaller
    assert any(b.status.startswith("over budget") for b in r.batches if b.size == 64)
    assert jnp.allclose(r.outputs, jax.vmap(outer)(xs), atol=1e-5)


def test_bisecting_a_callback_error_prints_nothing_and_keeps_the_traceback(capfd):
    """Issue 34: JAX logs each pure_callback failure with its traceback (~700 lines for one
    bisection); the run prints none of it, the failure's `.detail` keeps JAX's text."""

    xs = np.arange(16, dtype=np.float32).reshape(16, 1)
    r = batchlab.run_batches(fails_on_five, xs, batch_size=8, progress=False)
    printed = capfd.readouterr()
    assert len((printed.out + printed.err).splitlines()) <= 3, printed.err[:2000]
    assert r.failed_indices == [5] and r.failures[0].message == "ValueError: item 5 is bad"
    assert "pure_callback" in r.failures[0].detail and "item 5 is bad" in r.failures[0].detail
    assert sum(b.depth > 0 for b in r.batches) >= 6  # it did bisect: every half ran quietly
    assert not logging.getLogger("jax._src.callback").filters  # JAX's logger as it was


@pytest.mark.parametrize(
    "setting, shown",
    [(None, True), ("", True), ("0", True), ("False", True), ("1", False), ("TRUE", False)],
)
def test_the_progress_bar_counts_items_and_honours_tqdm_disable(
    monkeypatch, capsys, tmp_path, setting, shown
):
    """tqdm.notebook ignores TQDM_DISABLE, so run_batches reads it (any case) for notebooks too."""
    if setting is None:
        monkeypatch.delenv("TQDM_DISABLE", raising=False)
    else:
        monkeypatch.setenv("TQDM_DISABLE", setting)
    path = tmp_path / "run.ckpt"
    with pytest.raises(KeyboardInterrupt):
        batchlab.run_batches(_stop_in_the_third_call, data(12), batch_size=4, checkpoint=path,
                             strategy="manual", run_name="bar")  # fmt: skip
    capsys.readouterr()
    STOPS["on"] = False
    batchlab.run_batches(_stop_in_the_third_call, data(12), batch_size=4, checkpoint=path,
                         strategy="manual", run_name="bar")  # fmt: skip
    err = capsys.readouterr().err
    assert ("run_batches: 100%" in err and "12/12" in err and "item/s" in err) == shown, err
    STOPS.update(on=True, calls=0)


STOPS = {"on": True, "calls": 0}


def _stop_in_the_third_call(batch):
    STOPS["calls"] += 1
    if STOPS["on"] and STOPS["calls"] == 3:
        raise KeyboardInterrupt
    return jax.vmap(item_fn)(batch)
