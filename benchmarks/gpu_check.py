"""GPU check: does the compiled plan predict what the device allocator really peaks at?

For a few functions, compares `memory_estimate(...).planned_bytes` (XLA's
compiled memory analysis, nothing run) with the device's measured peak
(`memory_stats()['peak_bytes_in_use']`), each function measured in a fresh
process (`batchlab._util.child.run_child`) because the device peak counter is
process-wide and cannot be reset. Runs in well under 2 minutes.

    measured peak of fn = peak_bytes_in_use - (bytes_in_use before the call - argument bytes)

i.e. the peak above what was allocated before the call, plus the call's own
arguments. Then it exercises the other GPU-only paths once each:

  live figures   device_memory() fields and its fragmentation figure, the
                 live arrays, default_budget() from free device memory
  real OOM       run_batches on a batch far larger than the device: XLA's own
                 RESOURCE_EXHAUSTED must make it halve the batch and finish

Planned bytes are a lower bound of what the device needs (BFC rounding to
256 bytes and to the chunk found, unsplit chunks, cuBLAS/cuDNN workspace):
the measured/planned column is that gap, expected >= 1.00.

On a CPU-only machine it says so, runs what is not GPU-only (XLA's real
RESOURCE_EXHAUSTED for a 256 TiB request, recognised by run_batches) and
exits 0. Status: unrun on a GPU (no GPU was lent to the session that wrote it).

Run: XLA_PYTHON_CLIENT_PREALLOCATE=false .venv/bin/python benchmarks/gpu_check.py
"""

from __future__ import annotations

import itertools
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
from batchlab._util.child import run_child


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
    report = Report("gpu_check")
    if jax.default_backend() == "cpu":
        report.line(
            "No GPU/TPU here: device memory stats are unavailable on the CPU backend, so there is "
            "nothing to compare. Run this on a GPU machine."
        )
        report.line(bl.measuring.device_memory_unavailable_reason())
        address_space_oom(report)
        report.save()
        return 0
    t_start = time.perf_counter()
    report.line(f"device: {jax.devices()[0]}")
    report.line(
        f"{'function':28s} {'planned peak':>14s} {'measured peak':>14s} {'measured/planned':>17s}"
    )
    for index, (name, fn, args) in enumerate(cases(16384)):
        est = bl.memory_estimate(fn, *args)
        child = run_child("gpu_check:fresh_peak", index)
        if child.reply is None or "error" in child.reply:
            report.line(f"{name:28s} fresh process failed: {child.reply or child.why}")
            continue
        m = child.reply
        measured = m["peak"] - (m["before"] - m["argument"])
        report.line(
            f"{name:28s} {bl.format_bytes(est.planned_bytes):>14s} "
            f"{bl.format_bytes(measured):>14s} {measured / est.planned_bytes:>17.2f}"
        )
    report.line(
        f"sources: planned = compiled memory analysis ({est.planned_from}); "
        f"measured = device memory stats (peak_bytes_in_use, fresh process each); "
        f"measured/planned >= 1: planned bytes are a lower bound"
    )
    live_paths(report)
    real_oom(report)
    address_space_oom(report)
    report.line(f"total time: {time.perf_counter() - t_start:.1f} s")
    report.save()
    return 0


def fresh_peak(index: int) -> dict:
    """The child side: case ``index`` measured in this fresh process, its device figures."""
    _name, fn, args = next(itertools.islice(cases(16384), index, None))
    stats = bl.device_memory()
    before = stats.bytes_in_use if stats else 0
    m = bl.measure(fn, *args, repeat=3)
    return {
        "before": before,
        "peak": m.device_after.peak_bytes_in_use,
        "argument": m.memory.argument_bytes,
    }


def live_paths(report: Report) -> None:
    """device_memory, live_memory and default_budget on a real device."""
    stats = bl.device_memory()
    report.line(f"device_memory(): {stats!r}")
    assert stats is not None and stats.bytes_in_use is not None, "a GPU must report bytes_in_use"
    report.line(f"fragmentation figure: {stats.fragmentation}")
    report.line(f"live JAX arrays: {bl.format_bytes(bl.measuring.live_memory().live_array_bytes)}")
    budget = bl.default_budget()
    report.line(f"default_budget(): {bl.format_bytes(budget.bytes)} from {budget.source}")
    report.line(
        f"room (bytes_limit - bytes_in_use) {bl.format_bytes(stats.room_bytes)}; free inside the "
        f"pool so far (pool_bytes - bytes_in_use) {bl.format_bytes(stats.free_in_pool_bytes)}"
    )
    assert "device" in budget.source, (
        "on a GPU the default budget must come from free device memory"
    )


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


def address_space_oom(report: Report) -> None:
    """XLA's own RESOURCE_EXHAUSTED on every backend: a 256 TiB output, beyond any address space."""
    from batchlab.runs.errors import is_out_of_memory

    x = jnp.ones(2**23, jnp.float32)
    compiled = jax.jit(lambda x: jnp.outer(x, x)).lower(x).compile()
    t0 = time.perf_counter()
    err = None
    try:
        compiled(x).block_until_ready()
    except jax.errors.JaxRuntimeError as e:
        err = e
    seconds = time.perf_counter() - t0
    first = str(err).splitlines()[0] if err else "no error"
    report.line(
        f"256 TiB request: {type(err).__name__}: {first} after {bl.format_seconds(seconds)}; "
        f"run_batches recognises it: {err is not None and is_out_of_memory(err)}"
    )
    waited = err is not None and seconds >= 1.0  # the GPU BFC retry waits up to 10 s for frees
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
