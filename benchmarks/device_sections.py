"""Device sections probe (issue 46): what only an accelerator shows, each figure printed, nothing raised.

Allocations (num_allocs) for per-item calls, one batched call and lax.map; fragmentation (fill HBM
with 128 MiB blocks, free every other, ask for more than the largest free block); donation
(bytes_in_use growth with and without it, and a donation XLA cannot use); layouts (planned bytes of
small shapes against the tile model); precision (matmul and elementwise error at each matmul
precision); a call's cost; an out-of-memory at call time with live arrays holding the room.
On the CPU each section prints what the CPU cannot show. Results: benchmarks/results/
device_sections-tpu.txt (run on a TPU v5e, jax 0.10.2; this docstring was added after that run).

Sections 4, 6, 7b and 8 (results: benchmarks/results/device_sections_b-tpu.txt):
4  fusion: the peak a call adds above what is in use (a ballast first fills in-use up to the
   never-reset peak, so any rise of the peak is the call's), for a jitted vmap, the same with an
   optimization_barrier on the intermediate, and an eager vmap.
6  the largest batch: max_batch_size for the free memory, then that batch and 9/8 of it run.
7b a call's cost against the device's work: wall per blocking call against device-busy per call
   (profiler device lanes), over matmul sizes; blocking each call against not.
8  host to device: device_put per item against one per batch.

Usage: python3 benchmarks/device_sections.py [SECTION ...]  (e.g. ``4 6 7b 8``; none: all)
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
print("facts:", facts)
dev = jax.devices()[0]
WANT = set(sys.argv[1:])  # section numbers to run; none: every section


def stats():
    return dev.memory_stats() or {}


print("memory_stats keys:", sorted(stats()))


def section(name, needs_stats=False):
    def deco(f):
        if WANT and name.split()[0] not in WANT:
            return
        if needs_stats and "bytes_in_use" not in stats():
            print(f"[{name}] {facts.name}: no device memory stats\n")
            return
        t0 = time.perf_counter()
        try:
            f()
        except Exception:
            print(f"[{name}] FAILED:\n{traceback.format_exc()[-1500:]}")
        print(f"[{name}] {time.perf_counter() - t0:.1f} s\n", flush=True)

    return deco


@section("1 allocations")
def _():
    N = 64
    f = jax.jit(lambda x: jnp.tanh(x) * 2.0)
    m = jax.jit(lambda xs: jax.lax.map(lambda x: jnp.tanh(x) * 2.0, xs))
    items = [jnp.full((256,), i, jnp.float32) for i in range(N)]
    batch = jnp.stack(items)
    jax.block_until_ready((f(items[0]), f(batch), m(batch)))

    def allocs(run):
        before = stats().get("num_allocs", 0)
        jax.block_until_ready(run())
        return stats().get("num_allocs", 0) - before

    for _rep in range(2):
        print(
            {
                "per-item calls": allocs(lambda: [f(x) for x in items]),
                "one batched call": allocs(lambda: f(batch)),
                "lax.map, one call": allocs(lambda: m(batch)),
            }
        )


@section("2 fragmentation")
def _():
    s = stats()
    s["bytes_limit"]
    print(
        "before:",
        {k: s[k] for k in ("bytes_in_use", "bytes_limit", "largest_free_block_bytes") if k in s},
    )
    blk = 128 << 20
    make = jax.jit(lambda v: jnp.full((blk // 4,), v, jnp.float32))
    held = []
    while stats()["bytes_limit"] - stats()["bytes_in_use"] > 3 * blk and len(held) < 200:
        held.append(make(jnp.float32(len(held))))
    jax.block_until_ready(held)
    s = stats()
    print(
        f"filled {len(held)} x 128 MiB; in use {s['bytes_in_use'] / 2**30:.2f} GiB; largest free {s.get('largest_free_block_bytes', 0) / 2**20:.0f} MiB"
    )
    for i in range(0, len(held), 2):
        held[i].delete()
    s = stats()
    free = s["bytes_limit"] - s["bytes_in_use"]
    print(
        f"every other freed: free {free / 2**30:.2f} GiB, largest free block {s.get('largest_free_block_bytes', 0) / 2**20:.0f} MiB"
    )
    ask = 4 * blk
    big = jax.jit(lambda v: jnp.full((ask // 4,), v, jnp.float32))
    t0 = time.perf_counter()
    try:
        r = big(jnp.float32(1))
        r.block_until_ready()
        print(f"a {ask >> 20} MiB request with holes: ran ({time.perf_counter() - t0:.3f} s)")
        s2 = stats()
        print("after:", s2.get("largest_free_block_bytes"), s2["bytes_in_use"])
        del r
    except Exception as e:
        print(
            f"a {ask >> 20} MiB request with holes: {type(e).__name__}: {str(e).splitlines()[0][:200]} ({time.perf_counter() - t0:.3f} s)"
        )
    # contrast: the same free total with no holes
    live = [a for a in held if not a.is_deleted()]
    for a in live:
        a.delete()
    held = [make(jnp.float32(i)) for i in range(len(live))]
    jax.block_until_ready(held)
    s = stats()
    free = s["bytes_limit"] - s["bytes_in_use"]
    print(
        f"no holes: free {free / 2**30:.2f} GiB, largest free block {s.get('largest_free_block_bytes', 0) / 2**20:.0f} MiB"
    )
    try:
        r = big(jnp.float32(1))
        r.block_until_ready()
        print("request without holes: ran")
        del r
    except Exception as e:
        print(f"request without holes: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    for a in held:
        a.delete()
    print(
        "end:",
        {k: stats()[k] for k in ("bytes_in_use", "largest_free_block_bytes") if k in stats()},
    )


@section("3 donation")
def _():
    n = (64 << 20) // 4
    plain = jax.jit(lambda x: x + 1.0)
    donated = jax.jit(lambda x: x + 1.0, donate_argnums=0)
    for name, f in (("plain", plain), ("donated", donated)):
        x = jnp.zeros((n,), jnp.float32)
        jax.block_until_ready(x)
        before = stats()["bytes_in_use"]
        y = f(x)
        jax.block_until_ready(y)
        after = stats()["bytes_in_use"]
        print(
            f"{name}: in use grew by {(after - before) / 2**20:.1f} MiB; x deleted: {x.is_deleted()}"
        )
        del x, y
    # a donation XLA cannot use: output of another shape
    other = jax.jit(lambda x: x[: n // 2] + 1.0, donate_argnums=0)
    x = jnp.zeros((n,), jnp.float32)
    before = stats()["bytes_in_use"]
    import warnings

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = other(x)
        jax.block_until_ready(y)
    print(
        f"unusable donation: grew by {(stats()['bytes_in_use'] - before) / 2**20:.1f} MiB; x deleted: {x.is_deleted()}; warnings: {[str(i.message)[:80] for i in w]}"
    )


@section("9 layouts")
def _():
    for shape in [(1024, 3), (3, 1024), (1024, 128), (128, 1024), (64,), (1000, 3)]:
        c = (
            jax.jit(lambda x: x * 2.0)
            .lower(jax.ShapeDtypeStruct(shape, jnp.float32))
            .compile()
            .memory_analysis()
        )
        print(
            shape,
            "output",
            c.output_size_in_bytes,
            "facts",
            facts.padded_bytes(shape),
            "plain",
            int(np.prod(shape)) * 4,
        )
    x = jnp.ones((1024, 3))
    jax.block_until_ready(x)
    b = stats()["bytes_in_use"]
    y = jnp.ones((1024, 3)) * 3
    jax.block_until_ready(y)
    print("live (1024,3):", stats()["bytes_in_use"] - b)


@section("10 precision")
def _():
    rng = np.random.default_rng(0)
    a, b = (
        rng.standard_normal((512, 512)).astype(np.float32),
        rng.standard_normal((512, 512)).astype(np.float32),
    )
    ref = a.astype(np.float64) @ b.astype(np.float64)
    eref = np.exp(np.sin(a.astype(np.float64)))
    for prec in ("default", "float32", "highest"):
        with jax.default_matmul_precision(prec):
            mm = np.asarray(jax.jit(lambda x, y: x @ y)(a, b), np.float64)
            el = np.asarray(jax.jit(lambda x: jnp.exp(jnp.sin(x)))(a), np.float64)
        print(
            prec,
            "matmul rel err",
            float(np.abs(mm - ref).max() / np.abs(ref).max()),
            "elementwise rel err",
            float(np.abs(el - eref).max() / np.abs(eref).max()),
        )


@section("7 call cost")
def _():
    empty = jax.jit(lambda x: x)
    x = jnp.ones(8)
    empty(x).block_until_ready()
    y = jnp.ones((2048, 2048))
    mm = jax.jit(lambda a: a @ a)
    mm(y).block_until_ready()
    t = bl.measuring.interleaved(
        {"empty call": lambda: empty(x), "2048 matmul": lambda: mm(y)}, rounds=6
    )
    print("empty jitted call:", t["empty call"].median, "matmul 2048:", t["2048 matmul"].median)

    def loop(k, block):
        out = x
        for _ in range(k):
            out = empty(out)
            if block:
                out.block_until_ready()
        return out

    t = bl.measuring.interleaved(
        {"100 blocking": lambda: loop(100, True), "100 async": lambda: loop(100, False)}, rounds=6
    )
    print(
        "100 calls blocking each:", t["100 blocking"].median, "not blocking:", t["100 async"].median
    )


@section("5 call-time OOM")
def _():
    if "bytes_limit" not in stats():
        print("no bytes_limit here")
        return
    s = stats()
    limit = s["bytes_limit"]
    held = jnp.zeros((int(limit * 0.6) // 4,), jnp.float32)
    jax.block_until_ready(held)
    n = int(limit * 0.5) // 4
    f = jax.jit(lambda v: jnp.full((n,), v, jnp.float32))
    c = f.lower(jnp.float32(1)).compile()
    print(
        "compiled a plan of",
        c.memory_analysis().output_size_in_bytes / 2**30,
        "GiB with",
        stats()["bytes_in_use"] / 2**30,
        "GiB held",
    )
    t0 = time.perf_counter()
    try:
        c(jnp.float32(1)).block_until_ready()
        print("ran")
    except Exception as e:
        print(
            f"call-time: {type(e).__name__}: {str(e).splitlines()[0][:200]} after {time.perf_counter() - t0:.3f} s"
        )
    held.delete()
    t0 = time.perf_counter()
    r = c(jnp.float32(1))
    r.block_until_ready()
    print("after delete: ran", time.perf_counter() - t0)
    del r


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
    if s is None:
        print(f"{facts.name}: no device memory stats, no free memory to fill")
        return
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


@section("7b call cost, profiled")
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


# Part 3 (issue 46, sections 1, 2, 3, 9, 10 as notebook lessons): the design questions each
# notebook cell depends on. Results: benchmarks/results/device_sections_c-tpu.txt.
@section("1c allocations held", needs_stats=True)
def _():
    N = 64
    f = jax.jit(lambda x: jnp.tanh(x) * 2.0)
    m = jax.jit(lambda xs: lax.map(lambda x: jnp.tanh(x) * 2.0, xs))
    items = [jnp.full((256,), i, jnp.float32) for i in range(N)]
    batch = jnp.stack(items)
    jax.block_until_ready((f(items[0]), f(batch), m(batch)))
    for name, run in (
        ("per-item calls", lambda: [f(x) for x in items]),
        ("one batched call", lambda: f(batch)),
        ("lax.map, one call", lambda: m(batch)),
        ("eager vmap", lambda: jax.vmap(lambda x: jnp.tanh(x) * 2.0)(batch)),
        ("eager per item", lambda: [jnp.tanh(x) * 2.0 for x in items]),
    ):
        s0 = stats()
        out = jax.block_until_ready(run())
        s1 = stats()
        del out
        s2 = stats()
        print(
            f"{name:18s} held: num_allocs {s1['num_allocs'] - s0['num_allocs']:+d} "
            f"in_use {s1['bytes_in_use'] - s0['bytes_in_use']:+,d}; after del: "
            f"num_allocs {s2['num_allocs'] - s0['num_allocs']:+d} peak {s1['peak_bytes_in_use']:,d}"
        )
    a = jnp.ones(1000)
    s0 = stats()
    a.delete()
    print("delete one array: num_allocs", stats()["num_allocs"] - s0["num_allocs"])


@section("2c compaction", needs_stats=True)
def _():
    blk = 128 << 20
    make = jax.jit(lambda v: jnp.full((blk // 4,), v, jnp.float32))
    big = jax.jit(lambda v: jnp.full((4 * blk // 4,), v, jnp.float32))
    jax.block_until_ready(big(jnp.float32(0)))
    for holes in (True, False):
        held = []
        while stats()["bytes_limit"] - stats()["bytes_in_use"] > 3 * blk and len(held) < 200:
            held.append(make(jnp.float32(len(held))))
        jax.block_until_ready(held)
        if holes:
            for i in range(0, len(held), 2):
                held[i].delete()
        else:  # same count freed, from the end: one free run
            for a in held[len(held) - len(held) // 2 - len(held) % 2 :]:
                a.delete()
        s = stats()
        free = s["bytes_limit"] - s["bytes_in_use"]
        lf = s["largest_free_block_bytes"]
        t0 = time.perf_counter()
        try:
            r = jax.block_until_ready(big(jnp.float32(1)))
            out = f"ran {time.perf_counter() - t0:.4f} s"
            del r
        except Exception as e:
            out = f"{type(e).__name__} {str(e).splitlines()[0][:160]}"
        t0 = time.perf_counter()
        r = jax.block_until_ready(big(jnp.float32(2)))
        again = time.perf_counter() - t0
        del r
        ok = all(float(a[0]) == i for i, a in enumerate(held) if not a.is_deleted())
        s2 = stats()
        print(
            f"holes={holes}: free {free / 2**20:,.0f} MiB largest {lf / 2**20:,.0f} MiB; 512 MiB: {out};"
            f" again {again:.4f} s; values kept {ok}; largest after {s2['largest_free_block_bytes'] / 2**20:,.0f} MiB"
        )
        for a in held:
            if not a.is_deleted():
                a.delete()
        del held
    # mixed sizes: 64, 128, 192 MiB
    sizes = [64 << 20, 128 << 20, 192 << 20]
    held, k = [], 0
    while stats()["bytes_limit"] - stats()["bytes_in_use"] > 4 * blk and k < 300:
        held.append(jnp.full((sizes[k % 3] // 4,), k, jnp.float32))
        k += 1
    jax.block_until_ready(held)
    for i in range(0, len(held), 2):
        held[i].delete()
    s = stats()
    print(
        f"mixed: free {(s['bytes_limit'] - s['bytes_in_use']) / 2**20:,.0f} MiB largest {s['largest_free_block_bytes'] / 2**20:,.0f} MiB"
    )
    ask = s["largest_free_block_bytes"] + (64 << 20)
    g = jax.jit(lambda v: jnp.full((ask // 4,), v, jnp.float32))
    try:
        jax.block_until_ready(g(jnp.float32(1)))
        print(
            f"mixed: {ask / 2**20:,.0f} MiB ran; largest after {stats()['largest_free_block_bytes'] / 2**20:,.0f} MiB"
        )
    except Exception as e:
        print("mixed:", type(e).__name__, str(e).splitlines()[0][:160])
    for a in held:
        if not a.is_deleted():
            a.delete()


@section("3c donation sweep", needs_stats=True)
def _():
    for mib in (1, 16, 64, 256):
        n = (mib << 20) // 4
        plain = jax.jit(lambda x: x + 1.0)
        donated = jax.jit(lambda x: x + 1.0, donate_argnums=0)
        state = {"plain": jnp.zeros((n,)), "donated": jnp.zeros((n,))}
        jax.block_until_ready(state)

        def step(name, f, k=10, state=state):
            x = state[name]
            for _ in range(k):
                x = f(x)
            state[name] = jax.block_until_ready(x)

        step("plain", plain)
        step("donated", donated)
        t = bl.measuring.interleaved(
            {
                "plain": lambda p=plain: step("plain", p),
                "donated": lambda d=donated: step("donated", d),
            },
            rounds=6,
        )
        s0 = stats()["bytes_in_use"]
        y = jax.block_until_ready(plain(state["plain"]))
        grow_p = stats()["bytes_in_use"] - s0
        del y
        s0 = stats()["bytes_in_use"]
        state["donated"] = jax.block_until_ready(donated(state["donated"]))
        grow_d = stats()["bytes_in_use"] - s0
        print(
            f"{mib:4d} MiB: per step plain {t['plain'].median / 10 * 1e6:9.1f} us donated "
            f"{t['donated'].median / 10 * 1e6:9.1f} us ratio {t['plain'].median / t['donated'].median:.2f}x;"
            f" in_use growth plain {grow_p / 2**20:.1f} MiB donated {grow_d / 2**20:.1f} MiB"
        )
        state.clear()


@section("9c layouts sweep", needs_stats=True)
def _():
    for b in (8, 100, 128, 1000, 1024, 4096):
        row = []
        for shape in ((b, 3), (3, b), (b, 128), (b,)):
            c = jax.jit(lambda x: x * 2.0).lower(jax.ShapeDtypeStruct(shape, jnp.float32)).compile()
            s0 = stats()["bytes_in_use"]
            a = jax.device_put(np.ones(shape, np.float32))
            jax.block_until_ready(a)
            live = stats()["bytes_in_use"] - s0
            row.append(
                f"{shape}: plan {c.memory_analysis().output_size_in_bytes} live {live} "
                f"plain {int(np.prod(shape)) * 4} layout {getattr(a, 'format', None) or getattr(a, 'layout', None)}"
            )
            del a
        print(" | ".join(row))


@section("10c precision")
def _():
    rng = np.random.default_rng(0)
    for n in (256, 1024):
        a = rng.standard_normal((8, n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        ref = np.einsum("bij,jk->bik", a.astype(np.float64), b.astype(np.float64))
        for prec in ("default", "high", "float32", "highest"):
            with jax.default_matmul_precision(prec):
                batched = jax.jit(jax.vmap(lambda x, b=b: x @ b))
                per = jax.jit(lambda x, b=b: x @ b)
                ab = np.asarray(batched(a), np.float64)
                ap = np.stack([np.asarray(per(x), np.float64) for x in a])
                ew = jax.jit(jax.vmap(lambda x: jnp.tanh(x) * 2.0))
                e = np.asarray(ew(a), np.float64)
                aj = jnp.asarray(a)
                t = bl.measuring.interleaved(
                    {
                        "batched": lambda f=batched, v=aj: f(v).block_until_ready(),
                        "tanh": lambda f=ew, v=aj: f(v).block_until_ready(),
                    },
                    rounds=4,
                )
            scale = np.abs(ref).max()
            print(
                f"n={n} {prec:8s} batched err {np.abs(ab - ref).max() / scale:.2e} per-item err "
                f"{np.abs(ap - ref).max() / scale:.2e} batched-vs-per {np.abs(ab - ap).max() / scale:.2e}"
                f" tanh err {np.abs(e - np.tanh(a.astype(np.float64)) * 2).max() / 2:.2e}"
                f" t batched {t['batched'].median * 1e6:.0f} us"
            )
