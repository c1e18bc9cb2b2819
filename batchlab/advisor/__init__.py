"""The user's own function (12): which strategy, chunk size and batch size, measured here, explained.

``advise(fn, example, budget)`` builds every applicable way to batch ``fn``
(``vmap``, ``lax.map`` chunks, host chunks; for ragged data pad, buckets, pack),
times each on this machine, plans it with XLA and observes its real peak in a
fresh process, then returns an :class:`Advice`: the recommendation (or the
candidates within noise of each other), the batch size that fits the budget
with the measured plan-to-real ratio applied (``Advice.ratio_used``; pass
``budget_bytes=advice.budget_bytes_used`` to ``max_batch_size`` or
``run_batches``), the code to paste and the claims behind it.
"""

from batchlab.advisor.advising import STRATEGIES, advise, clear_cache
from batchlab.advisor.choice import margin
from batchlab.advisor.plot import plot_candidates
from batchlab.advisor.report import Advice, CandidateResult

__all__ = [
    "STRATEGIES",
    "Advice",
    "CandidateResult",
    "advise",
    "clear_cache",
    "margin",
    "plot_candidates",
]
