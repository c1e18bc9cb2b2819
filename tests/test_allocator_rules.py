"""One test per rule of XLA's BFC allocator (xla/tsl/framework/bfc_allocator.cc), on hand-worked traces."""

from __future__ import annotations

import pytest

from batchlab import allocator as A
from batchlab.allocator.bfc import (
    ALIGNMENT,
    FREE,
    K_INITIAL_REGION,
    K_MAX_INTERNAL_FRAGMENTATION,
    UNRESERVED,
    USED,
    PlatformAllocator,
    bin_num_for_size,
)

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def layout(a):
    return [(c.offset, c.size, c.state) for c in a.chunks]


def test_constants_are_xlas():
    assert ALIGNMENT == 256 and 128 * MiB == K_MAX_INTERNAL_FRAGMENTATION
    assert 2 * MiB == K_INITIAL_REGION
    assert A.BFCAllocator(16 * GiB).differences_from_xla() == []  # preallocated: nothing differs
    grown = A.BFCAllocator(16 * GiB, preallocate=False).differences_from_xla()
    assert [(name, here) for name, here, _ in grown] == [
        ("grown regions merge", "no (separate cudaMalloc regions)")
    ]


def test_rounding_to_256_bytes():
    a = A.BFCAllocator(GiB)
    assert [a.allocate(i, n).size for i, n in enumerate([1, 256, 257, 1000])] == [
        256,
        256,
        512,
        1024,
    ]


@pytest.mark.parametrize(
    "size,bin_",
    [
        (1, 0),
        (256, 0),
        (511, 0),
        (512, 1),
        (1023, 1),
        (1024, 2),
        (256 * MiB - 1, 19),
        (256 * MiB, 20),
        (64 * GiB, 20),
    ],
)
def test_bins_are_log2_of_size_over_256_capped_at_20(size, bin_):
    assert bin_num_for_size(size) == bin_


def test_best_fit_smallest_chunk_then_lowest_address():
    a = A.BFCAllocator(GiB)
    sizes = [
        ("h1", 8 * MiB),
        ("p1", MiB),
        ("h2", 4 * MiB),
        ("p2", MiB),
        ("h3", 4 * MiB),
        ("p3", MiB),
    ]
    for name, size in sizes:
        a.allocate(name, size)
    for name in ("h1", "h2", "h3"):
        a.free(name)
    # free: 8 MiB at 0, 4 MiB at 9 MiB, 4 MiB at 14 MiB, the tail; a 3 MiB request
    # takes a 4 MiB hole (smallest that fits), the lower-addressed one.
    assert a.allocate("r", 3 * MiB).offset == 9 * MiB


def test_best_fit_skips_smaller_chunks_of_the_same_bin():
    a = A.BFCAllocator(GiB)
    for name, size in [("s", 5 * KiB), ("p", 256), ("t", 7 * KiB), ("q", 256)]:
        a.allocate(name, size)
    a.free("s")
    a.free("t")  # both in bin 4 ([4 KiB, 8 KiB)): 5 KiB is too small for 6 KiB
    assert a.allocate("r", 6 * KiB).offset == 5 * KiB + 256


def test_768_byte_request_in_a_free_1024_chunk_is_not_split():
    a = A.BFCAllocator(GiB)
    a.allocate("a", 1024)
    a.allocate("b", 256)
    a.free("a")
    c = a.allocate("c", 768)  # 1024 < 2 * 768 and 256 < 128 MiB: the whole chunk
    assert (c.offset, c.size, c.requested) == (0, 1024, 768)
    assert a.bytes_in_use == 1024 + 256  # XLA counts the chunk, not the request


def test_256_mib_chunk_is_split_for_a_64_mib_request():
    a = A.BFCAllocator(GiB)
    a.allocate("a", 256 * MiB)
    a.allocate("b", 256)
    a.free("a")
    c = a.allocate("c", 64 * MiB)  # 256 >= 2 * 64: split
    assert c.size == 64 * MiB
    assert layout(a)[:3] == [
        (0, 64 * MiB, USED),
        (64 * MiB, 192 * MiB, FREE),
        (256 * MiB, 256, USED),
    ]


def test_split_when_the_rest_is_at_least_128_mib_even_below_twice():
    a = A.BFCAllocator(2 * GiB)
    a.allocate("a", 400 * MiB)
    a.allocate("b", 256)
    a.free("a")
    c = a.allocate("c", 272 * MiB)  # 400 < 2 * 272, but 400 - 272 = 128 MiB: split
    assert c.size == 272 * MiB
    a2 = A.BFCAllocator(2 * GiB)
    a2.allocate("a", 400 * MiB)
    a2.allocate("b", 256)
    a2.free("a")
    assert a2.allocate("c", 272 * MiB + 256).size == 400 * MiB  # rest 128 MiB - 256: not split


def test_free_coalesces_with_both_neighbours():
    a = A.BFCAllocator(GiB)
    for name in "abcd":
        a.allocate(name, MiB)
    a.free("a")
    a.free("c")
    a.free("b")  # merges with a (previous) and c (next) at once
    assert layout(a)[:2] == [(0, 3 * MiB, FREE), (3 * MiB, MiB, USED)]


def test_fragmentation_is_xlas_formula():
    a = A.BFCAllocator(8 * MiB)
    for name in "abcdefgh":
        a.allocate(name, MiB)
    a.free("b")
    a.free("d")
    # pool 8 MiB, in use 6 MiB, largest free chunk 1 MiB: (2 - 1) / 2
    assert a.fragmentation == pytest.approx(0.5)
    assert a.largest_free_block == MiB


def test_growth_regions_start_at_2_mib_and_double():
    a = A.BFCAllocator(16 * GiB, preallocate=False)
    assert a.pool_bytes == 0 and a.device_calls == 0
    a.allocate("a", MiB)  # first region: 2 MiB; next will be 4 MiB
    a.allocate("b", 1536 * KiB)  # does not fit the 1 MiB left: a 4 MiB region, next 8
    assert a.regions == [(0, 2 * MiB), (2 * MiB, 4 * MiB)]
    a.allocate("c", 9 * MiB)  # 8 MiB too small: doubled to 16 MiB (and not doubled again after)
    assert a.regions[-1] == (6 * MiB, 16 * MiB)
    a.allocate("d", 15 * MiB)  # 7 MiB left in the region: a new one of 16 MiB
    assert a.regions[-1] == (22 * MiB, 16 * MiB) and a.device_calls == 4


def test_growth_never_exceeds_the_limit():
    a = A.BFCAllocator(20 * MiB, preallocate=False)
    a.allocate("a", 2 * MiB)
    a.allocate("b", 4 * MiB)
    a.allocate("c", 8 * MiB)
    d = a.allocate("d", 5 * MiB)  # next region would be 16 MiB: capped at the 6 MiB left
    assert d is not None and a.regions[-1] == (14 * MiB, 6 * MiB)
    assert a.allocate("e", 256) is None  # nothing left to grow into: final failure


def test_a_region_is_never_returned_and_never_merges():
    a = A.BFCAllocator(GiB, preallocate=False)
    a.allocate("a", 2 * MiB)
    a.allocate("b", 4 * MiB)
    a.free("a")
    a.free("b")
    assert a.pool_bytes == 6 * MiB and a.bytes_in_use == 0  # kept (no garbage collection)
    assert [c.size for c in a.chunks if c.state == FREE] == [2 * MiB, 4 * MiB]
    assert a.allocate("c", 5 * MiB).offset == 6 * MiB  # 2 + 4 free, never one 6 MiB chunk


def test_preallocated_pool_is_one_region_and_one_device_call():
    a = A.BFCAllocator(16 * GiB)
    assert a.regions == [(0, 16 * GiB)] and a.device_calls == 1
    assert a.chunks[0].state == FREE and not [c for c in a.chunks if c.state == UNRESERVED]


def test_failed_allocation_is_final_in_a_single_stream_replay():
    trace = A.Events.from_events(
        [(0, "alloc", "a", 3 * MiB), (1, "alloc", "b", 2 * MiB), (2, "free", "b"), (3, "free", "a")]
    )
    tl = A.replay(trace, A.BFCAllocator(4 * MiB))
    assert [f.id for f in tl.failures] == ["b"] and tl.allocations == 1 and tl.frees == 1


def test_platform_counts_driver_calls_and_leaves_no_holes():
    a = PlatformAllocator(4 * MiB)
    for name in "abcd":
        a.allocate(name, MiB)
    a.free("b")
    a.free("d")
    assert a.allocate("big", 2 * MiB) is not None  # no contiguity needed
    assert a.device_calls == 7 and a.allocate("x", 1) is None
    assert not PlatformAllocator(MiB, preallocate=True).preallocate  # it has no pool
    with pytest.raises(ValueError, match=r"already allocated"):
        a.allocate("a", 8)
    with pytest.raises(KeyError, match=r"not allocated here"):
        a.free("nope")


NON_MONOTONE = [
    (0, "alloc", "a", 4 * MiB),
    (1, "alloc", "b", 3 * MiB),
    (2, "alloc", "c", 2 * MiB),
    (3, "free", "a"),
    (4, "alloc", "d", MiB),
    (5, "free", "c"),
    (6, "alloc", "e", 3 * MiB),
    (7, "alloc", "f", 3 * MiB),
]


def test_fitting_is_not_monotone_so_it_is_scanned():
    # 10 MiB: c gets the whole 3 MiB tail (3 < 2 * 2: not split), d splits a's hole,
    #   e fills the 3 MiB rest of it exactly, and f reuses c's 3 MiB: fits.
    # 11-12 MiB: the tail (4-5 MiB) is split for c; d takes the 2-3 MiB tail rest,
    #   e takes a's whole 4 MiB hole (not split), f finds no 3 MiB: fails.
    # 13 MiB: d goes to the lower of two 4 MiB chunks; e and f fit: fits again.
    trace = A.Events.from_events(NON_MONOTONE)
    scan = A.capacity_scan(trace, capacities=[10 * MiB, 11 * MiB, 12 * MiB, 13 * MiB])
    assert scan.fits == (True, False, False, True)
    assert scan.smallest == 10 * MiB and not scan.monotone
    assert scan.failing_above_smallest == (11 * MiB, 12 * MiB)
    assert scan.intervals() == [
        (10 * MiB, 10 * MiB, True),
        (11 * MiB, 12 * MiB, False),
        (13 * MiB, 13 * MiB, True),
    ]
    assert "monotone: False" in repr(scan) and "<table" in scan._repr_html_()
    with pytest.raises(ValueError, match=r"`headrooms` must be"):
        A.capacity_scan(trace, headrooms=[0.5])
    with pytest.raises(TypeError, match=r"`events` must be"):
        A.capacity_scan([], headrooms=[1.0])
    with pytest.raises(ValueError, match=r"`capacities` is empty"):
        A.capacity_scan(trace, capacities=[])
