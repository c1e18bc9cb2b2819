"""Device sections probe, part 2 (issue 46 sections 4, 6, 7 and 8): figures for designing the
notebook cells, each printed, nothing raised. Results: benchmarks/results/device_sections_b-tpu.txt.

4  fusion: the peak a call adds above what is in use (a ballast first fills in-use up to the
   never-reset peak, so any rise of the peak is the call's), for a jitted vmap, the same with an
   optimization_barrier on the intermediate, and an eager vmap.
6  the largest batch: max_batch_size for the free memory, then that batch and 9/8 of it run.
7  a call's cost against the device's work: wall per blocking call against device-busy per call
   (profiler device lanes), over matmul sizes; blocking each call against not.
8  host to device: device_put per item against one per batch.
"""

import sys
import time
import traceback

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import batchlab as bl

facts = bl.backend_facts()
dev = jax.devices()[0]
print("facts:", facts.name, jax.__version__, dev.device_kind)
WANT = set(sys.argv[1:]) or {"4", "6", "7", "8"}


def stats():
    return dev.memory_stats() or {}


def section(name):
    def deco(f):
        if name.split()[0] not in WANT:
            return
        t0 = time.perf_counter()
        try:
            f()
        except Exception:
            print(f"[{name}] FAILED:\n{traceback.format_exc()[-2000:]}")
        print(f"[{name}] {time.perf_counter() - t0:.1f} s\n", flush=True)

    return deco


def peak_rise(run, *args):
    s = stats()
    gap = s["peak_bytes_in_use"] - s["bytes_in_use"]
    ballast = jnp.zeros((gap,), jnp.uint8) if gap > 0 else None
    jax.block_until_ready(ballast)
    s1 = stats()
    slack = s1["peak_bytes_in_use"] - s1["bytes_in_use"]
    out = jax.block_until_ready(run(*args))
    s2 = stats()
    del ballast
    return s2["peak_bytes_in_use"] - s1["bytes_in_use"], slack, gap, out


@section("4 fusion")
def _():
    B, N = 64, 2**20

    def f(r):
        return jnp.sum(jnp.sin(jnp.cos(r) * 2.0))

    def g(r):
        return jnp.sum(jnp.sin(lax.optimization_barrier(jnp.cos(r) * 2.0)))

    x = jnp.ones((B, N), jnp.float32) * 0.5
    inter = B * N * 4
    spec = jax.ShapeDtypeStruct((B, N), jnp.float32)
    for name, h in (("fused", f), ("barrier", g)):
        m = jax.jit(jax.vmap(h)).lower(spec).compile().memory_analysis()
        print(
            name, "plan temp", m.temp_size_in_bytes, "peak", m.peak_memory_in_bytes, "inter", inter
        )
    jf, jg = jax.jit(jax.vmap(f)), jax.jit(jax.vmap(g))
    jax.block_until_ready((jf(x[:1]), jg(x[:1])))
    for name, run in (
        ("jit fused", jf),
        ("jit barrier", jg),
        ("eager vmap", jax.vmap(f)),
        ("jit fused again", jf),
    ):
        t0 = time.perf_counter()
        rise, slack, gap, _out = peak_rise(run, x)
        print(
            f"{name:16s} rise {rise:>12,d} = {rise / inter:.3f} x inter; slack {slack:,d}; ballast {gap:,d};"
            f" {time.perf_counter() - t0:.3f} s"
        )
    # a larger peak first: does the ballast still read small rises?
    big = jnp.ones((4 * B, N))
    del big
    rise, slack, gap, _ = peak_rise(jg, x)
    print(f"after a 1 GiB peak: barrier rise {rise / inter:.3f} x, ballast {gap:,d}, slack {slack}")
    rise, slack, gap, _ = peak_rise(jf, x)
    print(f"after a 1 GiB peak: fused rise {rise / inter:.3f} x, ballast {gap:,d}, slack {slack}")
    # single-item eager, not vmapped
    rise, slack, gap, _ = peak_rise(f, x[0])
    print(f"eager one row: rise {rise:,d} (row {N * 4:,d})")


@section("6 largest")
def _():
    def per_item(x):  # a (512, 512) float32 intermediate per item that XLA keeps (cumsum)
        return jnp.cumsum(jnp.outer(x, x), axis=0)[-1].sum()

    item = jax.ShapeDtypeStruct((512,), jnp.float32)
    s = bl.device_memory()
    free = s.bytes_limit - s.bytes_in_use
    with bl.count_compiles() as cc:
        adv = bl.max_batch_size(per_item, item, budget_bytes=free)
    print(f"free {free:,d}; advice {int(adv)} planned {adv.planned_bytes:,d}; {cc.count} compiles")

    def runs(b):
        try:
            jax.block_until_ready(jax.jit(jax.vmap(per_item))(jnp.ones((b, 512), jnp.float32)))
            return "ran"
        except jax.errors.JaxRuntimeError as e:
            return f"failed: {str(e).splitlines()[0][:200]}"

    for tried in (int(adv), int(adv) * 9 // 8, int(adv) * 17 // 16):
        print(tried, runs(tried))
    hold = jnp.zeros((free // 4,), jnp.uint8)  # the contrast: live arrays hold a quarter
    print("advice with a quarter held:", runs(int(adv)))
    del hold


@section("7 call cost")
def _():
    empty = jax.jit(lambda x: x + 1)
    for n in (1, 256, 1024, 2048, 4096):
        a = jnp.ones((n, n), jnp.float32)
        mm = jax.jit(lambda a: a @ a)
        fn = empty if n == 1 else mm
        jax.block_until_ready(fn(a))
        K = 30
        t = bl.measuring.interleaved(
            {
                "blocking": lambda fn=fn, a=a, K=K: [
                    jax.block_until_ready(fn(a)) for _ in range(K)
                ],
                "not blocking": lambda fn=fn, a=a, K=K: jax.block_until_ready(
                    [fn(a) for _ in range(K)]
                ),
            },
            rounds=6,
        )
        blocking, pipelined = t["blocking"].median / K, t["not blocking"].median / K
        with bl.trace(items=K) as t:
            for _ in range(K):
                jax.block_until_ready(fn(a))
        tl = t.result
        print(
            f"n={n:5d} wall/call blocking {blocking * 1e6:8.1f} us, not blocking {pipelined * 1e6:8.1f} us;"
            f" traced: device busy/call {tl.device_busy / K * 1e6:8.1f} us, wall/call {tl.wall / K * 1e6:8.1f} us,"
            f" dispatches {tl.dispatches}, device lanes {[lane.name for lane in tl.lane('device')]}"
        )


@section("8 host to device")
def _():
    rng = np.random.default_rng(0)
    for shape in ((256, 1024), (64, 65536)):
        items = rng.standard_normal(shape, dtype=np.float32)
        t = bl.measuring.interleaved(
            {
                "per item": lambda items=items: jax.block_until_ready(
                    [jax.device_put(r) for r in items]
                ),
                "per batch": lambda items=items: jax.block_until_ready(jax.device_put(items)),
            },
            rounds=6,
        )
        per_item, per_batch = t["per item"].values, t["per batch"].values
        print(
            f"{shape}: per item {np.median(per_item) * 1e3:.2f} ms, per batch {np.median(per_batch) * 1e3:.2f} ms,"
            f" ratio {np.median(per_item) / np.median(per_batch):.1f}x; {items.nbytes / np.median(per_batch) / 1e9:.2f} GB/s"
        )
        with bl.trace(items=shape[0]) as t:
            jax.block_until_ready([jax.device_put(r) for r in items])
        print("  traced per item:", t.result)
        with bl.trace(items=shape[0]) as t:
            jax.block_until_ready(jax.device_put(items))
        print("  traced per batch:", t.result)
