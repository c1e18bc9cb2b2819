"""A naive first-fit allocator: the contrast to BFC.

With ``preallocate=False`` (the default) it behaves like JAX's *platform*
allocator (``XLA_PYTHON_CLIENT_ALLOCATOR=platform``): no pool, every
allocation and every free is a call to the device, and freed memory goes
straight back. Where the device then places the next buffer is the
driver's business and not public; this simulation places it at the
lowest address where it fits (first fit), a simple stand-in that shows the
two costs the platform allocator is known for: many device calls, and
holes left between long-lived buffers.

With ``preallocate=True`` it is a first-fit pool: one device call at
start-up, then first fit inside the pool, always splitting, no size bins.

Example:
  >>> a = FirstFitAllocator(4096, alignment=256)
  >>> [a.allocate(i, 1000).offset for i in "abc"]
  [0, 1024, 2048]
  >>> a.free("a"); a.allocate("d", 200).offset, a.device_calls
  (0, 5)
"""

from __future__ import annotations

from .base import FREE, UNRESERVED, Allocator


class FirstFitAllocator(Allocator):
    """Lowest-address fit; without a pool every allocate/free is a device call.

    Args:
      capacity: bytes of the simulated device.
      alignment: request rounding.
      preallocate: one pool reserved at start-up (True) or platform-like (False).
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
