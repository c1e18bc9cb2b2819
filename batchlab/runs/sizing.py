"""The batch size of :func:`batchlab.run_batches` after a memory error, and where it settles.

Before any batch has run, a batch that runs out of memory is retried at half
its size. After one has run, the size is bisected between the last size that
ran (``ok``) and the smallest that failed (``fail``): the run settles on the
largest size that fits in that interval, about ``log2(batch_size)`` failed
probes in all, each one compilation. Two options stop the search sooner:

* ``multiple_of``: every size tried after a memory error is a multiple of it
  (while it is at least ``multiple_of``), e.g. 8 for vector units, or the
  ``chunk_size`` of a ``lax.map``: far fewer sizes, far fewer compilations;
* ``tolerance``: stop once ``fail - ok <= tolerance * fail`` (``0.1``: within
  10% of the smallest failing size).

The defaults (1, 0.0) search to the exact largest size.
"""

from __future__ import annotations

import math

from batchlab._util.checks import check_positive_int


class Sizer:
    """Next batch sizes after a memory error or a success (``ok``/``fail`` kept in the run state)."""

    def __init__(self, minimum: int, multiple_of: int = 1, tolerance: float = 0.0) -> None:
        self.minimum, self.multiple_of, self.tolerance = minimum, multiple_of, tolerance

    def round(self, n: int) -> int:
        """``n`` rounded down to a multiple of ``multiple_of`` (unchanged below it)."""
        m = self.multiple_of
        return n - n % m if m > 1 and n >= m else n

    def settled(self, ok: int, fail: int) -> bool:
        return fail - ok <= max(1, math.floor(self.tolerance * fail))

    def after_oom(self, state, size: int) -> int:
        """The next size after ``size`` ran out of memory (halve, or bisect above the last success)."""
        if size <= state.ok_size:  # memory got tighter than when ok_size ran: forget it
            state.ok_size = 0
        state.fail_size = size if state.fail_size is None else min(state.fail_size, size)
        ok = state.ok_size
        if ok and self.settled(ok, size):
            return ok
        nxt = self.round((ok + size) // 2 if ok else size // 2)
        return min(max(nxt, self.minimum, ok), size - 1) if size > 1 else 1

    def after_success(self, state, size: int) -> int:
        """The next size after a batch of ``size`` ran: probe halfway to the smallest failure."""
        state.ok_size = size
        if state.fail_size is not None and state.fail_size <= size:
            state.fail_size = None
        fail = state.fail_size
        if fail is None or self.settled(size, fail):
            return size
        nxt = self.round((size + fail) // 2)
        return nxt if size < nxt < fail else size


def check_sizing(multiple_of: int, tolerance: float) -> tuple[int, float]:
    """Checks ``multiple_of`` (a positive int) and ``tolerance`` (a fraction in [0, 1))."""
    multiple_of = check_positive_int(multiple_of, "multiple_of")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
        raise TypeError(
            f"`tolerance` must be a number in [0, 1) (a fraction of the smallest failing batch "
            f"size), got {type(tolerance).__name__} {tolerance!r}."
        )
    if not 0 <= tolerance < 1 or math.isnan(tolerance):
        raise ValueError(
            f"`tolerance` must be in [0, 1): the search stops once the last size that ran is "
            f"within this fraction of the smallest that failed, got tolerance={tolerance}; e.g. "
            f"tolerance=0.1."
        )
    return multiple_of, float(tolerance)
