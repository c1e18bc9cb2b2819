"""Tests for batchlab.loading.files: same data every way, no drops, errors that name the file."""

from __future__ import annotations

import dataclasses
import pickle

import jax
import numpy as np
import pytest
from conftest import assert_close

from batchlab import exercises
from batchlab.loading.files import (
    METHODS,
    ORDERS,
    TRANSFERS,
    batch_indices,
    iter_batches,
    load_npy,
    make_dataset,
)
from batchlab.loading.speed import format_rate, measure_ceiling, measure_loading


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("data"), 11, (3, 2), seed=1)


@pytest.mark.parametrize("n_items,batch_size", [(0, 4), (1, 4), (10, 3), (9, 3), (5, 10)])
@pytest.mark.parametrize("order", ORDERS)
def test_batch_indices_cover_every_item_once(n_items, batch_size, order):
    batches = batch_indices(n_items, batch_size, order=order)
    flat = np.concatenate(batches) if batches else np.array([], int)
    assert sorted(flat.tolist()) == list(range(n_items))
    assert all(1 <= len(b) <= batch_size for b in batches)
    assert len(batches) == -(-n_items // batch_size)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("transfer", TRANSFERS)
@pytest.mark.parametrize("batch_size", [1, 4, 11, 32])
def test_every_way_loads_the_same_items(dataset, method, order, transfer, batch_size):
    bulk = np.load(dataset.bulk_path)
    batches = list(iter_batches(dataset, batch_size, method=method, order=order, transfer=transfer))
    index = np.concatenate(batch_indices(dataset.n_items, batch_size, order=order))
    assert [b.shape[0] for b in batches][:-1] == [batch_size] * (len(batches) - 1)
    assert_close(np.concatenate([np.asarray(b) for b in batches]), bulk[index])


def test_make_dataset_float32(tmp_path):
    d = make_dataset(tmp_path, 3, (4,))
    assert d.item_bytes == 4 * 4 and d.total_bytes == 3 * d.item_bytes
    assert load_npy(d.item_path(1), shape=(4,), dtype="float32").dtype == np.float32
    assert str(tmp_path) not in repr(d)


def test_mmap_returns_a_memmap(dataset):
    assert isinstance(load_npy(dataset.bulk_path, mmap=True), np.memmap)


def test_missing_file_names_path_and_expectation(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.npy.*not a file.*float32\[3\]"):
        load_npy(tmp_path / "nope.npy", shape=(3,), dtype="float32")


def test_pickled_object_array_is_refused(tmp_path):
    p = tmp_path / "obj.npy"
    np.save(p, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(
        ValueError,
        match=r"obj\.npy.*is no plain \.npy array \(np\.load raised ValueError\).*never unpickles",
    ) as info:
        load_npy(p)
    assert "allow_pickle=False" in str(info.value.__cause__)  # numpy's own refusal, chained


def test_plain_pickle_file_is_refused(tmp_path):
    p = tmp_path / "data.npy"
    p.write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(ValueError, match=r"data\.npy.*no plain \.npy array.*never unpickles"):
        load_npy(p)


@pytest.mark.parametrize("content", [b"", b"garbage, not numpy", b"\x93NUMPY\x01\x00v\x00{'descr'"])
def test_corrupt_file_is_reported(tmp_path, content):
    p = tmp_path / "bad.npy"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=r"bad\.npy.*no plain \.npy array.*expected"):
        load_npy(p, shape=(3,))


def test_truncated_file_is_reported(tmp_path):
    p = tmp_path / "cut.npy"
    np.save(p, np.arange(100.0))
    p.write_bytes(p.read_bytes()[:200])
    with pytest.raises(ValueError, match=r"cut\.npy.*no plain \.npy array"):
        load_npy(p, shape=(100,))


def test_npz_is_not_a_npy(tmp_path):
    p = tmp_path / "a.npz"
    np.savez(p, x=np.zeros(2))
    with pytest.raises(
        ValueError, match=r"a\.npz.*is no plain \.npy array \(np\.load returned NpzFile\).*expected"
    ):
        load_npy(p)


def test_shape_and_dtype_mismatch_names_the_argument_not_pickles(tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.zeros((2, 3), np.float32))
    with pytest.raises(
        ValueError,
        match=r"x\.npy holds float32\[2, 3\]; expected float32\[3, 2\]: `shape`=\(3, 2\)",
    ) as info:
        load_npy(p, shape=(3, 2), dtype="float32")
    assert "pickle" not in str(info.value)
    with pytest.raises(ValueError, match=r"holds float32\[2, 3\]; expected int32: `dtype`=int32"):
        load_npy(p, dtype="int32")
    with pytest.raises(ValueError, match=r": `shape`=\(3,\) and `dtype`=int32 does not match"):
        load_npy(p, shape=(3,), dtype="int32")


def test_missing_item_file_during_iteration(tmp_path):
    d = make_dataset(tmp_path, 4, (2,))
    d.item_path(2).unlink()
    it = iter_batches(d, 1, method="per_item")
    next(it), next(it)
    with pytest.raises(FileNotFoundError, match=r"000002\.npy.*float32\[2\]"):
        next(it)


def test_bulk_file_of_another_dataset(tmp_path):
    d = make_dataset(tmp_path, 4, (2,))
    np.save(d.bulk_path, np.zeros((5, 2), np.float32))
    with pytest.raises(
        ValueError, match=r"bulk\.npy.*holds float32\[5, 2\]; expected float32\[4, 2\]"
    ):
        next(iter_batches(d, 2, method="bulk"))


@pytest.mark.parametrize(
    "name,value,match",
    [
        ("method", "pickle", "`method` must be one of"),
        ("order", "backwards", "`order` must be one of"),
        ("transfer", "never", "`transfer` must be one of"),
    ],
)
def test_bad_choices(dataset, name, value, match):
    with pytest.raises(ValueError, match=match):
        next(iter_batches(dataset, 2, **{name: value}))


def test_bad_sizes(tmp_path, dataset):
    with pytest.raises(ValueError, match="`n_items` must be at least 1"):
        make_dataset(tmp_path, 0, (2,))
    with pytest.raises(ValueError, match="`item_shape` must be a tuple of sizes >= 0"):
        make_dataset(tmp_path, 2, (-1,))
    with pytest.raises(ValueError, match="`n_items` must be at least 0"):
        batch_indices(-1, 2)
    with pytest.raises(ValueError, match="`batch_size` must be at least 1"):
        batch_indices(3, 0)
    with pytest.raises(ValueError, match="`prefetch` must be at least 0"):
        measure_loading(dataset, 2, prefetch=-1)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_measure_loading_counts_items_and_bytes(dataset, maybe_jit, prefetch):
    step = maybe_jit(lambda b: b.sum())
    t = measure_loading(dataset, 4, method="per_item", step=step, prefetch=prefetch, repeat=1)
    assert t.items == dataset.n_items and t.bytes == dataset.total_bytes
    assert t.items_per_s > 0 and t.bytes_per_s == pytest.approx(t.items_per_s * dataset.item_bytes)
    assert "per_item" in repr(t) and "items/s" in repr(t)
    assert format_rate(2.5e9) == "2.50 GB/s"  # decimal units, as disk figures are quoted


def test_ceiling_measures_beyond_the_cache_by_default(dataset, monkeypatch):
    import batchlab.loading.speed as ls

    monkeypatch.setattr(ls, "last_level_cache_bytes", lambda: 1 << 20)  # a 1 MiB cache
    c = measure_ceiling(dataset, repeat=1)
    assert c.memcpy.bytes == c.file_read.bytes == c.bytes >= 4 << 20
    assert c.beyond_cache and "> the 1.00 MiB cache: RAM" in repr(c)
    assert c.bytes % dataset.item_bytes == 0 and "<table" in c._repr_html_()
    assert not (dataset.directory / "ceiling.bin").exists(), "the scratch file is removed"


def test_last_level_cache_is_a_size_or_unknown():
    from batchlab.loading.speed import last_level_cache_bytes

    size = last_level_cache_bytes()
    assert size is None or size >= 1 << 10


@pytest.mark.parametrize("step", [None, lambda b: b.sum()])
@pytest.mark.parametrize("sync", [False, True])
def test_measure_loading_sync_label(dataset, sync, step):
    # load only, sync still waits for each transfer: a setting of its own in the explorer
    t = measure_loading(dataset, 4, step=step, sync=sync, repeat=1)
    assert ("sync every step" in t.label) == sync and t.items == dataset.n_items
    with pytest.raises(TypeError, match="`sync` must be True or False"):
        measure_loading(dataset, 4, sync="yes")


def test_iter_batches_annotates_each_batch_for_the_profiler(dataset):
    from batchlab import trace

    # a first pass outside the trace: a fresh process's first compile (jnp.stack) puts its
    # own constants on the device, transfers that are not the items' (17 instead of 11 alone)
    [b.block_until_ready() for b in iter_batches(dataset, 4, transfer="item")]
    with trace() as t:
        out = [b for b in iter_batches(dataset, 4, transfer="item")]
        out[-1].block_until_ready()
    loads = t.result.find("load batch")
    assert [s.name for s in loads] == ["load batch 0", "load batch 1", "load batch 2"]
    assert t.result.transfers == dataset.n_items  # one device_put per item
    # jax 0.10.2: jnp.stack is one jitted call per batch, not one per item; jax 0.10.0 still
    # dispatched it op by op (14 dispatches for these 3 batches): the count depends on the version
    jax_version = tuple(int(p) for p in jax.__version__.split(".")[:3])
    if jax_version >= (0, 10, 2):
        assert t.result.dispatches == 3
    else:
        assert t.result.dispatches >= 3


def test_exercises_accept_solutions_and_hint_otherwise():
    good = lambda n, L, C, p: L + (n - 1) * max(L, C) + C if p else n * (L + C)  # noqa: E731
    assert exercises.check("loading.pipeline_time", good)
    no_start_up = lambda n, L, C, p: n * (max(L, C) if p else L + C)  # noqa: E731
    assert "start-up" in exercises.check("loading.pipeline_time", no_start_up).message
    wrong = exercises.check("loading.pipeline_time", lambda n, L, C, p: n * (L + C))
    assert not wrong and "same time" in wrong.message


def shuffled_slices(n, b, seed):
    starts = np.random.default_rng(seed).permutation(np.arange(0, n, b))
    return [np.arange(s, min(s + b, n)) for s in starts]


def test_shuffled_slices_exercise_accepts_slices_in_random_order_and_hints_otherwise():
    assert exercises.check("loading.shuffled_slices", shuffled_slices)
    in_order = exercises.check("loading.shuffled_slices", lambda n, b, s: batch_indices(n, b))
    assert not in_order and "random" in in_order.message
    gathers = exercises.check(
        "loading.shuffled_slices",
        lambda n, b, s: np.array_split(np.random.default_rng(s).permutation(n), max(1, -(-n // b))),
    )
    assert not gathers and "slice" in gathers.message
    dropped = exercises.check(
        "loading.shuffled_slices",
        lambda n, b, s: [np.arange(i, i + b) for i in range(0, n - b + 1, b)],
    )
    assert not dropped and "remainder" in dropped.message


def test_explorer_takes_the_runs_one_ceiling(dataset, monkeypatch):
    import batchlab.loading.speed as ls
    from batchlab.widgets import LoadingExplorer

    monkeypatch.setattr(ls, "last_level_cache_bytes", lambda: 256)  # a small, quick ceiling
    c = measure_ceiling(dataset, repeat=1)
    ex = LoadingExplorer(dataset, [4], repeat=1, ceiling=c)
    assert ex.ceiling is c and ex.update(sync=True).items == dataset.n_items
    ex.update(sync=False)
    assert len(ex.measured) == 2  # two settings, two bars: the sync one is not overwritten
    title = ex.figure().axes[0].get_title()
    assert "beyond the 256 B last-level cache" in title and "no ceiling" not in title
    roomy_cache = dataclasses.replace(c, cache_bytes=1 << 40)  # a cache the dataset fits in
    roomy = LoadingExplorer(dataset, [4], repeat=1, ceiling=roomy_cache)
    assert "the lines are no ceiling for it" in roomy.figure().axes[0].get_title()
    with pytest.raises(TypeError, match="`ceiling` must be a Ceiling"):
        LoadingExplorer(dataset, [4], repeat=1, ceiling=2.5)


def test_sync_less_exercise_traces_the_learners_loop():
    calls = []

    def ref():  # no device work: an overlap share of 0 on every trace
        calls.append("ref")
        return [1.0, 2.0]

    same = exercises.check(
        "loading.sync_less", {"loop": lambda: [1.0, 2.0], "overlap": "same"}, reference=ref
    )
    assert same, same.message
    assert calls == ["ref", "ref"]  # traced twice, alternating with the learner's loop
    grows = exercises.check(
        "loading.sync_less", {"loop": lambda: [1.0, 2.0], "overlap": "grows"}, reference=ref
    )
    assert not grows and "Not yet" in grows.message
    wrong = exercises.check(
        "loading.sync_less", {"loop": lambda: [1.0], "overlap": "same"}, reference=ref
    )
    assert not wrong and "returned 1 losses" in wrong.message
    not_fn = exercises.check("loading.sync_less", {"loop": [1.0], "overlap": "same"}, reference=ref)
    assert not not_fn and "the function itself" in not_fn.message


def test_max_time_stops_starting_passes_but_runs_at_least_one(dataset, monkeypatch):
    full = measure_loading(dataset, 4, repeat=4)
    assert full.runs == 4  # no budget: every pass runs
    capped = measure_loading(dataset, 4, repeat=4, max_time=1e-9)
    assert (
        capped.runs == 1 and capped.seconds > 0
    )  # the first pass is over budget: it is the only one
    with pytest.raises(ValueError, match="max_time"):
        measure_loading(dataset, 4, max_time=0)


def test_scaling_explorer_leaves_the_run_time_out_when_not_timed():
    import jax.numpy as jnp

    from batchlab.widgets import ScalingExplorer

    def make(n):
        return jnp.ones((n, 4))

    timed = ScalingExplorer(lambda b: b * 2, make, [3], [1])
    bare = ScalingExplorer(lambda b: b * 2, make, [3], [1], timed=False)
    assert len(timed.figure().axes) == 2 and len(bare.figure().axes) == 1
    texts = [ex._describe(ex.result) for ex in (timed, bare)]  # the explorer's text line
    assert "wall clock" in texts[0] and "wall clock" not in texts[1]
