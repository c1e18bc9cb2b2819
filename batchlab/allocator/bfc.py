"""XLA's best-fit-with-coalescing (BFC) allocator, rule by rule (xla/tsl/framework/
bfc_allocator.cc), on a simulated address space (a list of pieces), and a platform allocator.

Example:
  >>> a = BFCAllocator(4096)
  >>> a.allocate("x", 1000).offset, a.allocate("y", 256).offset
  (0, 1024)
  >>> a.free("x")
  >>> a.allocate("z", 200).offset  # best fit: the 1024-byte hole
  0
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from batchlab._util.checks import check_int

USED, FREE, UNRESERVED = "used", "free", "unreserved"
MiB = 1 << 20
ALIGNMENT = 256  # XLA rounds every request up to 256 bytes (kMinAllocationSize)
K_NUM_BINS = 21  # kNumBins
K_MAX_INTERNAL_FRAGMENTATION = 128 * MiB  # max_internal_fragmentation_bytes_ default
K_INITIAL_REGION = 2 * MiB  # first region with allow_growth


@dataclass
class Piece:
    """One contiguous piece of the simulated address space."""

    offset: int
    size: int
    state: str
    region: int = -1  # which pool region (one device call) it belongs to; -1: none
    id: Hashable = None  # the allocation's id while used
    owner: str = ""
    requested: int = 0  # bytes asked for (<= size: the rest is internal fragmentation)


def round_up(size: int) -> int:
    """``size`` rounded up to a multiple of :data:`ALIGNMENT` (at least one)."""
    return max(1, -(-size // ALIGNMENT)) * ALIGNMENT


def bin_num_for_size(size: int) -> int:
    """XLA's ``BinNumForSize``: ``min(20, floor(log2(max(size, 256) >> 8)))``."""
    return min(K_NUM_BINS - 1, (max(size, 256) >> 8).bit_length() - 1)


class BFCAllocator:
    """XLA's BFC allocator on a simulated device of ``capacity`` bytes (XLA's ``memory_limit_``;
    on a GPU the device's memory times ``XLA_PYTHON_CLIENT_MEM_FRACTION``, 0.75 by default).

    ``preallocate``: one region of ``capacity`` at start-up (XLA ``allow_growth=false``, as JAX
    does on a GPU) or regions grown on demand (``allow_growth=true``), which never merge.
    """

    policy = "bfc"

    def __init__(self, capacity: int, *, preallocate: bool = True) -> None:
        self.capacity = check_int(capacity, "capacity", ALIGNMENT) // ALIGNMENT * ALIGNMENT
        self.preallocate = bool(preallocate)
        self.chunks: list[Piece] = [Piece(0, self.capacity, UNRESERVED)]
        self.live: dict[Hashable, Piece] = {}
        self.device_calls = 0
        self.regions: list[tuple[int, int]] = []  # (offset, size) of each pool region
        # curr_region_allocation_bytes_ = RoundedBytes(min(total_memory, 2 MiB))
        self.next_region = round_up(min(self.capacity, K_INITIAL_REGION))
        if self.preallocate:
            self._reserve(0, self.capacity)

    def differences_from_xla(self) -> list[tuple[str, str, str]]:
        """(parameter, value here, XLA's) for every choice that differs from XLA's BFC allocator."""
        if self.preallocate:  # only grown pools have several regions
            return []
        xla = "only if the sub-allocator SupportsCoalescing() (a reserved VA range)"
        return [("grown regions merge", "no (separate cudaMalloc regions)", xla)]

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

    def _reserve(self, index: int, size: int) -> int:  # the first ``size`` bytes: a pool region
        chunk = self.chunks[index]
        if chunk.size > size:
            self.chunks.insert(index + 1, Piece(chunk.offset + size, chunk.size - size, UNRESERVED))
        chunk.size, chunk.state, chunk.region = size, FREE, len(self.regions)
        self.regions.append((chunk.offset, size))
        self.device_calls += 1
        return index

    def allocate(self, id: Hashable, size: int, owner: str = "") -> Piece | None:
        """Serves one request; returns its piece, or None when it cannot be placed."""
        if id in self.live:
            raise ValueError(f"`id`={id!r} is already allocated; free it first or use a new id.")
        chunk = self._place(round_up(check_int(size, "size", 0)))
        if chunk is not None:
            chunk.state, chunk.id, chunk.owner, chunk.requested = USED, id, owner, size
            self.live[id] = chunk
        return chunk

    def _place(self, rounded: int) -> Piece | None:
        # XLA searches the bins from BinNumForSize(rounded) up, each in (size, address) order,
        # and takes the first free chunk that fits; without one, the pool grows (if it may).
        fits = [
            (bin_num_for_size(c.size), c.size, c.offset, i)
            for i, c in enumerate(self.chunks)
            if c.state == FREE and c.size >= rounded
        ]
        if (index := min(fits)[-1] if fits else self._grow(rounded)) is None:
            return None
        chunk = self.chunks[index]
        # ShouldSplitChunk: the rest is worth a chunk of its own
        if chunk.size >= 2 * rounded or chunk.size - rounded >= K_MAX_INTERNAL_FRAGMENTATION:
            rest = Piece(chunk.offset + rounded, chunk.size - rounded, FREE, chunk.region)
            self.chunks.insert(index + 1, rest)
            chunk.size = rounded
        return chunk

    def free(self, id: Hashable) -> None:
        """Releases one allocation and merges it with free neighbours of the same kind."""
        if id not in self.live:
            raise KeyError(
                f"`id`={id!r} is not allocated here; live ids: {sorted(map(str, self.live))[:8]}"
            )
        self._release(self.live.pop(id))

    def _release(self, chunk: Piece) -> None:
        chunk.state, chunk.id, chunk.owner, chunk.requested = FREE, None, "", 0
        index = self.chunks.index(chunk)
        for right in (index + 1, index):  # merge the right neighbour first, then the left one
            if 0 < right < len(self.chunks):
                a, b = self.chunks[right - 1], self.chunks[right]
                if a.state == b.state == FREE and a.region == b.region:
                    a.size += b.size
                    del self.chunks[right]

    def _sizes(self, *states: str) -> list[int]:
        return [c.size for c in self.chunks if c.state in states]

    @property
    def in_use(self) -> int:
        """Bytes asked for by live allocations."""
        return sum(c.requested for c in self.live.values())

    @property
    def bytes_in_use(self) -> int:
        """XLA's ``bytes_in_use``: bytes of the pieces handed out (rounding and unsplit rests)."""
        return sum(c.size for c in self.live.values())

    @property
    def pool_bytes(self) -> int:
        """XLA's ``pool_bytes``: bytes reserved from the device (handed out and free pieces)."""
        return self.bytes_in_use + sum(self._sizes(FREE))

    @property
    def free_total(self) -> int:
        """Bytes not handed out: free pool pieces and unreserved device memory."""
        return self.capacity - self.bytes_in_use

    @property
    def largest_free(self) -> int:
        """The largest single request that could be served now (a free piece, or room to grow)."""
        return max(self._sizes(FREE, UNRESERVED), default=0)

    @property
    def largest_free_block(self) -> int:
        """XLA's ``largest_free_block_bytes``: the largest free piece *inside the pool*."""
        return max(self._sizes(FREE), default=0)

    @property
    def fragmentation(self) -> float:
        """XLA's ``GetFragmentation``: ``1 - largest free piece / (pool_bytes - bytes_in_use)``."""
        free = self.pool_bytes - self.bytes_in_use
        return 0.0 if free <= 0 else 1.0 - self.largest_free_block / free


class PlatformAllocator(BFCAllocator):
    """``XLA_PYTHON_CLIENT_ALLOCATOR=platform``: no pool (``preallocate`` is ignored), a driver
    call per allocation and free; a request succeeds while the held bytes fit."""

    policy = "platform"

    def __init__(self, capacity: int, *, preallocate: bool = False) -> None:
        super().__init__(capacity, preallocate=False)

    def differences_from_xla(self) -> list[tuple[str, str, str]]:
        return [
            ("policy", "platform (cudaMalloc/cudaFree per buffer)", "bfc"),
            ("placement", "not modelled: fits while held bytes fit", "the driver's (not public)"),
        ]

    def _place(self, rounded: int) -> Piece | None:
        if self.bytes_in_use + rounded > self.capacity:
            return None
        self.device_calls += 1
        return Piece(-1, rounded, USED)

    def _release(self, chunk: Piece) -> None:
        self.device_calls += 1

    @property
    def largest_free(self) -> int:
        """The largest request that fits now: all bytes not handed out (no fragmentation)."""
        return self.capacity - self.bytes_in_use
