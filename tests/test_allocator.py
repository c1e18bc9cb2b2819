"""The allocator simulation: hand-computed traces, invariants under random traces, errors."""

from __future__ import annotations

import numpy as np
import pytest

from batchlab import allocator as A
from batchlab import exercises
from batchlab.allocator import workloads
from batchlab.allocator.bfc import ALIGNMENT, FREE, USED, BFCAllocator
from batchlab.allocator.replayer import CapacityScan, Event, EventsBuilder, make_allocator
from batchlab.allocator.workloads import workload

MiB = 1 << 20
SETUPS = [("bfc", True), ("bfc", False)]


def check_invariants(a: BFCAllocator) -> None:
    position = 0
    for chunk in a.chunks:  # contiguous, non-overlapping, covering the device
        assert chunk.offset == position and chunk.size > 0
        position = chunk.offset + chunk.size
    assert position == a.capacity
    for left, right in zip(
        a.chunks, a.chunks[1:], strict=False
    ):  # coalescing left nothing to merge
        assert not (left.state == right.state != USED and left.region == right.region)
    assert a.in_use == sum(c.requested for c in a.chunks if c.state == USED)
    assert {c.id for c in a.chunks if c.state == USED} == set(a.live)
    assert all(c.size % ALIGNMENT == 0 and c.size >= c.requested for c in a.live.values())
    assert 0.0 <= a.fragmentation <= 1.0


# ---------------------------------------------------------------- hand-computed traces
def test_bfc_rounds_to_alignment_and_splits():
    a = A.BFCAllocator(4096)
    x = a.allocate("x", 1)
    assert (x.offset, x.size, x.requested) == (0, 256, 1)
    assert [(c.offset, c.size, c.state) for c in a.chunks] == [(0, 256, USED), (256, 3840, FREE)]
    assert a.in_use == 1 and a.bytes_in_use == 256 and a.device_calls == 1


def test_bfc_best_fit_picks_smallest_hole():
    a = A.BFCAllocator(8192)
    for name, size in [("a", 2048), ("b", 256), ("c", 1024), ("d", 256)]:
        a.allocate(name, size)
    a.free("a")
    a.free("c")  # holes: 2048 at 0, 1024 at 2304, tail 4608 at 3584
    assert a.allocate("e", 1000).offset == 2304  # the 1024 hole, not the first (2048) one


def test_bfc_does_not_split_a_chunk_less_than_twice_the_request():
    a = A.BFCAllocator(1 << 20)
    a.allocate("a", 1024)
    a.allocate("b", 256)
    a.free("a")
    c = a.allocate("c", 768)  # 1024 < 2 * 768: the whole chunk is handed out
    assert (c.offset, c.size, c.requested) == (0, 1024, 768)
    assert a.bytes_in_use - a.in_use == 256 + 0  # internal fragmentation


def test_bfc_coalesces_neighbours_on_free():
    a = A.BFCAllocator(4096)
    for name in "abcd":
        a.allocate(name, 1024)
    a.free("a")
    a.free("c")
    assert a.largest_free == 1024 and a.free_total == 2048
    assert a.fragmentation == pytest.approx(0.5)
    a.free("b")  # merges a, b and c into one 3072-byte chunk
    assert [(c.offset, c.size, c.state) for c in a.chunks] == [(0, 3072, FREE), (3072, 1024, USED)]
    assert a.fragmentation == 0.0


def test_failure_despite_enough_free_memory():
    trace = A.Events.from_events(
        [
            (0, "alloc", "a", 1024),
            (1, "alloc", "b", 1024),
            (2, "alloc", "c", 1024),
            (3, "alloc", "d", 1024),
            (4, "free", "a"),
            (5, "free", "c"),
            (6, "alloc", "big", 2048),
            (7, "free", "big"),
        ]
    )
    tl = A.replay(trace, A.BFCAllocator(4096))
    assert len(tl.failures) == 1 and tl.failures_despite_free == 1
    f = tl.failures[0]
    assert (f.time, f.size, f.free_total, f.largest_free) == (6, 2048, 2048, 1024)
    assert tl.fragmentation[5] == pytest.approx(0.5)
    assert tl.allocations == 4 and tl.frees == 2  # the failed request's free is skipped


def test_bfc_growth_takes_doubling_regions():
    a = A.BFCAllocator(64 * MiB, preallocate=False)
    assert a.device_calls == 0 and a.pool_bytes == 0
    a.allocate("a", MiB)  # first region: 2 MiB
    a.allocate("b", 1536 * 1024)  # does not fit the 1 MiB left: next region, 4 MiB
    assert a.regions == [(0, 2 * MiB), (2 * MiB, 4 * MiB)]
    a.allocate("c", 9 * MiB)  # needs a 16 MiB region (8 doubled until it fits)
    assert a.regions[-1] == (6 * MiB, 16 * MiB) and a.device_calls == 3
    check_invariants(a)


def test_regions_never_merge():
    a = A.BFCAllocator(64 * MiB, preallocate=False)
    a.allocate("a", 2 * MiB)
    a.allocate("b", 4 * MiB)
    a.free("a")
    a.free("b")
    assert [c.size for c in a.chunks if c.state == FREE] == [2 * MiB, 4 * MiB]
    check_invariants(a)


def test_exercise_hand_trace():
    assert exercises.check("fragmentation.hand_trace", 1024)
    assert not exercises.check("fragmentation.hand_trace", 3072)
    assert not exercises.check("fragmentation.hand_trace", 7)


# ---------------------------------------------------------------- random traces
def random_trace(seed: int, n: int = 300, max_size: int = 200_000) -> A.Events:
    rng = np.random.default_rng(seed)
    b, live, k = EventsBuilder(), [], 0
    for _ in range(n):
        if live and rng.random() < 0.45:
            b.free(live.pop(int(rng.integers(len(live)))))
        else:
            b.alloc(k, int(rng.integers(0, max_size)), "x")
            live.append(k)
            k += 1
    return b.build("random")


@pytest.mark.parametrize("policy,preallocate", SETUPS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_invariants_under_random_traces(policy, preallocate, seed):
    trace = random_trace(seed)
    a = make_allocator(policy, 8 * MiB, preallocate=preallocate)
    sizes, failed = {}, set()
    for e in trace.events:
        if e.kind == "alloc":
            if a.allocate(e.id, e.size, e.owner) is None:
                failed.add(e.id)
            else:
                sizes[e.id] = e.size
        elif e.id not in failed:
            a.free(e.id)
            del sizes[e.id]
        check_invariants(a)
        assert a.in_use == sum(sizes.values())
        assert a.free_total + a.bytes_in_use == a.capacity
    tl = A.replay(trace, make_allocator(policy, 8 * MiB, preallocate=preallocate))
    assert tl.in_use[-1] == a.in_use


@pytest.mark.parametrize("policy,preallocate", SETUPS)
def test_replay_blocks_never_overlap(policy, preallocate):
    tl = A.replay(random_trace(5, n=120), make_allocator(policy, 4 * MiB, preallocate=preallocate))
    blocks = tl.blocks
    for i, p in enumerate(blocks):
        for q in blocks[i + 1 :]:
            if p.start < q.end and q.start < p.end:  # live at the same time
                assert p.offset + p.size <= q.offset or q.offset + q.size <= p.offset


# ---------------------------------------------------------------- workloads and simulation
def test_batching_means_fewer_allocations():
    assert workload("per-item", 48).n_allocs == 3 * 48
    assert workload("batched", 48, batch_size=8).n_allocs == 3 * 6
    assert (
        workload("batched", 50, batch_size=8).n_allocs == 3 * 7
    )  # remainder: one more padded batch


@pytest.mark.parametrize("n_items", [0, 1, 13])
def test_workloads_handle_small_and_empty(n_items):
    for name in ("per-item", "batched", "bucketed"):
        trace = workload(name, n_items, batch_size=4)
        assert trace.n_allocs == 0 if n_items == 0 else trace.n_allocs > 0


@pytest.mark.parametrize("preallocate", [True, False])
def test_fixed_shapes_need_less_than_varying_shapes(preallocate):
    batched = A.simulate("batched", 48, batch_size=8, preallocate=preallocate)
    per_item = A.simulate("per-item", 48, preallocate=preallocate)
    assert not batched.replay.failures and 1.0 <= batched.overhead < per_item.overhead
    assert A.simulate("training-donated", 48, preallocate=preallocate).overhead == 1.0


def test_varying_shapes_fragment():
    per_item = A.simulate("per-item", 48)
    assert per_item.overhead > 1.1 and per_item.replay.failures_despite_free > 0
    assert A.simulate("training", 48).overhead > A.simulate("training-donated", 48).overhead


def test_pool_versus_platform_device_calls():
    pool = A.simulate("per-item", 16, policy="bfc", preallocate=True).replay
    platform = A.simulate("per-item", 16, policy="platform", preallocate=False).replay
    assert pool.device_calls == 1
    assert platform.device_calls == platform.allocations + platform.frees


def test_plots_and_events_repr():
    sim = A.simulate("bucketed", 24, batch_size=4)
    assert "Events(" in repr(sim.events)
    assert len(sim.plot().axes) == 3


def test_explorer_entry_point():
    from batchlab.widgets import AllocatorExplorer

    ex = AllocatorExplorer(16, batch_sizes=(1, 4))
    sim = ex.update(workload="per-item", policy="platform", preallocate=False)
    assert sim.replay.device_calls == sim.replay.allocations + sim.replay.frees


def test_exercise_fixed_shape():
    assert exercises.check("fragmentation.fixed_shape", "batched")
    assert not exercises.check("fragmentation.fixed_shape", "per-item")
    assert not exercises.check("fragmentation.fixed_shape", "nonsense")


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "events,match",
    [
        ([(0, "alloc", "a", 8), (1, "alloc", "a", 8)], "twice"),
        ([(0, "free", "a")], "not allocated"),
        ([(0, "grab", "a", 8)], "must be 'alloc' or 'free'"),
        ([(1, "alloc", "a", 8), (0, "free", "a")], "back in time"),
        ([(0, "alloc", "a", -1)], "size"),
    ],
)
def test_bad_traces(events, match):
    with pytest.raises(ValueError, match=match):
        A.Events.from_events(events)


def test_bad_allocators_and_calls():
    assert A.Events([Event(0, "alloc", "a", 8)]).events == (Event(0, "alloc", "a", 8),)
    with pytest.raises(TypeError, match=r"`capacity` must be an int"):
        A.BFCAllocator(4096.0)
    with pytest.raises(ValueError, match=r"`capacity` must be at least"):
        A.BFCAllocator(10)
    with pytest.raises(ValueError, match=r"`policy` must be one of"):
        make_allocator("buddy", 4096)
    a = A.BFCAllocator(4096)
    a.allocate("x", 8)
    with pytest.raises(ValueError, match=r"already allocated"):
        a.allocate("x", 8)
    with pytest.raises(KeyError, match=r"not allocated here"):
        a.free("y")
    with pytest.raises(ValueError, match=r"fresh one"):
        A.replay(workload("per-item", 2), a)
    with pytest.raises(TypeError, match=r"`events` must be"):
        A.replay([], A.BFCAllocator(4096))
    with pytest.raises(TypeError, match=r"`allocator` must be"):
        A.replay(workload("per-item", 2), "bfc")


def test_bad_workloads(monkeypatch):
    with pytest.raises(ValueError, match=r"`n_items`"):
        workload("per-item", -1)
    with pytest.raises(ValueError, match=r"`batch_size`"):
        workload("batched", 8, batch_size=0)
    with pytest.raises(ValueError, match=r"`name` must be one of"):
        workload("random", 8)
    with pytest.raises(ValueError, match=r"`headroom` must be at least 1"):
        A.simulate("batched", 8, headroom=0.5)
    none_fits = CapacityScan("t", "bfc", True, 256, (256,), (False,))
    monkeypatch.setattr(workloads, "capacity_scan", lambda *args, **kwargs: none_fits)
    with pytest.raises(ValueError, match=r"does not fit even on 2x"):
        A.simulate("per-item", 2)


def test_exercise_growth_vs_pool_and_loop_scaling():
    bigger = CapacityScan("t", "bfc", False, 100, (100, 120), (False, True))
    pool = CapacityScan("t", "bfc", True, 100, (100, 120), (True, True))
    assert exercises.check("fragmentation.growth_vs_pool", "larger", pool=pool, grown=bigger)
    assert not exercises.check("fragmentation.growth_vs_pool", "same", pool=pool, grown=bigger)
    assert exercises.check("fragmentation.growth_vs_pool", "same", pool=pool, grown=pool)
    none = CapacityScan("t", "bfc", False, 100, (100,), (False,))
    assert not exercises.check("fragmentation.growth_vs_pool", "larger", pool=pool, grown=none)
    assert exercises.check("fragmentation.loop_scaling", 2.0)
    assert not exercises.check("fragmentation.loop_scaling", 1.0)
    assert not exercises.check("fragmentation.loop_scaling", 8.0)
    assert not exercises.check("fragmentation.loop_scaling", "fast")


def test_platform_in_the_explorer_ignores_preallocate():
    from batchlab.widgets import AllocatorExplorer

    ex = AllocatorExplorer(8, batch_sizes=(1, 4))
    sim = ex.update(workload="per-item", policy="platform", preallocate=True)
    assert (
        not sim.replay.preallocate
        and sim.replay.device_calls == sim.replay.allocations + sim.replay.frees
    )
