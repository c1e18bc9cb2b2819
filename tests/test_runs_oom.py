"""Every out-of-memory form XLA:CPU raises, every call logged, a size search that stops (issue 26)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import fails_on_five

import batchlab
from batchlab.runs.errors import is_out_of_memory, oom_kind, short_message

# XLA:CPU's texts for one allocation it cannot make (jax 0.10.2). The first two were raised on
# this machine under an address-space limit (RLIMIT_AS); the third is quoted from issue 26
# (seen when other programs ran before); the fourth is what XLA gives for a 256 TiB buffer.
REAL_OOM_TEXTS = [
    "INTERNAL: YNNPACK operation failed: error",
    "RESOURCE_EXHAUSTED: Out of memory allocating 67108864 bytes.",
    "INTERNAL: Error dispatching computation: Out of memory allocating 4294967296 bytes.",
    "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 281474976710656 bytes.",
]
NOT_OOM_TEXTS = [
    "INTERNAL: something else",
    "INVALID_ARGUMENT: shapes do not match",
    # a Python callback's own error quoting the words: the user's message, not memory
    "INTERNAL: CpuCallback error calling callback: Traceback\nValueError: out of memory in the sensor",
]


def item_fn(x):
    return jnp.tanh(x).sum() * 2.0


def data(n, d=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


@pytest.mark.parametrize("text", REAL_OOM_TEXTS)
def test_every_xla_oom_form_is_memory(text):
    assert is_out_of_memory(jax.errors.JaxRuntimeError(text))


@pytest.mark.parametrize("text", NOT_OOM_TEXTS)
def test_other_errors_are_not_memory(text):
    assert not is_out_of_memory(jax.errors.JaxRuntimeError(text))


def test_a_real_xla_oom_and_a_callback_memory_error():
    big = jnp.ones(2**23, jnp.float32)
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        jax.jit(lambda v: jnp.outer(v, v))(big).block_until_ready()  # 256 TiB
    assert is_out_of_memory(info.value) and oom_kind(info.value).startswith("out of memory (XLA")
    callback = jax.errors.JaxRuntimeError("INTERNAL: CpuCallback error: Traceback\nMemoryError: x")
    assert is_out_of_memory(callback)
    assert oom_kind(MemoryError()) == "out of memory (host MemoryError)"


@pytest.mark.parametrize("text", REAL_OOM_TEXTS[:3])
def test_the_issue_case_shrinks_and_logs_every_call(text):
    """Issue 26: a fn failing above 100 items with an INTERNAL OOM was bisected as bad items,
    never shrunk, and logged as 35 calls with batch_sizes == [400], retries == 0, all 'ok'."""
    calls = []

    def fn(batch):
        calls.append(batch.shape[0])
        if batch.shape[0] > 100:
            raise jax.errors.JaxRuntimeError(text)
        return jax.vmap(item_fn)(batch)

    r = batchlab.run_batches(fn, data(400), batch_size=400, strategy="manual", progress=False)
    assert r.complete and r.failures == ()
    assert max(r.batch_sizes) == 100 and 400 not in r.batch_sizes
    assert len(r.batches) == len(calls)  # every call is in the log, with its outcome
    failed = [b for b in r.batches if b.out_of_memory]
    assert r.retries == len(failed) == sum(c > 100 for c in calls) >= 2
    assert all(b.status.startswith("out of memory (XLA") for b in failed)
    assert all(b.status.startswith("ok") for b in r.batches if not b.out_of_memory)


def test_bisection_halves_are_logged_with_their_depth():
    xs = data(16)
    xs[5, 0] = 1e6
    calls = []

    def picky(batch):
        calls.append(batch.shape[0])
        if (np.asarray(batch)[:, 0] == 1e6).any():
            raise ValueError("item out of range")
        return jax.vmap(item_fn)(batch)

    r = batchlab.run_batches(picky, xs, batch_size=8, strategy="manual", progress=False)
    assert r.failed_indices == [5] and len(r.batches) == len(calls)
    assert [(b.start, b.size, b.items, b.depth, b.status) for b in r.batches] == [
        (0, 8, 8, 0, "error in fn, bisected"),  # items 0-7
        (0, 4, 4, 1, "ok"),  # 0-3
        (4, 4, 4, 1, "error in fn, bisected"),  # 4-7
        (4, 2, 2, 2, "error in fn, bisected"),  # 4-5
        (4, 1, 1, 3, "ok"),  # 4
        (5, 1, 1, 3, "error in fn"),  # 5: pinned
        (6, 2, 2, 2, "ok"),  # 6-7
        (8, 8, 8, 0, "ok"),  # 8-15
    ]
    assert all(0 <= b.seconds <= r.seconds for b in r.batches)  # each call's own wall clock
    assert r.batch_sizes == [8] and r.retries == 0


def grows(limit):
    def fn(batch):
        if batch.shape[0] > limit:
            raise jax.errors.JaxRuntimeError(REAL_OOM_TEXTS[0])
        return jax.vmap(item_fn)(batch)

    return fn


@pytest.mark.parametrize("limit, n, start", [(37, 300, 128), (700, 12000, 1024)])
def test_oom_search_settles_on_the_largest_size_that_runs(limit, n, start):
    r = batchlab.run_batches(
        grows(limit), data(n, d=2), batch_size=start, strategy="manual", progress=False
    )
    assert r.complete and max(r.batch_sizes) == limit
    assert min(b.size for b in r.batches if b.out_of_memory) == limit + 1


def test_equinox_error_if_message_is_kept_whole():
    """eqx.error_if's text is framed by dashes; the failure keeps the words, and the whole text."""

    def fn(x):
        x = eqx.error_if(x, x[0] > 100, "value above 100: a corrupt sensor reading")
        return item_fn(x)

    xs = data(8)
    xs[3, 0] = 1e3
    import logging

    logger = logging.getLogger("jax._src.callback")
    level, logger.level = logger.level, 50
    try:
        r = batchlab.run_batches(fn, xs, batch_size=4, progress=False)
    finally:
        logger.level = level
    assert r.failed_indices == [3]
    failure = r.failures[0]
    assert "value above 100: a corrupt sensor reading" in failure.message
    assert failure.message.strip("-").strip() != ""
    assert "value above 100" in failure.detail and len(failure.detail) > len(failure.message)
    assert "value above 100" in repr(r)


def test_short_message_skips_decoration_and_keeps_continuations():
    text = "Traceback:\n  File x\nMyError: first line\n  second line\n\n-----\nHint: use filter_jit\n-----"
    assert short_message(RuntimeError(text)) == "MyError: first line second line"
    assert short_message(RuntimeError("-----")) == "RuntimeError"
    assert len(short_message(ValueError("x" * 5000))) == 1000


def test_short_last_batch_runs_at_its_own_size_and_a_batched_fn_gets_no_filler():
    """Issue 34: the remainder ran padded up to the current batch size (7,032 items as a batch of
    14,765: out of memory); a batched fn saw filler rows (copies of the last item)."""
    seen = []

    def fn(batch):
        seen.append(np.asarray(batch[:, 0]).tolist())
        return grows(37)(batch)

    xs = data(300)
    xs[:, 0] = np.arange(300.0)  # each item tagged by its index
    r = batchlab.run_batches(fn, xs, batch_size=37, strategy="manual", progress=False)
    assert r.complete and r.retries == 0 and r.batch_sizes == [300 % 37, 37]
    assert [b.size for b in r.batches] == [37] * 8 + [300 % 37]
    assert all(len(s) == len(set(s)) for s in seen), "a batched fn got filler rows"
    assert sorted(i for s in seen for i in s) == list(range(300))
    # a per-item fn too: the remainder plans (and runs) at its own size, below the last failure
    r = batchlab.run_batches(item_fn, data(10), batch_size=4, progress=False)
    assert [(b.size, b.items) for b in r.batches] == [(4, 4), (4, 4), (2, 2)]


def test_remainder_after_a_memory_error_stays_below_the_failed_size():
    r = batchlab.run_batches(grows(37), data(100), batch_size=64, strategy="manual", progress=False)
    ran = [b for b in r.batches if b.status.startswith("ok")]
    failed = min(b.size for b in r.batches if b.out_of_memory)
    assert r.complete and all(b.size < failed and b.size == b.items for b in ran[-1:])
    assert sum(b.items for b in ran) == 100


def test_a_memory_error_is_logged_where_it_struck_and_one_item_still_runs():
    """Only one item fits: the run shrinks to 1 and completes; each failed call is logged with
    its first item, its size and items, and its own duration."""
    r = batchlab.run_batches(
        grows(1), data(5, d=2), batch_size=4, strategy="manual", progress=False
    )
    assert r.complete and r.batch_sizes == [1] and len(r.indices) == 5
    failed = [b for b in r.batches if b.out_of_memory]
    assert r.retries == len(failed) == 2  # 4, then 2, then 1 runs
    assert [(b.start, b.size, b.items) for b in failed] == [(0, 4, 4), (0, 2, 2)]
    assert all(0 <= b.seconds < 30 for b in r.batches)


def test_a_memory_error_in_a_bisection_half_is_logged_as_the_bisected_batch():
    """A bad item is being bisected out when a half runs out of memory: the batch's line says it
    was bisected, and the run goes on smaller."""
    xs = data(8, d=2)
    xs[1, 0] = 1e6
    calls = []

    def fn(batch):
        calls.append(batch.shape[0])
        if (np.asarray(batch)[:, 0] == 1e6).any() and batch.shape[0] > 1:
            raise ValueError("item out of range")
        if len(calls) == 3:  # the second half of the first bisection
            raise jax.errors.JaxRuntimeError(REAL_OOM_TEXTS[0])
        if (np.asarray(batch)[:, 0] == 1e6).any():
            raise ValueError("item out of range")
        return jax.vmap(item_fn)(batch)

    r = batchlab.run_batches(fn, xs, batch_size=4, strategy="manual", progress=False)
    assert r.batches[0].status == "error in fn, bisected" and r.batches[0].depth == 0
    assert r.complete and r.failed_indices == [1] and r.retries == 1


def test_nan_outputs_and_bad_items_in_one_batch_are_all_failures():
    items = [np.full(3, float(i), np.float32) for i in range(6)]
    items[1], items[2] = np.zeros(4, np.float32), np.full(3, np.nan, np.float32)
    r = batchlab.run_batches(lambda x: x * 2, items, batch_size=6, check_nan=True, progress=False)
    assert r.failed_indices == [1, 2] and [f.kind for f in r.failures] == [
        "bad item",
        "NaN/inf output",
    ]


def test_a_bisections_halves_share_one_compile_and_a_manual_fn_sees_only_its_items():
    xs = np.arange(7, dtype=np.float32)
    with batchlab.count_compiles() as compiles:
        r = batchlab.run_batches(fails_on_five, xs, batch_size=7, progress=False)
    assert r.failed_indices == [5]
    # 7 -> halves of 4 and 3 (padded to 4) -> 2 and 1 (padded to 2) -> 1 and 1
    assert [(b.start, b.size, b.items) for b in r.batches] == [
        (0, 7, 7),
        (0, 4, 4),
        (4, 4, 3),
        (4, 2, 2),
        (4, 1, 1),
        (5, 1, 1),
        (6, 2, 1),
    ]
    assert compiles.count == 4, compiles  # one program per size: 7, 4, 2 and 1
    seen = []

    def batched(batch):
        seen.append(np.asarray(batch).tolist())
        if 5.0 in seen[-1]:
            raise ValueError("item 5 is bad")
        return batch * 2

    r = batchlab.run_batches(batched, xs, batch_size=7, strategy="manual", progress=False)
    assert r.failed_indices == [5]
    assert seen == [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3], [4, 5, 6], [4, 5], [4], [5], [6]]


def test_a_resume_at_the_same_settings_starts_at_the_size_it_learned(tmp_path):
    xs, path, sizes = data(40), tmp_path / "run.ckpt", []

    def fn(batch):
        if len(sizes) == 3 and not sizes[-1] == "go on":
            raise KeyboardInterrupt
        sizes.append(batch.shape[0])
        return grows(6)(batch)

    kw = dict(batch_size=16, strategy="manual", checkpoint=path, run_name="learn", progress=False)
    with pytest.raises(batchlab.runs.RunInterrupted) as stopped:
        batchlab.run_batches(fn, xs, **kw)
    assert f"they are saved in {str(path)!r}: rerun the same call to resume" in str(stopped.value)
    assert sizes == [16, 8, 4]  # two out of memory, then 4 ran (the search goes on at 6)
    sizes.append("go on")
    r = batchlab.run_batches(fn, xs, **kw)
    assert r.complete and r.resumed_items == 4 and not r.resumed_at_other_size
    assert sizes[4:6] == [6, 7] and 16 not in sizes[4:]  # the search goes on where it stood
    # the same run at another batch_size keeps the items and sizes itself again from there
    r2 = batchlab.run_batches(fn, xs, **{**kw, "batch_size": 5})
    assert r2.resumed_items == 40 and r2.resumed_at_other_size


def test_out_of_memory_at_one_item_says_jaxs_message_and_a_batch_of_two_bugs_the_fn():
    r = batchlab.run_batches(grows(0), data(3), batch_size=1, strategy="manual", progress=False)
    assert r.stop_reason == (
        "out of memory (XLA INTERNAL: out of memory) even at batch size 1: "
        "JaxRuntimeError: INTERNAL: YNNPACK operation failed: error"
    ), r.stop_reason

    def broken(batch):
        raise ValueError("boom")

    with pytest.raises(batchlab.runs.BatchFnError, match=r"alone and as a batch of 2") as e:
        batchlab.run_batches(broken, data(2), batch_size=2, strategy="manual", progress=False)
    assert type(e.value.__cause__) is ValueError and str(e.value.__cause__) == "boom"


def test_a_batch_of_one_failing_is_that_items_error_and_skipped_bad_items_start_the_log():
    items = [np.full(3, i, np.float32) for i in range(6)]
    items[2] = np.zeros(4, np.float32)

    def picky(x):  # one item; item 4 fails in its callback
        def host(v):
            if np.all(np.asarray(v) == 4.0):
                raise ValueError("item 4 is bad")
            return np.asarray(v).sum(keepdims=True)

        return jax.pure_callback(
            host, jax.ShapeDtypeStruct((1,), x.dtype), x, vmap_method="sequential"
        )

    r = batchlab.run_batches(picky, items, batch_size=1, progress=False)
    assert r.failed_indices == [2, 4]
    assert r.failures[1].message == "ValueError: item 4 is bad"
    r = batchlab.run_batches(lambda x: x.sum(), items, batch_size=2, progress=False)
    assert [(b.start, b.items, b.status) for b in r.batches] == [
        (0, 2, "ok"),
        (2, 2, "ok, 1 bad item(s)"),
        (5, 1, "ok"),  # 2 is passed over: 3 and 4 run
    ]


# --------------------------------- out of memory raised when COMPILING (XLA:TPU, issue 45)
# XLA:TPU's text for a program over HBM, raised by `.compile()` (TPU v5e, jax 0.10.2): the
# program never runs, so every search and every run must catch it at compile time as well
TPU_COMPILE_OOM = (
    "RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO "
    "temporaries (256.00T) exceeds available HBM (15.75G)."
)


def compile_runs_out_above(monkeypatch, limit, strategy=None):
    """The kit's compile step as XLA:TPU's: a batch over ``limit`` items (of ``strategy``)
    raises TPU_COMPILE_OOM from the compile; returns the batch sizes that compiled."""
    from batchlab.measuring import plan as planning

    real, compiled = planning.compile_fn, []

    def compile_fn(fn, specs, kwargs, **kw):
        n = jax.tree_util.tree_leaves(specs)[0].shape[0]
        if n > limit and strategy in (None, getattr(fn, "strategy", None)):
            raise jax.errors.JaxRuntimeError(TPU_COMPILE_OOM)
        compiled.append(n)
        return real(fn, specs, kwargs, **kw)

    monkeypatch.setattr(planning, "compile_fn", compile_fn)
    return compiled


def test_the_tpu_compile_text_is_out_of_memory():
    error = jax.errors.JaxRuntimeError(TPU_COMPILE_OOM)
    assert is_out_of_memory(error) and oom_kind(error) == "out of memory (XLA RESOURCE_EXHAUSTED)"


def test_a_batch_whose_compile_runs_out_of_memory_is_retried_smaller(monkeypatch):
    compiled = compile_runs_out_above(monkeypatch, 37)
    xs = data(300)
    r = batchlab.run_batches(item_fn, xs, batch_size=128, progress=False)
    assert r.complete and r.batches[0].size == 128
    assert r.batches[0].status == "out of memory (XLA RESOURCE_EXHAUSTED)"
    assert max(b.size for b in r.batches if b.status == "ok") <= 37 and max(compiled) <= 37
    np.testing.assert_allclose(r.outputs, jax.vmap(item_fn)(xs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method", ["interpolate", "bisect"])
def test_a_size_whose_compile_runs_out_of_memory_does_not_fit(monkeypatch, method):
    compile_runs_out_above(monkeypatch, 100)
    item = jax.ShapeDtypeStruct((256,), jnp.float32)
    known = {}
    r = batchlab.max_batch_size(
        lambda x: 2 * x, item, budget_bytes=1 << 40, method=method, known=known
    )
    assert int(r) == 100 and 101 in r.no_room and min(r.no_room) > 100
    assert max(b for b, _ in r.curve) == 100 and r.monotone  # only real plans in the curve
    assert (
        "out of memory compiling",
        f"batch {', '.join(map(str, r.no_room))} (counted as not fitting)",
    ) in r._rows()
    assert known[101] == float("inf")  # a later search of the same fn knows it does not fit
