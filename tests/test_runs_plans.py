"""Planned bytes with closed-over weights equal the plan with them as arguments (issue 26)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import load_benchmark

import batchlab
from batchlab.measuring.plan import batch_planner, batch_spec, compile_program, hoisted_const_bytes
from batchlab.runs import calibration
from batchlab.runs.errors import is_out_of_memory

D = 64
W = jax.random.normal(jax.random.key(0), (D, D), jnp.float32) / D  # not constant-foldable
ITEM = jax.ShapeDtypeStruct((D,), jnp.float32)
W_SPEC = jax.ShapeDtypeStruct(W.shape, W.dtype)


def closed(x):
    return jnp.tanh(jnp.tanh(x @ W) @ W)


def with_w(x, w):
    return jnp.tanh(jnp.tanh(x @ w) @ w)


@pytest.mark.parametrize("size", [1, 7, 64, 300])
@pytest.mark.parametrize(
    "strategy, chunk",
    [("vmap", None), ("map", None), ("chunked", 16)],
    ids=["vmap", "map", "chunked"],
)
@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit], ids=["plain", "jitted"])
def test_closed_over_weights_plan_as_arguments(size, strategy, chunk, wrap):
    f_closed = batchlab.batch(
        batchlab.measuring.plan.unjit(wrap(closed)), strategy=strategy, chunk_size=chunk
    )
    f_args = batchlab.batch(with_w, strategy=strategy, chunk_size=chunk, in_axes=(0, None))
    plan_closed = batch_planner(f_closed)(batch_spec(ITEM, size))
    plan_args = batch_planner(f_args)(batch_spec(ITEM, size), W_SPEC)
    assert plan_closed == plan_args
    assert plan_closed >= W.nbytes  # the weights are in the plan


def test_plan_of_a_whole_batch_jitted_fn_with_closed_weights():
    batched = jax.jit(jax.vmap(closed))
    plan = batch_planner(batched)(batch_spec(ITEM, 32))
    args = batch_planner(jax.jit(jax.vmap(with_w, in_axes=(0, None))))(batch_spec(ITEM, 32), W_SPEC)
    assert plan == args


def test_hoisted_program_computes_what_the_closure_computes():
    xs = jax.random.normal(jax.random.key(1), (12, D))
    program = compile_program(jax.vmap(closed), batch_spec(ITEM, 12))
    assert program.compiled.hoisted and program.compiled.const_bytes == W.nbytes
    np.testing.assert_allclose(program(xs), jax.vmap(closed)(xs), rtol=1e-6, atol=1e-6)
    plain = compile_program(jax.vmap(lambda x: jnp.tanh(x) * 2), batch_spec(ITEM, 12))
    assert (
        not plain.compiled.hoisted and plain.compiled.consts == ()
    )  # nothing closed over: lowered as before
    # the same bytes from a trace alone (calibration adds them to what it observes)
    for f in (jax.vmap(closed), jax.jit(jax.vmap(closed)), jax.vmap(lambda x: jnp.tanh(x) * 2)):
        c = compile_program(f, batch_spec(ITEM, 12)).compiled
        assert hoisted_const_bytes(f, batch_spec(ITEM, 12)) == c.const_bytes


@pytest.mark.parametrize("budget_kib", [96, 160, 400])
def test_max_batch_size_closed_equals_shared_argument(budget_kib):
    budget = budget_kib * 1024
    r_closed = batchlab.max_batch_size(closed, ITEM, budget_bytes=budget)
    r_args = batchlab.max_batch_size(with_w, (ITEM, W_SPEC), in_axes=(0, None), budget_bytes=budget)
    assert int(r_closed) == int(r_args) >= 1
    assert r_closed.planned_bytes == r_args.planned_bytes <= budget
    # the answer holds once the weights are an argument (the bug: closed-over weights planned low)
    plan_as_args = batch_planner(jax.vmap(with_w, in_axes=(0, None)))(
        batch_spec(ITEM, int(r_closed)), W_SPEC
    )
    assert plan_as_args <= budget


def test_shared_argument_may_be_a_real_array_and_a_pytree():
    params = {"w": W, "b": jnp.zeros(D)}
    r = batchlab.max_batch_size(
        lambda x, p: jnp.tanh(x @ p["w"] + p["b"]),
        (ITEM, params),
        in_axes=(0, None),
        budget_bytes=64 * 1024,
    )
    per_item = 2 * D * 4  # one item in, one out
    assert int(r) == (64 * 1024 - W.nbytes - D * 4) // per_item


@pytest.mark.parametrize(
    "example, in_axes, match",
    [
        ((ITEM, W_SPEC), (0, 1), r"`in_axes` must be 0 or a tuple of 0 \(batched, one at least\)"),
        ((ITEM, W_SPEC), [0, None], r"`in_axes` must be 0 or a tuple.*got in_axes=\[0, None\]"),
        (ITEM, (0, None), r"`in_axes` must be .*the tuple `example_item`.*`example_item` ShapeD"),
        ((ITEM,), (0, None), r"`in_axes` must be .*`example_item` a tuple of 1"),
        ((ITEM, W_SPEC), (None, None), r"`in_axes` must be 0 or .*got in_axes=\(None, None\)"),
    ],
)
def test_bad_in_axes(example, in_axes, match):
    with pytest.raises(ValueError, match=match):
        batchlab.max_batch_size(with_w, example, in_axes=in_axes, budget_bytes=2**20)


def test_run_batches_budget_counts_closed_over_weights():
    xs = np.asarray(jax.random.normal(jax.random.key(2), (200, D)))
    budget = 64 * 1024
    fits = int(
        batchlab.max_batch_size(with_w, (ITEM, W_SPEC), in_axes=(0, None), budget_bytes=budget)
    )
    assert fits < 100
    r = batchlab.run_batches(closed, xs, batch_size=fits, budget_bytes=budget, progress=False)
    assert r.complete and max(r.batch_sizes) == fits and r.retries == 0
    over = batchlab.run_batches(
        closed, xs, batch_size=fits + 1, budget_bytes=budget, progress=False
    )
    assert over.batches[0].status.startswith("over budget") and max(over.batch_sizes) <= fits
    np.testing.assert_allclose(r.outputs, jax.vmap(closed)(xs), rtol=1e-5, atol=1e-6)


# ------------------------------------------- a calibrated margin (issues 25 and 26), measured
LINUX_CPU = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not batchlab.backend_facts().second_process_may_open,
    reason="the observed host peak and the address-space limit are Linux CPU figures",
)
BUDGET = 64 * 2**20
MLP_ITEM = jax.ShapeDtypeStruct((256,), jnp.float32)
W1 = np.ones((256, 512), np.float32) / 100
W2 = np.ones((512, 256), np.float32) / 100


def mlp(x):  # closed-over weights; XLA:CPU plans ~1 KiB per item (the input), runs ~3x that
    return jnp.tanh(jnp.tanh(x @ W1) @ W2).sum()


def elementwise(x):  # in, out and nothing else: the plan is what runs
    return jnp.tanh(x * 2.0) + 1.0


def run_under_limit(*args, **kw):
    """``run_under_limit`` of benchmarks/max_batch_size.py: a batch in a fresh process under
    ``RLIMIT_AS`` = its baseline + the budget."""
    return load_benchmark("max_batch_size").run_under_limit(*args, **kw)


def _fake_children(factor, calls):
    """run_jobs that 'observes' factor x the plan of each job's batch (no process started)."""

    def run_jobs(jobs, timeout):
        calls.append([j[0] for j in jobs])
        out = {}
        for label, _, job, args in jobs:
            f = batchlab.batch(job.fn, strategy=job.strategy, chunk_size=job.chunk_size)
            p = batch_planner(f)(*args)
            out[label] = {"bytes": None if factor is None else int(factor * p), "source": "fake"}
        return out

    return run_jobs


@pytest.mark.parametrize("factor, expected", [(2.0, 2.0), (0.8, 1.0), (None, 1.0)])
def test_calibrated_margin_is_the_observed_ratio_never_below_one(monkeypatch, factor, expected):
    calls = []
    monkeypatch.setattr(calibration, "run_jobs", _fake_children(factor, calls))
    monkeypatch.setattr(calibration, "CACHE", {})
    raw = batchlab.max_batch_size(elementwise, ITEM, budget_bytes=2**20)
    r = batchlab.max_batch_size(elementwise, ITEM, budget_bytes=2**20, margin="calibrated")
    assert r.margin == pytest.approx(expected)
    assert [b for b, _, _ in r.calibration.points] == [int(raw) // 4, int(raw)]
    assert calls == [[str(int(raw) // 4), str(int(raw))]]  # one process for both sizes
    # a calibration that observed nothing says so: "uncalibrated", never a calibrated 1.00
    assert r.margin_source.startswith("uncalibrated: " if factor is None else "calibrated: ")
    assert ("nothing observed" in r.margin_source) == (factor is None)
    assert r.calibration.observed == (factor is not None)
    by_hand = batchlab.max_batch_size(elementwise, ITEM, budget_bytes=int(2**20 / r.margin))
    assert int(r) == int(by_hand) and r.planned_bytes <= r.planned_budget_bytes
    again = batchlab.max_batch_size(elementwise, ITEM, budget_bytes=2**20, margin="calibrated")
    assert len(calls) == 1 and again.calibration == r.calibration  # cached per fn and shapes


def test_nothing_fits_is_not_calibrated(monkeypatch):
    monkeypatch.setattr(calibration, "run_jobs", _fake_children(2.0, calls := []))
    r = batchlab.max_batch_size(elementwise, ITEM, budget_bytes=16, margin="calibrated")
    assert int(r) == 0 and r.margin == 1.0 and "not even one item" in r.margin_source
    assert calls == []


@pytest.mark.parametrize(
    "margin, error, match",
    [
        (1.5, TypeError, r"`margin` must be None or 'calibrated'.*got margin=1.5.*budget / ratio"),
        ("auto", ValueError, r"`margin` must be None or 'calibrated'.*got margin='auto'"),
        (True, TypeError, r"`margin` must be None or 'calibrated'.*got margin=True"),
    ],
)
def test_bad_margin_is_refused_before_any_work(monkeypatch, margin, error, match):
    monkeypatch.setattr(calibration, "run_jobs", lambda *a: pytest.fail("a child ran"))
    with pytest.raises(error, match=match):
        batchlab.max_batch_size(
            elementwise, ITEM, budget_bytes=2**20, margin=margin, on_compile=pytest.fail
        )


# The MLP needs its input (1 KiB), two hidden activations (2 KiB + 1 KiB) and its output per
# item. Measured: jax 0.10.0 plans them (~4.1 KiB per item: observed/planned 1.02-1.07x, the raw
# plan's batch runs under the limit); 0.10.2 and 0.12.0.1 plan the input only (~1.0 KiB per item:
# 2.96x and 3.96x, the raw plan's batch fails). Which one a jax does is read from its plan, so
# these tests hold on every version and fail if the margin or the limit stops following it.
HIDDEN_PER_ITEM = (512 + 256) * 4


def plan_covers_the_hidden(planned_bytes: int, items: int) -> bool:
    return planned_bytes / items >= 256 * 4 + HIDDEN_PER_ITEM


@LINUX_CPU
def test_the_margin_follows_the_evidence():
    """Measured in fresh processes: ~1.0x for an elementwise fn; the MLP's by its plan."""
    flat = calibration.calibrate(elementwise, MLP_ITEM, (2048, 8192))
    heavy = calibration.calibrate(mlp, MLP_ITEM, (2048, 8192))
    assert all(o is not None for _, _, o in flat.points + heavy.points)
    assert flat.ratio < 1.1, flat
    b, planned, _ = heavy.points[-1]
    if plan_covers_the_hidden(planned, b):  # the plan holds the activations: nothing to add
        assert heavy.ratio < 1.2, heavy
    else:  # they run outside the plan: the margin must say so
        assert heavy.ratio > 2.0, heavy


@LINUX_CPU
def test_the_raw_plan_runs_under_the_limit_exactly_when_it_covers_the_intermediates():
    """The measured truth: on a jax whose plan misses the MLP's activations, its batch fails."""
    raw = batchlab.max_batch_size(mlp, MLP_ITEM, budget_bytes=BUDGET)
    run = run_under_limit(mlp, MLP_ITEM, int(raw), BUDGET)
    assert run.baseline_bytes > 0, run
    if plan_covers_the_hidden(raw.planned_bytes, int(raw)):
        assert run.ran is True, (raw, run)
    else:
        assert run.ran is False, (raw, run)
        assert is_out_of_memory(jax.errors.JaxRuntimeError(run.error.split(": ", 1)[1])), run


@LINUX_CPU
@pytest.mark.parametrize("strategy, chunk", [("vmap", None), ("chunked", 256)])
def test_the_calibrated_batch_runs_under_the_limit(strategy, chunk):
    """A fresh process: address space limited to its measured baseline + the budget."""
    r = batchlab.max_batch_size(
        mlp, MLP_ITEM, budget_bytes=BUDGET, strategy=strategy, chunk_size=chunk, margin="calibrated"
    )
    assert r.margin >= 1.0 and r.calibration is not None
    ok = run_under_limit(mlp, MLP_ITEM, int(r), BUDGET, strategy=strategy, chunk_size=chunk)
    assert ok.ran is True, (r, ok)
    control = run_under_limit(  # the limit bites: four times the batch does not run
        mlp, MLP_ITEM, 4 * int(r), BUDGET, strategy=strategy, chunk_size=chunk
    )
    assert control.ran is False, control


def _counters(monkeypatch, facts, readings):
    """Fake device counters, one DeviceMemory per read; the ballast put on the host device."""
    from batchlab._util.backend import FACTS

    stats = iter(readings)
    monkeypatch.setattr(calibration, "device_memory", lambda: next(stats))
    monkeypatch.setattr(calibration, "backend_facts", lambda: FACTS[facts])
    return ("4", None, lambda x: x * 2, (jax.ShapeDtypeStruct((4,), jnp.float32),))


def test_observe_in_process_is_the_rise_over_the_bytes_in_use_before_the_call(monkeypatch):
    """GPU: the peak a first call raised above what was in use before it (after the ballast)."""
    from batchlab.measuring.live import DeviceMemory as M

    first, lifted, after = M("gpu", 50, 100), M("gpu", 100, 100), M("gpu", 100, 4196)
    job = _counters(monkeypatch, "gpu", [first, lifted, after])
    got = calibration.observe_in_process([job])["4"]
    assert got["bytes"] == 4096 and "in use and reserved" in got["source"]


def test_observe_in_process_adds_the_reserved_rise_and_never_reads_a_hidden_one(monkeypatch):
    """TPU v5e: a program's temps show in peak_bytes_reserved, not in use (notebook 06)."""
    from batchlab.measuring.live import DeviceMemory as M

    def tpu(use, peak, reserved, peak_reserved):
        return M("tpu", use, peak, bytes_reserved=reserved, peak_bytes_reserved=peak_reserved)

    kw = [tpu(100, 100, 0, 0), tpu(100, 100, 0, 0), tpu(100, 600, 3000, 3000)]
    job = _counters(monkeypatch, "tpu", kw)
    assert calibration.observe_in_process([job])["4"]["bytes"] == 500 + 3000
    same = [tpu(100, 100, 3000, 3000), tpu(100, 100, 3000, 3000), tpu(100, 600, 3000, 3000)]
    job = _counters(monkeypatch, "tpu", same)  # peak = reserved before: the call reserved none
    assert calibration.observe_in_process([job])["4"]["bytes"] == 500
    hidden = [tpu(100, 100, 0, 3000), tpu(100, 100, 0, 3000), tpu(100, 600, 2000, 3000)]
    job = _counters(monkeypatch, "tpu", hidden)  # up to 3000 B could hide under the old peak
    got = calibration.observe_in_process([job])["4"]
    assert got["bytes"] is None and "already above" in got["source"]


def test_observe_in_process_refuses_counters_that_miss_program_temporaries(monkeypatch):
    """A device whose bytes in use miss a program's temps and that reports no reserved bytes."""
    from batchlab.measuring.live import DeviceMemory as M

    job = _counters(monkeypatch, "tpu", [M("tpu", 100, 100)])
    got = calibration.observe_in_process([job])["4"]
    assert got["bytes"] is None and "temporaries" in got["source"]


def test_the_calibration_runs_the_searched_program_strategy_chunk_and_axes(monkeypatch):
    """The batches a calibration runs are those of the search: same strategy, chunk, in_axes."""
    jobs_seen = []

    def run_jobs(jobs, timeout):
        jobs_seen.extend(job for _, _, job, _ in jobs)
        return {label: {"bytes": None, "source": "fake"} for label, *_ in jobs}

    monkeypatch.setattr(calibration, "run_jobs", run_jobs)
    monkeypatch.setattr(calibration, "CACHE", {})
    w = jax.ShapeDtypeStruct((ITEM.shape[0], 8), jnp.float32)
    r = batchlab.max_batch_size(lambda x, w: jnp.tanh(x @ w), (ITEM, w), in_axes=(0, None),
                                strategy="chunked", chunk_size=4, budget_bytes=2**20,
                                margin="calibrated")  # fmt: skip
    assert int(r) > 0 and len(jobs_seen) == 2
    assert {(j.strategy, j.chunk_size, j.in_axes) for j in jobs_seen} == {("chunked", 4, (0, None))}


# ------------------- where no second process may open the device (issue 45): in-process
def _accelerator(monkeypatch, stats):
    """A GPU's facts on this CPU (no second process; counters that see a program's temps; the
    TPU's do not: test above), ``calibration.device_memory`` reading ``stats`` (None: no
    memory_stats); a child would fail the test."""
    from batchlab._util.backend import FACTS

    monkeypatch.setattr(calibration, "backend_facts", lambda name=None: FACTS["gpu"])
    monkeypatch.setattr(calibration, "device_memory", lambda: stats and SimpleNamespace(**stats))
    monkeypatch.setattr(calibration, "run_jobs", lambda *a: pytest.fail("a child process ran"))
    monkeypatch.setattr(calibration, "CACHE", {})


def test_no_second_process_and_no_stats_is_uncalibrated_and_starts_nothing(monkeypatch):
    _accelerator(monkeypatch, None)
    r = batchlab.max_batch_size(elementwise, ITEM, budget_bytes=2**20, margin="calibrated")
    assert r.margin == 1.0 and not r.calibration.observed
    assert r.margin_source.startswith("uncalibrated: nothing observed (not run: no second process")
    assert "run nowhere (not run)" in r._title()


@pytest.mark.parametrize("start_peak", [4096, 1 << 40])
def test_in_process_calibration_reads_the_peak_smallest_batch_first(monkeypatch, start_peak):
    stats = dict(bytes_in_use=4096, peak_bytes_in_use=start_peak)
    stats.update(bytes_reserved=None, peak_bytes_reserved=None)  # a GPU reports none
    _accelerator(monkeypatch, stats)
    seen = []

    def call(run, args):  # 3x the input's bytes at its peak, the counter never reset
        n = args[0].shape[0]
        seen.append(n)
        stats["peak_bytes_in_use"] = max(stats["peak_bytes_in_use"], 4096 + 3 * n * D * 4)

    monkeypatch.setattr(calibration, "call", call)
    raw = int(batchlab.max_batch_size(elementwise, ITEM, budget_bytes=2**20))
    r = batchlab.max_batch_size(elementwise, ITEM, budget_bytes=2**20, margin="calibrated")
    if start_peak > calibration.MAX_BALLAST:  # too far to lift: said, never guessed
        assert seen == [] and "in this process" in r._title()
        assert r.margin == 1.0 and r.margin_source.startswith("uncalibrated: nothing observed")
        assert "1.00 TiB above its use" in r.margin_source
    else:  # the plan is input + output (2x the input): the ratio is 3 / 2
        assert seen == [raw // 4, raw] and "in this process" in r._title()
        assert r.margin == pytest.approx(1.5, rel=0.01) and r.margin_source.startswith(
            "calibrated: "
        )
