"""max_batch_size: the largest batch under a budget, in about 2*log2(answer) compilations."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import batchlab
from batchlab.batching import batch
from batchlab.measuring import live as live_module
from batchlab.measuring.live import DeviceMemory
from batchlab.plots import plot_budget_curves
from batchlab.runs import compilation_target, default_budget, planned_bytes
from batchlab.runs.search import largest_fitting


def batched(fn, strategy="vmap", chunk_size=None):
    """``fn(item)`` batched the way ``max_batch_size`` plans it: ``batchlab.batch``."""
    return batch(fn, strategy=strategy, chunk_size=chunk_size)


D = 64


def widen(x):
    """A per-item function whose temporaries (D x D) dwarf its input and output."""
    h = jnp.tanh(jnp.outer(x, x))
    return h @ x


ITEM = jax.ShapeDtypeStruct((D,), jnp.float32)


def planned(fn, b, strategy="vmap", chunk_size=None):
    f = jax.jit(batched(fn, strategy, chunk_size))
    return planned_bytes(batchlab.memory_estimate(f, jax.ShapeDtypeStruct((b, D), jnp.float32)))


@pytest.mark.parametrize("budget_kib", [20, 100, 1000])
def test_answer_fits_and_next_does_not(budget_kib):
    budget = budget_kib * 1024
    r = batchlab.max_batch_size(widen, ITEM, budget_bytes=budget)
    b = int(r)
    assert b >= 1 and planned(widen, b) <= budget < planned(widen, b + 1)
    assert r.planned_bytes == planned(widen, b)
    assert r.compilations <= compilation_target(b) == 2 * math.floor(math.log2(b)) + 2
    assert dict(r.curve)[b + 1] > budget  # the neighbour of the answer was measured


def test_compilations_counted_by_jax_match():
    def scaled(x):
        return jnp.tanh(x) * 3.0

    with batchlab.count_compiles(match=r"scaled") as c:
        r = batchlab.max_batch_size(scaled, ITEM, budget_bytes=50_000)
    assert c.count == r.compilations == len(r.curve)


def test_chunked_fits_far_more_than_vmap():
    budget = 256 * 1024
    v = batchlab.max_batch_size(widen, ITEM, budget_bytes=budget)
    c = batchlab.max_batch_size(widen, ITEM, budget_bytes=budget, strategy="chunked", chunk_size=8)
    assert int(c) > 8 * int(v)
    assert v.monotone and int(c) % 8 == 0
    assert planned(widen, int(c), "chunked", 8) <= budget < planned(widen, int(c) + 1, "chunked", 8)
    # temp memory of lax.map stays flat beyond the chunk, vmap's grows with the batch
    f = jax.jit(batched(widen, "chunked", 8))
    temps = [
        batchlab.memory_estimate(f, jax.ShapeDtypeStruct((b, D), jnp.float32)).temp_bytes
        for b in (16, 64, 256)
    ]
    assert temps[0] == temps[1] == temps[2]


@pytest.mark.parametrize("strategy, chunk", [("chunked", 8), ("map", 8), ("chunked", 2)])
def test_chunked_remainder_is_not_monotone_and_is_probed(strategy, chunk):
    """lax.map plans a remainder apart: batch 241 plans more than batch 248 (chunk 8)."""
    assert planned(widen, 248 - chunk + 1, strategy, chunk) > planned(widen, 248, strategy, chunk)
    budget = planned(widen, 248, strategy, chunk)
    r = batchlab.max_batch_size(
        widen, ITEM, budget_bytes=budget, strategy=strategy, chunk_size=chunk, upper=300
    )
    assert int(r) >= 248 and not r.monotone and "not monotone" in repr(r)


def test_upper_caps_and_nothing_fits():
    r = batchlab.max_batch_size(lambda x: x + 1, ITEM, budget_bytes=10**9, upper=10)
    assert int(r) == 10 and r.capped and "capped" in repr(r)
    none = batchlab.max_batch_size(widen, ITEM, budget_bytes=8)
    assert int(none) == 0 and none.planned_bytes is None and none.compilations == 1


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.int8])
def test_pytree_items_and_dtypes(dtype):
    item = {"a": np.zeros((16,), dtype), "b": np.zeros((4, 4), dtype)}
    itemsize = np.dtype(dtype).itemsize
    r = batchlab.max_batch_size(
        lambda t: t["a"] + t["b"].reshape(-1), item, budget_bytes=3 * 16 * itemsize * 8
    )
    assert 1 <= int(r) <= 8  # inputs 2 x 16 values and output 16 values per item


def test_default_budget_per_backend():
    b = default_budget()
    assert b.bytes > 0
    if not batchlab.backend_facts().has_memory_stats:
        assert "host memory" in b.source
    else:
        assert "device memory" in b.source
    assert "Budget(" in repr(b)
    r = batchlab.max_batch_size(lambda x: x * 2, ITEM, upper=4)
    assert r.budget_source == b.source and int(r) == 4


def test_result_repr_and_plot():
    r = batchlab.max_batch_size(widen, ITEM, budget_bytes=100 * 1024)
    assert f"largest batch        {int(r)}" in repr(r)
    assert "<table" in r._repr_html_()
    fig = plot_budget_curves([r])
    assert fig.axes[0].get_xlabel() == "batch size (items, log2 scale)"
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any("(ringed)" in label for label in labels)
    assert list(range(10))[r] == int(r)  # usable as an index


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(budget_bytes=0), ValueError, "`budget_bytes` must be at least 1"),
        (dict(budget_bytes=1.5), TypeError, "`budget_bytes` must be a positive int"),
        (dict(budget_bytes=100, upper=0), ValueError, "`upper` must be at least 1"),
        (dict(budget_bytes=100, strategy="pmap"), ValueError, "`strategy` must be one of"),
        (
            dict(budget_bytes=100, chunk_size=4),
            ValueError,
            "`chunk_size` only applies to strategy='chunked'",
        ),
        (
            dict(budget_bytes=100, strategy="chunked"),
            ValueError,
            "`chunk_size` is required for strategy='chunked'",
        ),
        (
            dict(budget_bytes=100, strategy="map", chunk_size=0),
            ValueError,
            "`chunk_size` must be at least 1",
        ),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        batchlab.max_batch_size(widen, ITEM, **kwargs)


def test_fn_not_callable():
    with pytest.raises(TypeError, match=r"`fn` must be a function"):
        batchlab.max_batch_size("widen", ITEM, budget_bytes=100)


# --- the interpolating search, plans shared between budgets --------------------------------------

BUDGETS_KIB = (20, 64, 100, 256, 1000)


@pytest.mark.parametrize("strategy, chunk", [("vmap", None), ("chunked", 8)])
def test_interpolation_agrees_with_bisection_and_compiles_less(strategy, chunk):
    kw = dict(strategy=strategy, chunk_size=chunk) if chunk else {}
    total = {"interpolate": 0, "bisect": 0}
    for kib in BUDGETS_KIB:
        got = {
            m: batchlab.max_batch_size(widen, ITEM, budget_bytes=kib * 1024, method=m, **kw)
            for m in total
        }
        assert int(got["interpolate"]) == int(got["bisect"]), kib
        for m, r in got.items():
            total[m] += r.compilations
            assert r.method == m and m in repr(r)
    # planned bytes are close to a straight line in the batch: aiming beats halving
    assert total["interpolate"] < total["bisect"]
    if strategy == "vmap":
        assert total["interpolate"] <= 5 * len(BUDGETS_KIB)


def test_straight_line_needs_few_compilations():
    r = batchlab.max_batch_size(widen, ITEM, budget_bytes=1000 * 1024)
    # 1, 2, then the aimed answer and its neighbour; XLA's plan is not exactly linear in every
    # jax version (0.10.0 needs one more aim), so allow one extra step
    assert int(r) > 50 and 4 <= r.compilations <= 5
    assert compilation_target(int(r)) >= 2 * r.compilations  # bisection: 12 here


@pytest.mark.parametrize("strategy, chunk", [("vmap", None), ("chunked", 8)])
def test_known_plans_are_reused_and_answers_unchanged(strategy, chunk):
    kw = dict(strategy=strategy, chunk_size=chunk) if chunk else {}
    known: dict[int, int] = {}
    seen = []
    for kib in (256, 64, 1000, 100):  # an explorer's order: not sorted
        compiled: list[int] = []
        shared = batchlab.max_batch_size(
            widen, ITEM, budget_bytes=kib * 1024, known=known, on_compile=compiled.append, **kw
        )
        fresh = batchlab.max_batch_size(widen, ITEM, budget_bytes=kib * 1024, **kw)
        assert int(shared) == int(fresh), kib
        assert shared.compilations == len(compiled) and not set(compiled) & set(seen)
        seen += compiled
        assert set(dict(shared.curve)) <= set(known)
    again = batchlab.max_batch_size(widen, ITEM, budget_bytes=100 * 1024, known=known, **kw)
    assert again.compilations == 0 and "planned earlier" in repr(again)


def test_search_stats():
    jitted = jax.jit(batched(widen))
    known: dict = {}
    spec = lambda b: jax.ShapeDtypeStruct((b, *ITEM.shape), ITEM.dtype)  # noqa: E731
    plan_of = lambda b: batchlab.memory_estimate(jitted, spec(b)).planned_bytes  # noqa: E731
    answer, curve = largest_fitting(plan_of, 64 * 1024, 100, known=known)
    assert curve[answer] <= 64 * 1024 < curve[answer + 1] and known == curve


def test_known_and_on_compile_types():
    with pytest.raises(TypeError, match="`known` must be a dict"):
        batchlab.max_batch_size(widen, ITEM, budget_bytes=2**20, known=[1, 2])
    with pytest.raises(TypeError, match="`on_compile` must be a function"):
        batchlab.max_batch_size(widen, ITEM, budget_bytes=2**20, on_compile=3)
    with pytest.raises(ValueError, match="`method` must be one of"):
        batchlab.max_batch_size(widen, ITEM, budget_bytes=2**20, method="golden")


def test_plot_marks_remainder_sizes_apart():
    c = batchlab.max_batch_size(
        widen, ITEM, budget_bytes=256 * 1024, strategy="chunked", chunk_size=8
    )
    fig = plot_budget_curves([c])
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any("a remainder (batch % 8 != 0)" in label for label in labels)
    assert any(label.startswith("budget ") for label in labels)  # the red line has its entry
    assert any(b % 8 for b, _ in c.curve)  # the search measured a remainder size


class _FakeDevice:
    """A device whose allocator reports a pool smaller than its limit (not preallocated)."""

    platform = "gpu"

    def __init__(self, stats):
        self._stats = stats

    def memory_stats(self):
        return self._stats

    def __str__(self):
        return "fake:0"


def on_device(monkeypatch, stats):
    """default_budget() on a fake device reporting ``stats``."""
    dev = _FakeDevice(stats)
    monkeypatch.setattr(live_module.jax, "devices", lambda: [dev])
    return default_budget()


def test_default_budget_is_limit_minus_in_use_not_pool(monkeypatch):
    b = on_device(monkeypatch, {"bytes_in_use": 600, "pool_bytes": 1000, "bytes_limit": 4000})
    assert b.bytes == 3400 and "bytes_limit - bytes_in_use" in b.source
    pool_only = on_device(monkeypatch, {"bytes_in_use": 600, "pool_bytes": 1000})
    assert pool_only.bytes == 400 and "pool_bytes - bytes_in_use" in pool_only.source


def test_on_the_host_the_budget_is_half_the_available_memory(monkeypatch):
    class Memory:
        available = 7 * 2**30 + 1

    monkeypatch.setattr(live_module.jax, "devices", lambda: [_FakeDevice(None)])
    monkeypatch.setattr("psutil.virtual_memory", lambda: Memory)
    b = default_budget()
    assert b == (Memory.available // 2, "50% of available host memory (psutil)")
    assert type(b.bytes) is int and repr(b).startswith("Budget(3.50 GiB; source: 50%")


def test_a_full_device_gives_no_room_never_the_hosts_memory(monkeypatch):
    """A GPU with 0 bytes left is a budget of 0 (0 is falsy: it used to fall back to host RAM)."""
    full = on_device(monkeypatch, {"bytes_in_use": 4000, "pool_bytes": 4000, "bytes_limit": 4000})
    assert full.bytes == 0 and "memory_stats" in full.source


def test_room_and_free_in_pool():
    s = DeviceMemory(
        device="fake",
        bytes_in_use=600,
        pool_bytes=1000,
        bytes_limit=4000,
        largest_free_block_bytes=100,
    )
    assert s.room_bytes == 3400
    assert s.free_in_pool_bytes == 400
    assert s.fragmentation == pytest.approx(0.75)  # measured inside the pool, where the blocks are


# --- 'batches wait for free memory' from a measurement; the real out-of-memory -------------


def _real_oom():
    """XLA's own RESOURCE_EXHAUSTED for a 256 TiB output, beyond any address space: (the error,
    where it was raised: "compile" or "call", compilations during the call)."""
    x = jnp.ones(2**23, jnp.float32)
    try:
        compiled = jax.jit(lambda x: jnp.outer(x, x)).lower(x).compile()
    except jax.errors.JaxRuntimeError as e:
        return e, "compile", 0
    with batchlab.count_compiles() as compiles:
        try:
            compiled(x).block_until_ready()
        except jax.errors.JaxRuntimeError as e:
            return e, "call", compiles.count
    return None, "call", compiles.count


def test_real_out_of_memory_is_raised_at_once_and_recognised():
    from batchlab.runs.errors import is_out_of_memory

    err, where, compiles = _real_oom()
    assert err is not None and "RESOURCE_EXHAUSTED" in str(err) and is_out_of_memory(err)
    # where the backend raises it (XLA:TPU when compiling the plan; elsewhere on the first call
    # of the compiled program, which compiles nothing more)
    assert where == ("compile" if batchlab.backend_facts().oom_at_compile else "call")
    assert compiles == 0


@pytest.mark.parametrize(
    "exercise_id, right, wrong, hint",
    [
        ("budget.features_effect", 0.2, 2.0, "more memory per item"),
        ("budget.features_effect", 0.2, 0.5, "Fewer items fit"),
        ("faults.double_budget", 2.0, 1.0, "More than that fits"),
        ("faults.double_budget", 2.0, 4.0, "Less than that fits"),
    ],
)
def test_open_exercises_check_direction_and_order(exercise_id, right, wrong, hint):
    from batchlab import exercises

    # 06's CPU run: 15 -> 3 items at D = 64 -> 128 (0.2); 07's: 15 -> 31 (2.07)
    measured = 0.2 if exercise_id == "budget.features_effect" else 2.07
    assert exercises.check(exercise_id, right, measured_ratio=measured).ok
    bad = exercises.check(exercise_id, wrong, measured_ratio=measured)
    assert not bad.ok and hint in bad.message
    assert "No answer yet" in exercises.check(exercise_id, ..., measured_ratio=measured).message


# ---------------------------------------------------------------- strategy="host" (issue 15)
def _outer(x):
    return jnp.tanh(jnp.outer(x, x)) @ x  # a (D, D) temporary per item


def test_max_batch_size_plans_the_host_loop_by_its_host_plan():
    item = jax.ShapeDtypeStruct((32,), jnp.float32)
    budget = 1 << 20
    host = batchlab.max_batch_size(
        _outer, item, budget_bytes=budget, strategy="host", chunk_size=16
    )
    vmap = batchlab.max_batch_size(_outer, item, budget_bytes=budget)
    f = batchlab.batch(_outer, strategy="host", chunk_size=16)
    plan = lambda b: f.plan(jax.ShapeDtypeStruct((b, 32), jnp.float32)).planned_bytes  # noqa: E731
    b = int(host)
    assert plan(b) <= budget < plan(b + 1)  # the answer is exact for the host loop's own plan
    assert dict(host.curve)[b] == plan(b)
    # one chunk's (D, D) temporaries instead of the whole batch's: far more items fit
    assert b > 4 * int(vmap)


def test_host_strategy_needs_a_chunk_size():
    with pytest.raises(ValueError, match="`chunk_size` is required for strategy='host'"):
        batchlab.max_batch_size(_outer, jax.ShapeDtypeStruct((8,), jnp.float32), strategy="host")


def _result(**changes):
    from batchlab.runs.budget import BatchSizeResult

    fields = dict(batch_size=8, budget_bytes=3 << 20, budget_source="given", strategy="chunked",
                  chunk_size=4, curve=((4, 1 << 20), (8, 2 << 20), (16, 4 << 20)), upper=64,
                  compilations=2, method="bisection", margin=1.5,
                  margin_source="calibrated: 1.50x measured", calibration=None)  # fmt: skip
    return BatchSizeResult(**{**fields, **changes})


def test_the_result_table_reads_every_figure_of_the_search():
    from batchlab._util.format import format_bytes

    assert _result()._rows() == [
        ("largest batch", "8"),
        ("planned bytes there", "2.00 MiB"),
        ("budget", "3.00 MiB (given)"),
        ("margin", "1.50x (calibrated: 1.50x measured)"),
        ("plan compared with", f"budget / margin = {format_bytes(int((3 << 20) / 1.5))}"),
        ("strategy", "chunked (chunk_size=4)"),
        ("compilations", "2 (bisection search; 1 more sizes planned earlier)"),
    ]
    plain = _result(margin=None, margin_source=None, strategy="vmap", chunk_size=None,
                    compilations=2, batch_size=64,
                    curve=((32, 2 << 20), (64, 1 << 20)))  # fmt: skip
    assert plain._rows() == [
        ("largest batch", "64 (capped by `upper`)"),
        ("planned bytes there", "1.00 MiB"),
        ("budget", "3.00 MiB (given)"),
        ("strategy", "vmap"),
        ("compilations", "2 (bisection search)"),
        ("warning", "planned bytes are not monotone in the batch size"),
    ]
    assert plain.planned_budget_bytes == 3 << 20 and _result().planned_budget_bytes == 2 << 20
    assert _result()._title() == "max_batch_size (compiled memory analysis (XLA), nothing executed)"
    from batchlab.runs.calibration import Calibration

    for where in ("in a fresh process", "in this process"):
        ran = _result(calibration=Calibration(1.5, (), "measured", where))._title()
        assert (
            ran
            == f"max_batch_size (compiled memory analysis (XLA); the margin's batches run {where})"
        )
    oom = _result(no_room=(32, 64))._rows()
    assert oom[-1] == ("out of memory compiling", "batch 32, 64 (counted as not fitting)")


def test_a_given_budget_is_named_given_and_only_axis_0_or_none_is_planned():
    item = jax.ShapeDtypeStruct((8,), jnp.float32)
    r = batchlab.max_batch_size(lambda x: 2 * x, item, budget_bytes=1 << 16, upper=64)
    assert r.budget_source == "given" and "(given)" in repr(r)
    w = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    for axes in [(1, None), (0, 1), (None, None), (True, None)]:
        with pytest.raises(ValueError, match="`in_axes` must be 0 or a tuple of 0"):
            batchlab.max_batch_size(lambda x, w: x @ w, (item, w), in_axes=axes)


def test_a_calibrated_search_where_nothing_fits_says_so_and_runs_nothing():
    item = jax.ShapeDtypeStruct((256,), jnp.float32)
    r = batchlab.max_batch_size(lambda x: 2 * x, item, budget_bytes=1, margin="calibrated")
    assert int(r) == 0 and r.calibration is None and r.margin == 1.0
    assert r.margin_source == "uncalibrated: not even one item fits the plan"
    with pytest.raises(TypeError, match=r"`known` must be a dict .* got list\."):
        batchlab.max_batch_size(lambda x: 2 * x, item, known=[(1, 1024)])


def _staircase_search(plan, budget, tiles):
    """The search over a synthetic plan of the batch size (nothing compiled): (answer, sizes)."""
    answer, curve = largest_fitting(plan, budget, 2**20, tiles)
    return answer, len(curve)


@pytest.mark.parametrize("budget_kib", [8, 20, 60, 64, 128, 256, 2048])
def test_on_a_tiled_staircase_aiming_along_the_tiles_takes_a_handful(budget_kib):
    # XLA:TPU's plan of a (b, 64) float32 in and out: rows padded to 8, or b on the 128 lanes
    ru = lambda b, t: -(-b // t) * t  # noqa: E731
    plan = lambda b: min(1024 * ru(b, 8), 512 * ru(b, 128))  # noqa: E731
    budget = budget_kib * 1024
    tiled, n_tiled = _staircase_search(plan, budget, (128, 8))
    plain, n_plain = _staircase_search(plan, budget, ())
    assert tiled == plain and plan(tiled) <= budget < plan(tiled + 1)
    assert n_tiled <= 6, n_tiled  # the plain aimed search took 8 to 28 on these budgets
    assert n_tiled <= n_plain


@settings(max_examples=60, deadline=None)
@given(
    a=st.integers(1, 4096),
    c=st.integers(1, 4096),
    base=st.integers(0, 2**20),
    budget=st.integers(1, 2**26),
    linear=st.booleans(),
)
def test_the_tiled_search_answer_fits_and_the_next_does_not(a, c, base, budget, linear):
    ru = lambda b, t: -(-b // t) * t  # noqa: E731
    plan = (
        (lambda b: base + a * b) if linear else (lambda b: base + min(a * ru(b, 8), c * ru(b, 128)))
    )
    answer, _ = largest_fitting(plan, budget, 2**20, (128, 8))
    brute = next((b for b in range(1, 2**20 + 1) if plan(b) > budget), 2**20 + 1) - 1
    assert answer == brute


def test_the_bisect_method_visits_exactly_the_classic_doubling_then_bisection():
    plan = lambda b: 1000 * b + 500  # noqa: E731 (a line: aiming would hit the answer at once)
    budget, seen = 37_000, []

    def classic(b):
        seen.append(b)
        return plan(b) <= budget

    lo, hi = 0, 1
    while classic(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if classic(mid) else (lo, mid)
    answer, curve = largest_fitting(plan, budget, 2**20, method="bisect")
    assert answer == lo == 36 and set(curve) == set(seen), (sorted(curve), sorted(seen))


def test_the_compilation_target_is_the_classic_count():
    assert [compilation_target(a) for a in (0, 1, 2, 7, 8, 512)] == [1, 2, 4, 6, 8, 20]
