"""XLA's best-fit-with-coalescing (BFC) allocator, rule by rule (xla/tsl/framework/bfc_allocator.cc).

Example:
  >>> a = BFCAllocator(4096)
  >>> a.allocate("x", 1000).offset, a.allocate("y", 256).offset
  (0, 1024)
  >>> a.free("x")
  >>> a.allocate("z", 200).offset  # best fit: the 1024-byte hole
  0
"""

from __future__ import annotations

from batchlab.allocator.base import FREE, UNRESERVED, Allocator, Piece, round_up

MiB = 1 << 20
K_NUM_BINS = 21  # kNumBins
K_MAX_INTERNAL_FRAGMENTATION = 128 * MiB  # max_internal_fragmentation_bytes_ default
K_INITIAL_REGION = 2 * MiB  # first region with allow_growth


def bin_num_for_size(size: int) -> int:
    """XLA's ``BinNumForSize``: ``min(20, floor(log2(max(size, 256) >> 8)))``."""
    return min(K_NUM_BINS - 1, (max(size, 256) >> 8).bit_length() - 1)


class BFCAllocator(Allocator):
    """XLA's BFC allocator on a simulated device of ``capacity`` bytes (XLA's ``memory_limit_``;
    on a GPU the device's memory times ``XLA_PYTHON_CLIENT_MEM_FRACTION``, 0.75 by default).

    ``preallocate``: one region of ``capacity`` at start-up (XLA ``allow_growth=false``) or
    regions grown on demand (``allow_growth=true``), which never merge.
    """

    policy = "bfc"

    def __init__(self, capacity: int, *, preallocate: bool = True) -> None:
        super().__init__(capacity, preallocate=preallocate)
        # curr_region_allocation_bytes_ = RoundedBytes(min(total_memory, 2 MiB))
        self.next_region = round_up(min(self.capacity, K_INITIAL_REGION))

    def differences_from_xla(self) -> list[tuple[str, str, str]]:
        if self.preallocate:  # only grown pools have several regions
            return []
        xla = "only if the sub-allocator SupportsCoalescing() (a reserved VA range)"
        return [("grown regions merge", "no (separate cudaMalloc regions)", xla)]

    def _find(self, rounded: int) -> int | None:
        # XLA searches the bins from BinNumForSize(rounded) up, each in (size, address) order,
        # and takes the first free chunk that fits; without one, the pool grows (if it may).
        fits = [
            (bin_num_for_size(c.size), c.size, c.offset, i)
            for i, c in enumerate(self.chunks)
            if c.state == FREE and c.size >= rounded
        ]
        return min(fits)[-1] if fits else self._grow(rounded)

    def _should_split(self, chunk: Piece, rounded: int) -> bool:
        return chunk.size >= 2 * rounded or chunk.size - rounded >= K_MAX_INTERNAL_FRAGMENTATION

    def _grow(self, rounded: int) -> int | None:
        tail = self.chunks[-1]  # regions come from the tail: memory_limit_ - pool_bytes
        if self.preallocate or tail.state != UNRESERVED or rounded > tail.size:
            return None
        doubled = rounded > self.next_region
        while rounded > self.next_region:  # double until the request fits
            self.next_region *= 2
        size = min(self.next_region, tail.size)
        if not doubled:
            self.next_region *= 2
        return self._reserve(len(self.chunks) - 1, size)
