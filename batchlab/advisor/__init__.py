"""The user's own function (12): the fastest way to batch it that fits the budget, measured
here (:func:`advise`), and the pick re-decided from paired timings (:func:`decide`)."""

from batchlab.advisor.advising import advise, decide
from batchlab.advisor.report import Advice, plot_candidates

__all__ = ["Advice", "advise", "decide", "plot_candidates"]
