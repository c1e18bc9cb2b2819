"""max_batch_size: compilations used against the answer, and time against a naive linear search.

Both searches run side by side in one process on the same function and budgets; the figure
that matters is the ratio (linear time / max_batch_size time) and whether the compilations stay
within the promised 2 * floor(log2(answer)) + 2. Prints a table and writes it to
benchmarks/results/max_batch_size.txt.

Usage: .venv/bin/python benchmarks/max_batch_size.py
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp

import batchlab
from batchlab import text_table
from batchlab.budget import compilation_target, planned_bytes

D = 64
ITEM = jax.ShapeDtypeStruct((D,), jnp.float32)
BUDGETS_KIB = (64, 256, 1024, 2048)


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


def main() -> str:
    rows = []
    for kib in BUDGETS_KIB:
        budget = kib * 1024
        with batchlab.count_compiles(match="widen") as c_fast:
            t0 = time.perf_counter()
            fast = batchlab.max_batch_size(widen, ITEM, budget_bytes=budget)
            t_fast = time.perf_counter() - t0
        with batchlab.count_compiles(match="widen") as c_lin:
            t0 = time.perf_counter()
            slow = linear_search(widen, ITEM, budget)
            t_lin = time.perf_counter() - t0
        assert int(fast) == slow, (int(fast), slow)
        target = compilation_target(int(fast))
        rows.append(
            (
                f"{kib} KiB",
                int(fast),
                c_fast.count,
                target,
                "yes" if c_fast.count <= target else "NO",
                c_lin.count,
                f"{t_lin / t_fast:.1f}x",
            )
        )
    table = text_table(
        rows,
        header=(
            "budget",
            "answer",
            "compiles (search)",
            "target 2log2+2",
            "within",
            "compiles (linear)",
            "linear time / search time",
        ),
    )
    note = (
        f"vmap of a per-item fn with a {D}x{D} float32 temporary; compile-only planning "
        f"(XLA compiled memory analysis); compilations counted with jax.monitoring events; "
        f"backend {jax.default_backend()}"
    )
    return table + "\n" + note


if __name__ == "__main__":
    out = main()
    print(out)
    path = Path(__file__).parent / "results" / "max_batch_size.txt"
    path.write_text(out + "\n")
