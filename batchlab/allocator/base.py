"""The address space every simulated allocator manages: a list of chunks."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

USED, FREE, UNRESERVED = "used", "free", "unreserved"


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

    @property
    def end(self) -> int:
        return self.offset + self.size


def check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"`{name}` must be an int number of bytes, got {type(value).__name__} {value!r}."
        )
    if value < minimum:
        raise ValueError(f"`{name}` must be at least {minimum}, got {name}={value}.")
    return value


class Allocator:
    """Base class: a device of ``capacity`` bytes managed as a list of chunks.

    Args:
      capacity: bytes of the simulated device.
      alignment: every request is rounded up to a multiple of this (XLA's
        BFC allocator: ``kMinAllocationSize`` = 256 bytes).
      preallocate: reserve the whole device as one pool at start-up (one
        device call), like JAX on a GPU by default.
    """

    policy = "base"

    def __init__(self, capacity: int, *, alignment: int = 256, preallocate: bool = True) -> None:
        self.alignment = check_int(alignment, "alignment", 1)
        self.capacity = check_int(capacity, "capacity", self.alignment)
        self.capacity -= self.capacity % self.alignment
        self.preallocate = bool(preallocate)
        self.chunks: list[Piece] = [Piece(0, self.capacity, UNRESERVED)]
        self.live: dict[Hashable, Piece] = {}
        self.device_calls = 0
        self.regions: list[tuple[int, int]] = []  # (offset, size) of each pool region
        if self.preallocate:
            self._reserve(0, self.capacity)

    # ------------------------------------------------------------ policy hooks
    def _find(self, rounded: int) -> int | None:
        """Index of the chunk that serves a request of ``rounded`` bytes, or None."""
        raise NotImplementedError

    def _should_split(self, chunk: Piece, rounded: int) -> bool:
        return chunk.size > rounded

    def _grow(self, rounded: int) -> int | None:
        """Asks the device for more memory; index of a fitting free chunk, or None."""
        return None

    freed_state = FREE  # what a freed chunk becomes (a pool keeps it)

    def differences_from_xla(self) -> list[tuple[str, str, str]]:
        """(parameter, value here, XLA's) for every choice that differs from XLA's BFC allocator."""
        return [("policy", self.policy, "bfc")]

    # ------------------------------------------------------------- mechanics
    def round_up(self, size: int) -> int:
        """``size`` rounded up to the alignment (at least one alignment unit)."""
        return max(1, -(-size // self.alignment)) * self.alignment

    def _reserve(self, index: int, size: int) -> int:
        """Turns the first ``size`` bytes of unreserved chunk ``index`` into a new pool region."""
        chunk = self.chunks[index]
        assert chunk.state == UNRESERVED and chunk.size >= size
        if chunk.size > size:
            self.chunks.insert(index + 1, Piece(chunk.offset + size, chunk.size - size, UNRESERVED))
        chunk.size, chunk.state, chunk.region = size, FREE, len(self.regions)
        self.regions.append((chunk.offset, size))
        self.device_calls += 1
        return index

    def allocate(self, id: Hashable, size: int, owner: str = "") -> Piece | None:
        """Serves one request; returns its chunk, or None when it cannot be placed."""
        if id in self.live:
            raise ValueError(f"`id`={id!r} is already allocated; free it first or use a new id.")
        rounded = self.round_up(check_int(size, "size", 0))
        index = self._find(rounded)
        if index is None:
            index = self._grow(rounded)
        if index is None:
            return None
        chunk = self.chunks[index]
        if self._should_split(chunk, rounded):
            rest = Piece(chunk.offset + rounded, chunk.size - rounded, chunk.state, chunk.region)
            self.chunks.insert(index + 1, rest)
            chunk.size = rounded
        if chunk.state == UNRESERVED:  # no pool: every allocation is a device call
            self.device_calls += 1
        chunk.state, chunk.id, chunk.owner, chunk.requested = USED, id, owner, size
        self.live[id] = chunk
        return chunk

    def free(self, id: Hashable) -> None:
        """Releases one allocation and merges it with free neighbours of the same kind."""
        if id not in self.live:
            raise KeyError(
                f"`id`={id!r} is not allocated here; live ids: {sorted(map(str, self.live))[:8]}"
            )
        chunk = self.live.pop(id)
        chunk.state, chunk.id, chunk.owner, chunk.requested = self.freed_state, None, "", 0
        if chunk.state == UNRESERVED:
            chunk.region = -1
            self.device_calls += 1  # handed straight back to the device
        index = self.chunks.index(chunk)
        for neighbour in (index + 1, index):  # right neighbour first, then left
            if 0 < neighbour < len(self.chunks):
                left, right = self.chunks[neighbour - 1], self.chunks[neighbour]
                if left.state == right.state != USED and left.region == right.region:
                    left.size += right.size
                    del self.chunks[neighbour]

    # ------------------------------------------------------------ statistics
    @property
    def in_use(self) -> int:
        """Bytes asked for by live allocations (the sum of their sizes)."""
        return sum(c.requested for c in self.live.values())

    @property
    def held(self) -> int:
        """Bytes of the chunks given to live allocations (rounding and unsplit rests included)."""
        return sum(c.size for c in self.live.values())

    @property
    def reserved(self) -> int:
        """Bytes this allocator holds from the device (its pool; what live arrays hold without one)."""
        return sum(c.size for c in self.chunks if c.state != UNRESERVED)

    @property
    def free_total(self) -> int:
        """Bytes not held by any allocation: free pool chunks and unreserved device memory."""
        return self.capacity - self.held

    @property
    def largest_free(self) -> int:
        """The largest single request that could be served now (a free chunk, or room to grow)."""
        return max((c.size for c in self.chunks if c.state != USED), default=0)

    @property
    def bytes_in_use(self) -> int:
        """XLA's ``bytes_in_use``: bytes of the chunks handed out (= :attr:`held`)."""
        return self.held

    @property
    def pool_bytes(self) -> int:
        """XLA's ``pool_bytes``: bytes reserved from the device (= :attr:`reserved`)."""
        return self.reserved

    @property
    def largest_free_block(self) -> int:
        """XLA's ``largest_free_block_bytes``: the largest free chunk *inside the pool*."""
        return max((c.size for c in self.chunks if c.state == FREE), default=0)

    @property
    def fragmentation(self) -> float:
        """XLA's ``GetFragmentation``: ``1 - largest free chunk / (pool_bytes - bytes_in_use)``."""
        free = self.pool_bytes - self.bytes_in_use
        return 0.0 if free <= 0 else 1.0 - self.largest_free_block / free

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(capacity={self.capacity}, live={len(self.live)}, "
            f"chunks={len(self.chunks)}, device_calls={self.device_calls})"
        )
