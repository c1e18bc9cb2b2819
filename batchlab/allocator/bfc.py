"""A best-fit-with-coalescing (BFC) allocator, the policy of XLA's GPU allocator.

JAX on a GPU hands every device buffer to XLA's ``BFCAllocator``
(``xla/tsl/framework/bfc_allocator.cc``). This is a readable re-telling of
its policy, small enough to read next to notebook 08:

1. **Round** each request up to 256 bytes (``kMinAllocationSize``).
2. **Bins**: free chunks are grouped by size, bin ``b`` holding chunks of
   ``[256 * 2**b, 256 * 2**(b+1))`` bytes. A request looks in its own bin
   first, then in bigger bins; inside a bin it takes the smallest chunk that
   fits (lowest address on a tie). The first hit is therefore the best fit.
3. **Split** the chunk if it is at least twice the request (or the rest is
   at least ``max_internal_fragmentation``); otherwise hand out the whole
   chunk, accepting the unused rest as internal fragmentation. XLA's bound
   is 128 MiB, about 0.2% of a GPU's pool; the simulation's devices are
   small, so its default bound is the same share: ``capacity // 512``.
4. **Coalesce** on free: a freed chunk merges with free neighbours of the
   same region, so holes grow back into big blocks.
5. **Pool**: with ``preallocate=True`` (JAX's GPU default,
   ``XLA_PYTHON_CLIENT_PREALLOCATE=true``) the whole device is reserved at
   start-up in one device call. With ``preallocate=False`` the pool grows
   on demand by *regions*: 2 MiB first, each new region twice the last (or
   the next power-of-two multiple that fits the request). Regions are never
   given back and chunks never merge across regions.

What is left out: the real allocator's thread safety, its "retry after
freeing" path, memory statistics per bin and garbage collection of free
regions. The simulation only places bytes; it runs nothing.

Example:
  >>> a = BFCAllocator(4096, alignment=256)
  >>> a.allocate("x", 1000).offset, a.allocate("y", 256).offset
  (0, 1024)
  >>> a.free("x"); a.allocate("z", 200).offset  # best fit: the 1024-byte hole
  0
"""

from __future__ import annotations

from .base import FREE, UNRESERVED, Allocator, Chunk, _check_int

MiB = 1 << 20


class BFCAllocator(Allocator):
    """Best fit from size bins, splitting, coalescing, and a pool (preallocated or grown).

    Args:
      capacity: bytes of the simulated device.
      alignment: request rounding (XLA: 256 bytes).
      preallocate: reserve the whole device at start-up (True) or grow by regions (False).
      initial_region: size of the first region when growing (XLA: 2 MiB).
      max_internal_fragmentation: always split when the rest is at least this big
        (XLA: 128 MiB; default here ``capacity // 512``, the same share of a small device).
    """

    policy = "bfc"

    def __init__(
        self,
        capacity: int,
        *,
        alignment: int = 256,
        preallocate: bool = True,
        initial_region: int = 2 * MiB,
        max_internal_fragmentation: int | None = None,
    ) -> None:
        self.next_region = _check_int(initial_region, "initial_region", 1)
        super().__init__(capacity, alignment=alignment, preallocate=preallocate)
        if max_internal_fragmentation is None:
            max_internal_fragmentation = max(self.capacity // 512, self.alignment)
        self.max_internal_fragmentation = _check_int(
            max_internal_fragmentation, "max_internal_fragmentation", 0
        )

    def bin_of(self, size: int) -> int:
        """Bin index: ``floor(log2(size / alignment))``."""
        return max(size // self.alignment, 1).bit_length() - 1

    def _find(self, rounded: int) -> int | None:
        bins: dict[int, list[tuple[int, int, int]]] = {}
        for index, chunk in enumerate(self.chunks):
            if chunk.state == FREE and chunk.size >= rounded:
                bins.setdefault(self.bin_of(chunk.size), []).append(
                    (chunk.size, chunk.offset, index)
                )
        for b in sorted(b for b in bins if b >= self.bin_of(rounded)):
            return min(bins[b])[2]  # smallest fitting chunk of the first non-empty bin
        return None

    def _should_split(self, chunk: Chunk, rounded: int) -> bool:
        return chunk.size >= 2 * rounded or chunk.size - rounded >= self.max_internal_fragmentation

    def _grow(self, rounded: int) -> int | None:
        if self.preallocate or self.chunks[-1].state != UNRESERVED:
            return None
        available = self.chunks[-1].size  # regions are taken from the unreserved tail
        if rounded > available:
            return None
        increased = False
        while rounded > self.next_region:  # as XLA: double until the request fits
            self.next_region *= 2
            increased = True
        size = min(self.next_region, available)
        if not increased:
            self.next_region *= 2
        return self._reserve(len(self.chunks) - 1, size)
