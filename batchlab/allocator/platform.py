"""``XLA_PYTHON_CLIENT_ALLOCATOR=platform``: no pool, one driver call per allocation and per free.

Example:
  >>> a = PlatformAllocator(4096)
  >>> [a.allocate(i, 1000).size for i in "abc"], a.device_calls
  ([1024, 1024, 1024], 3)
  >>> a.free("b"); a.allocate("d", 2000) is not None, a.device_calls
  (True, 5)
"""

from __future__ import annotations

from collections.abc import Hashable

from batchlab.allocator.base import USED, Allocator, Piece, check_int


class PlatformAllocator(Allocator):
    """No pool: each request is a driver call that succeeds while the held bytes fit."""

    policy = "platform"

    def __init__(self, capacity: int, *, alignment: int = 256, preallocate: bool = False) -> None:
        if preallocate:
            raise ValueError(
                "`preallocate` must be False for the platform allocator: it has no pool "
                "(XLA_PYTHON_CLIENT_ALLOCATOR=platform ignores XLA_PYTHON_CLIENT_PREALLOCATE)."
            )
        super().__init__(capacity, alignment=alignment, preallocate=False)

    def differences_from_xla(self) -> list[tuple[str, str, str]]:
        return [
            ("policy", "platform (cudaMalloc/cudaFree per buffer)", "bfc"),
            ("placement", "not modelled: fits while held bytes fit", "the driver's (not public)"),
        ]

    def allocate(self, id: Hashable, size: int, owner: str = "") -> Piece | None:
        if id in self.live:
            raise ValueError(f"`id`={id!r} is already allocated; free it first or use a new id.")
        rounded = self.round_up(check_int(size, "size", 0))
        if self.held + rounded > self.capacity:
            return None
        chunk = Piece(-1, rounded, USED, id=id, owner=owner, requested=size)
        self.live[id] = chunk
        self.device_calls += 1
        return chunk

    def free(self, id: Hashable) -> None:
        if id not in self.live:
            raise KeyError(
                f"`id`={id!r} is not allocated here; live ids: {sorted(map(str, self.live))[:8]}"
            )
        del self.live[id]
        self.device_calls += 1

    @property
    def reserved(self) -> int:
        return self.held

    @property
    def largest_free(self) -> int:
        return self.capacity - self.held

    @property
    def largest_free_block(self) -> int:
        return 0

    @property
    def fragmentation(self) -> float:
        return 0.0
