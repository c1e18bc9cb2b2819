"""A textbook first-fit allocator: a contrast to BFC, not an allocator JAX uses.

Example:
  >>> a = FirstFitAllocator(4096, alignment=256)
  >>> [a.allocate(i, 1000).offset for i in "abc"]
  [0, 1024, 2048]
  >>> a.free("a"); a.allocate("d", 200).offset, a.device_calls
  (0, 5)
"""

from __future__ import annotations

from batchlab.allocator.base import FREE, UNRESERVED, Allocator


class FirstFitAllocator(Allocator):
    """Lowest-address fit (a contrast policy); without a pool every allocate/free is a device call.

    Args:
      capacity: bytes of the simulated device.
      alignment: request rounding.
      preallocate: one pool reserved at start-up (True) or none (False).
    """

    policy = "first-fit"

    def __init__(self, capacity: int, *, alignment: int = 256, preallocate: bool = False) -> None:
        super().__init__(capacity, alignment=alignment, preallocate=preallocate)
        self.freed_state = FREE if preallocate else UNRESERVED

    def _find(self, rounded: int) -> int | None:
        wanted = FREE if self.preallocate else UNRESERVED
        for index, chunk in enumerate(self.chunks):
            if chunk.state == wanted and chunk.size >= rounded:
                return index
        return None
