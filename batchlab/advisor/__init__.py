"""The user's own function (12): the fastest way to batch it that fits the budget, measured here.

``advise(fn, example, budget)`` plans every way to batch ``fn`` with XLA
(``vmap``, ``lax.map`` at chunk sizes 1, 2, 4, ..., host chunks; for ragged
data pad, buckets, packing per batch), times those that fit with the one
interleaved sampler, picks the fastest only where the per-round ratios say so,
and fits the pick's batch size to the budget with the calibrated margin
(:func:`batchlab.max_batch_size`). The :class:`Advice` says why in at most ten lines.
"""

from batchlab.advisor.advising import advise
from batchlab.advisor.choice import decide
from batchlab.advisor.report import Advice, plot_candidates

__all__ = ["Advice", "advise", "decide", "plot_candidates"]
