"""What searching costs: max_batch_size's compilations, and run_batches' bisection runs.

1. max_batch_size (compile-only planning): the aimed search (method="interpolate", the default)
   beside doubling-then-bisection (method="bisect", 2 * floor(log2(answer)) + 2 compilations)
   and a naive linear search (one compilation per batch size), on the same function and budgets,
   side by side in one process. Each compilation is the whole cost; times are wall clock of cold
   searches (jax.clear_caches() first), interleaved over 6 rounds (bl.measuring.interleaved),
   the time ratio the median of the per-round ratios with its distribution-free interval.
2. run_batches pinning bad items by bisection: k bad items in batches of B cost about
   2 * k * log2(B) runs (each level runs both halves) plus one compilation per new batch size.
   Runs are counted by wrapping the batched function; compilations with jax.monitoring.
3. Does a planned batch hold in practice (Linux CPU)? An MLP with closed-over weights and an
   elementwise fn, vmap and lax.map chunks, 64 MiB budget: the raw plan's answer and the
   answer with margin="calibrated" (observed / planned peak measured in a fresh process),
   each run in a fresh process under RLIMIT_AS = its measured baseline + the budget, and
   four times the calibrated batch as a control (the limit must bite).

Prints the tables and writes 1-2 to benchmarks/results/max_batch_size.txt, 3 to
benchmarks/results/max_batch_size_limits-<jax version>.txt.

Usage: .venv/bin/python benchmarks/max_batch_size.py [--limits-only]
"""

from __future__ import annotations

import functools
import logging
import math
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import batchlab
from batchlab import format_bytes, format_seconds, text_table
from batchlab._util.child import TIMEOUT
from batchlab.measuring.plan import batch_args, planned_bytes, unjit
from batchlab.runs.calibration import BatchJob, call, run_jobs
from batchlab.runs.search import compilation_target

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import load, ratio, timed

D = 64
ITEM = jax.ShapeDtypeStruct((D,), jnp.float32)
BUDGETS_KIB = (64, 256, 1024, 2048)
LINEAR_UP_TO_KIB = 256  # the linear search compiles every size: skip it above this


def widen(x):
    h = jnp.tanh(jnp.outer(x, x))
    return h @ x


def linear_search(fn, item, budget):
    """The naive way: compile b = 1, 2, 3, ... until a batch does not fit."""
    b = 0
    while True:
        spec = jax.ShapeDtypeStruct((b + 1, *item.shape), item.dtype)
        if planned_bytes(batchlab.memory_estimate(jax.vmap(fn), spec)) > budget:
            return b
        b += 1


def cold(search):
    """``search()`` from a cold start: JAX's compiled programs cleared, so each call compiles."""

    def call():
        jax.clear_caches()
        return search()

    return call


def search_costs() -> str:
    rows = []
    for kib in BUDGETS_KIB:
        budget = kib * 1024
        searches = {
            method: (
                lambda m=method, b=budget: int(
                    batchlab.max_batch_size(widen, ITEM, budget_bytes=b, method=m)
                )
            )
            for method in ("interpolate", "bisect")
        }
        if kib <= LINEAR_UP_TO_KIB:
            searches["linear"] = lambda b=budget: linear_search(widen, ITEM, b)
        compiles, answers = {}, set()
        for name, search in searches.items():
            with batchlab.count_compiles(match="widen") as c:
                answers.add(cold(search)())
            compiles[name] = c.count
        assert len(answers) == 1, (kib, answers)
        answer = answers.pop()
        t = timed({name: cold(search) for name, search in searches.items()}, one_call=True)
        cells = []
        for name in ("interpolate", "bisect", "linear"):
            if name in t:
                cells += [compiles[name], format_seconds(float(np.median(t[name].values)))]
            else:
                cells += ["-", "- (skipped: slow)"]
        rows.append(
            (
                f"{kib} KiB",
                answer,
                *cells[:4],
                compilation_target(answer),
                *cells[4:],
                ratio(t, "bisect", "interpolate"),
            )
        )
    table = text_table(
        rows,
        header=(
            "budget",
            "answer",
            "aimed: compiles",
            "aimed: time",
            "bisect: compiles",
            "bisect: time",
            "2log2+2",
            "linear: compiles",
            "linear: time",
            "time bisect / aimed (paired rounds)",
        ),
    )
    return table + (
        f"\nvmap of a per-item fn with a {D}x{D} float32 temporary; compile-only planning "
        f"(XLA compiled memory analysis); compilations counted with jax.monitoring events; "
        f"times: median of 6 rounds, the searches interleaved (bl.measuring.interleaved), each "
        f"call cold (jax.clear_caches() first, so it compiles what it plans)"
    )


def bisection_costs() -> str:
    def checked(x):
        def validate(v):
            if np.abs(v).max() > 100:
                raise ValueError("corrupt item")

        jax.debug.callback(validate, x)
        return widen(x)

    logging.getLogger("jax._src.debugging").setLevel(logging.CRITICAL)
    rows = []
    for batch, k in ((16, 1), (32, 1), (32, 2), (64, 2)):
        xs = np.ones((2 * batch, D), np.float32) / D
        bad = [1 + i * (2 * batch // k) for i in range(k)]  # one bad item in each of k batches
        xs[bad] = 1e3
        program = jax.jit(jax.vmap(checked))
        calls = []

        def counted(b, program=program, calls=calls):
            calls.append(b.shape[0])
            return program(b)

        with batchlab.count_compiles() as c:
            r = batchlab.run_batches(
                counted, xs, batch_size=batch, strategy="manual", progress=False
            )
        assert r.failed_indices == bad, (r.failed_indices, bad)
        model = 2 * k * math.log2(batch)
        rows.append(
            (
                batch,
                k,
                len(xs),
                len(calls),
                f"{model:.0f}",
                f"{len(calls) / model:.2f}",
                c.count,
                len(set(calls)),
            )
        )
    table = text_table(
        rows,
        header=(
            "B",
            "k bad",
            "items",
            "runs",
            "2k log2 B",
            "runs / model",
            "compiles",
            "batch sizes",
        ),
    )
    return table + (
        "\nrun_batches with a jax.debug.callback check failing on k items, one per batch; runs "
        "counted by wrapping the batched function (the first try of every batch included)"
    )


class LimitRun(NamedTuple):
    """A batch run in a fresh process under ``RLIMIT_AS`` = its baseline + ``budget_bytes``."""

    batch_size: int
    budget_bytes: int
    ran: bool | None
    error: str | None
    baseline_bytes: int | None
    source: str


def _vm_size() -> int | None:
    """This process's address space (``VmSize`` in ``/proc/self/status``, Linux), else None."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmSize:"))
    except (OSError, StopIteration):
        return None


def _limit(run: Any, args: Any, budget: int) -> dict:
    """In the child: one call under ``RLIMIT_AS`` = the warmed-up ``VmSize`` + ``budget``."""
    base = _vm_size()
    if base is None:
        return {"ran": None, "source": "no address-space figure here (needs Linux /proc)"}
    resource.setrlimit(resource.RLIMIT_AS, (base + int(budget), resource.RLIM_INFINITY))
    try:
        call(run, args)
        outcome = {"ran": True, "error": None}
    except Exception as e:  # the limit bit: its message is the figure
        outcome = {"ran": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    source = "RLIMIT_AS = VmSize after a warm-up call (compiled, freed, trimmed) + budget"
    return {**outcome, "baseline_bytes": base, "source": source}


def run_under_limit(
    fn, example_item, batch_size, budget_bytes, *, strategy="vmap", chunk_size=None
):
    """Runs a batch in a fresh process limited to its warmed-up baseline (``VmSize``) +
    ``budget_bytes`` of address space; ``ran`` is ``None`` off Linux (also used by
    tests/test_advisor.py)."""
    job = BatchJob(unjit(fn), strategy, chunk_size, 0)
    measure = functools.partial(_limit, budget=int(budget_bytes))
    jobs = [("run", measure, job, batch_args(example_item, batch_size))]
    r = run_jobs(jobs, TIMEOUT)["run"]
    error = r.get("error") or (r.get("source") if r.get("ran") is False else None)
    figures = (r.get("ran"), error, r.get("baseline_bytes"), str(r.get("source")))
    return LimitRun(int(batch_size), int(budget_bytes), *figures)


W1 = np.ones((256, 512), np.float32) / 100
W2 = np.ones((512, 256), np.float32) / 100
LIMIT_BUDGET = 64 * 2**20


def mlp(x):
    return jnp.tanh(jnp.tanh(x @ W1) @ W2).sum()


def elementwise(x):
    return jnp.tanh(x * 2.0) + 1.0


def limits() -> str:
    item = jax.ShapeDtypeStruct((256,), jnp.float32)
    budget = LIMIT_BUDGET

    def outcome(fn, b, s, k):
        r = run_under_limit(fn, item, b, budget, strategy=s, chunk_size=k)
        return "ran" if r.ran else f"failed: {(r.error or r.source)[:48]}"

    rows = []
    for fn in (mlp, elementwise):
        for s, k in (("vmap", None), ("chunked", 256)):
            raw = batchlab.max_batch_size(fn, item, budget_bytes=budget, strategy=s, chunk_size=k)
            t0 = time.perf_counter()
            cal = batchlab.max_batch_size(
                fn, item, budget_bytes=budget, strategy=s, chunk_size=k, margin="calibrated"
            )
            seconds = time.perf_counter() - t0
            points = ", ".join(
                f"{b}: {format_bytes(p)} -> {format_bytes(o)} ({o / p:.2f}x)"
                for b, p, o in cal.calibration.points
            )
            rows.append(
                (
                    fn.__name__,
                    s + (f" {k}" if k else ""),
                    int(raw),
                    format_bytes(raw.planned_bytes),
                    outcome(fn, int(raw), s, k),
                    points,
                    f"{cal.margin:.2f}x",
                    int(cal),
                    outcome(fn, int(cal), s, k),
                    outcome(fn, 4 * int(cal), s, k),
                    batchlab.format_seconds(seconds),
                )
            )
    table = text_table(
        rows,
        header=(
            "fn",
            "strategy",
            "raw batch",
            "raw plan",
            "raw under limit",
            "calibration: batch: planned -> observed",
            "margin",
            "calibrated batch",
            "calibrated under limit",
            "4x calibrated (control)",
            "calibrating",
        ),
    )
    return (
        f"# plans under an address-space limit -- jax {jax.__version__}, backend "
        f"{jax.default_backend()}, {os.cpu_count()} cores, budget {format_bytes(budget)}\n"
        + table
        + "\nlimit: RLIMIT_AS = VmSize of a fresh process after one warm-up call at that size "
        "(compiled, freed, malloc_trim) + the budget; the batch is made on the device under it "
        "(jnp.zeros). observed: host peak RSS growth of the call (VmHWM reset) + closed-over "
        "arrays, fresh process; margin = max(1, observed / planned at the two sizes)"
    )


def main() -> str:
    out = (
        f"# max_batch_size -- jax {jax.__version__}, backend {jax.default_backend()}, "
        f"{load()} at start\n"
        + search_costs()
        + "\n\n"
        + bisection_costs()
        + f"\n{load()} at the end"
    )
    return out


if __name__ == "__main__":
    results = Path(__file__).parent / "results"
    if "--limits-only" not in sys.argv:
        out = main()
        print(out)
        (results / "max_batch_size.txt").write_text(out + "\n")
    if sys.platform.startswith("linux") and batchlab.backend_facts().host_memory_demos:
        out = limits()
        print(out)
        (results / f"max_batch_size_limits-{jax.__version__}.txt").write_text(out + "\n")
