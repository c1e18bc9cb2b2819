"""Accelerator check: does the compiled plan predict what the device allocator really peaks at?

For a few functions, compares `memory_estimate(...).planned_bytes` (XLA's compiled memory
analysis, nothing run) with the device's measured peak (`memory_stats()['peak_bytes_in_use']`).
All in this one process: a TPU is held by one process (a fresh one cannot open it), and the peak
counter only grows, so the cases run in increasing order of planned bytes and a case whose peak
an earlier one hid says so:

    measured peak of fn = peak_bytes_in_use after - (bytes_in_use before the call - argument bytes)

Then the other accelerator-only paths once each:

  live figures   device_memory() fields and its fragmentation figure, the live arrays,
                 default_budget() from free device memory
  real OOM       run_batches on a batch far larger than the device: XLA's own RESOURCE_EXHAUSTED
                 (raised when compiling on a TPU, when calling on a GPU) makes it halve and finish
  largest batch  max_batch_size for the device's free memory against the largest batch that
                 really compiles and runs there

Planned bytes are a lower bound of what the device needs (allocator rounding, unsplit chunks,
library workspace): measured/planned is that gap. On a CPU-only machine it says so, runs what is
not accelerator-only (XLA's RESOURCE_EXHAUSTED for a 256 TiB request) and exits 0. Results:
benchmarks/results/accelerator_check-<backend>.txt. Measured on a TPU v5e (jax 0.10.2,
2026-12-07); unrun on a GPU.

Run: XLA_PYTHON_CLIENT_PREALLOCATE=false .venv/bin/python benchmarks/accelerator_check.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report

import batchlab as bl


def cases(n: int):
    rng = np.random.default_rng(0)  # made on the host: the device holds the arrays only
    x = jax.device_put(rng.standard_normal((n, 1024), np.float32))
    w = jax.device_put(rng.standard_normal((1024, 1024), np.float32))
    yield "mlp layer tanh(x@w)@w", lambda x, w: jnp.tanh(x @ w) @ w, (x, w)
    yield (
        "pairwise distances",
        lambda x: jnp.sqrt(((x[:, None, :64] - x[None, :, :64]) ** 2).sum(-1)),
        (x[:2048],),
    )
    yield "softmax over rows", lambda x: jax.nn.softmax(x @ x.T, axis=-1), (x[:4096],)
    yield "elementwise chain", lambda x: jnp.sin(x) * jnp.cos(x) + jnp.exp(-x * x), (x,)


def main() -> int:
    report = Report(f"accelerator_check-{jax.default_backend()}")
    if not bl.backend_facts().has_memory_stats:
        report.line(
            "No accelerator here: device memory stats are unavailable on this backend, so there "
            "is nothing to compare. Run this on a TPU or GPU machine."
        )
        report.line(bl.measuring.device_memory_unavailable_reason())
        address_space_oom(report)
        report.save()
        return 0
    report.line(f"device: {jax.devices()[0]} ({jax.devices()[0].device_kind})")
    remainder_pick(report)  # first: a later case's reserved peak would hide this small call's
    report.line(
        f"{'function':28s} {'planned peak':>14s} {'measured peak':>14s} {'measured/planned':>17s}"
    )
    planned = sorted(
        ((bl.memory_estimate(fn, *args), name, fn, args) for name, fn, args in cases(16384)),
        key=lambda row: row[0].planned_bytes,
    )
    for est, name, fn, args in planned:
        before = bl.device_memory()
        for _ in range(3):  # the peak is what is wanted, not a time: three plain calls
            jax.block_until_ready(jax.jit(fn)(*args))
        peak_before = before.peak_bytes_in_use
        peak = bl.device_memory().peak_bytes_in_use
        measured = peak - (before.bytes_in_use - est.argument_bytes)
        ratio = (
            f"{measured / est.planned_bytes:>17.2f}"
            if peak > peak_before
            else (f"{'hidden':>17s} (an earlier peak {bl.format_bytes(peak_before)} is higher)")
        )
        report.line(
            f"{name:28s} {bl.format_bytes(est.planned_bytes):>14s} "
            f"{bl.format_bytes(measured):>14s} {ratio}"
        )
    report.line(
        f"sources: planned = compiled memory analysis ({est.planned_from}); measured = device "
        "memory stats (peak_bytes_in_use, one process, cases in increasing planned order)"
    )
    live_paths(report)
    real_oom(report)
    largest_batch(report)
    address_space_oom(report)
    report.save()
    return 0


def live_paths(report: Report) -> None:
    """device_memory, live_memory and default_budget on a real device."""
    stats = bl.device_memory()
    report.line(f"device_memory(): {stats!r}")
    assert stats is not None and stats.bytes_in_use is not None, (
        "an accelerator reports bytes_in_use"
    )
    report.line(f"fragmentation figure: {stats.fragmentation}")
    report.line(f"live JAX arrays: {bl.format_bytes(bl.measuring.live_memory().live_array_bytes)}")
    budget = bl.default_budget()
    report.line(f"default_budget(): {bl.format_bytes(budget.bytes)} from {budget.source}")
    report.line(
        f"room (bytes_limit - bytes_in_use) {bl.format_bytes(stats.room_bytes)}; free inside the "
        f"pool so far (pool_bytes - bytes_in_use) {bl.format_bytes(stats.free_in_pool_bytes)}"
    )
    assert "device" in budget.source, "the default budget must come from free device memory"


def real_oom(report: Report) -> None:
    """A batch that cannot fit: 1 GiB of intermediate per item, 256 items at once."""
    n = 16384  # one item's (n, n) float32 intermediate is 1 GiB

    def per_item(x):
        return jnp.cumsum(jnp.outer(x, x), axis=0)[-1].sum()  # cumsum keeps (n, n) materialized

    items = jnp.ones((256, n), jnp.float32) / n
    t0 = time.perf_counter()
    try:
        result = bl.run_batches(per_item, items, batch_size=256, progress=False)
    except Exception as e:  # report, do not hide
        report.line(f"real OOM: run_batches raised {type(e).__name__}: {str(e).splitlines()[0]}")
        return
    sizes = sorted({b.size for b in result.batches}) if result.batches else []
    report.line(
        f"real OOM: batch 256 x 1 GiB of temps -> {result.retries} retries at half size, "
        f"batch sizes tried {sizes}, complete={result.complete}, "
        f"{len(result.indices)} of 256 outputs, {time.perf_counter() - t0:.1f} s"
    )


def largest_batch(report: Report) -> None:
    """max_batch_size for the free device memory, against the largest batch that really runs."""

    def per_item(x):  # a (1024, 1024) float32 intermediate per item: 4 MiB
        return jnp.cumsum(jnp.outer(x, x), axis=0)[-1].sum()

    item = jnp.ones((1024,), jnp.float32)
    stats = bl.device_memory()
    free = stats.bytes_limit - stats.bytes_in_use
    t0 = time.perf_counter()
    advised = bl.max_batch_size(per_item, item, budget_bytes=free)
    size = int(advised)
    ran = 0
    for tried in (size, size * 9 // 8, size * 5 // 4, size * 3 // 2, size * 2):
        try:
            jax.block_until_ready(jax.jit(jax.vmap(per_item))(jnp.ones((tried, 1024))))
            ran = tried
        except jax.errors.JaxRuntimeError as e:
            report.line(f"largest batch: {tried} items fail: {str(e).splitlines()[0][:160]}")
            break
    report.line(
        f"largest batch: max_batch_size for {bl.format_bytes(free)} free says {size}; the largest "
        f"tried that ran: {ran} ({(ran - size) / size:+.0%} of the advice), "
        f"{time.perf_counter() - t0:.1f} s"
    )


def remainder_pick(report: Report) -> None:
    """A fitted batch with a remainder (notebook 12's MLP, lax.map chunk 128): ``upper`` = 700
    items (5 chunks + 60) at a budget of that batch's plan, so the answer is 700; run once, what
    it adds to the device against the budget less the closed-over weights (already there)."""
    from batchlab.runs.calibration import call_rise

    rng = np.random.default_rng(1)
    shapes = ((64, 256), (256, 256), (256, 8))
    w1, w2, w3 = (jax.device_put(rng.standard_normal(s).astype(np.float32) / 16) for s in shapes)

    def mlp(x):  # one item: (64,) -> (8,)
        return jnp.tanh(jnp.tanh(x @ w1) @ w2) @ w3

    f = bl.batch(mlp, strategy="chunked", chunk_size=128)
    spec = lambda b: jax.ShapeDtypeStruct((b, 64), jnp.float32)  # noqa: E731
    budget = bl.memory_estimate(f, spec(700)).planned_bytes
    fit = bl.max_batch_size(
        mlp,
        jax.ShapeDtypeStruct((64,), jnp.float32),
        budget_bytes=budget,
        strategy="chunked",
        chunk_size=128,
        upper=700,
    )
    n, weights = int(fit), sum(w.nbytes for w in (w1, w2, w3))
    added, why = call_rise(f, (spec(n),))
    report.line(
        f"remainder pick: lax.map chunk 128 fitted {n} items ({n % 128} in the remainder) to "
        f"{bl.format_bytes(budget)}; run once it added "
        + (
            f"{bl.format_bytes(added)} against the budget less the weights "
            f"{bl.format_bytes(budget - weights)}: within {added <= budget - weights}"
            if added is not None
            else why
        )
    )


def address_space_oom(report: Report) -> None:
    """XLA's own RESOURCE_EXHAUSTED on every backend: a 256 TiB output, beyond any address space."""
    from batchlab.runs.errors import is_out_of_memory

    x = jnp.ones(2**23, jnp.float32)
    t0 = time.perf_counter()
    err = None
    try:  # XLA:TPU refuses when compiling, XLA:CPU when the call allocates
        jax.jit(lambda x: jnp.outer(x, x)).lower(x).compile()(x).block_until_ready()
    except jax.errors.JaxRuntimeError as e:
        err = e
    seconds = time.perf_counter() - t0
    first = str(err).splitlines()[0] if err else "no error"
    report.line(
        f"256 TiB request: {type(err).__name__}: {first} after {bl.format_seconds(seconds)}; "
        f"run_batches recognises it: {err is not None and is_out_of_memory(err)}"
    )
    waited = err is not None and seconds >= 1.0  # a GPU's BFC retry waits up to 10 s for frees
    verdict = (
        "not measured: the oversized call did not fail"
        if err is None
        else (
            "holds here (it waited before raising)"
            if waited
            else "does not hold here (raised at once)"
        )
    )
    report.line(f"batches wait for free memory: {verdict} [{bl.format_seconds(seconds)}]")


if __name__ == "__main__":
    sys.exit(main())
