"""The advisor's explorer (12): move the budget and the chunk size over what ``advise`` measured.

Nothing is measured again on a slider move. The candidates' time samples and
peaks are the :class:`~batchlab.advisor.Advice`'s own; a new budget re-runs
the advisor's choice on them (:func:`batchlab.advisor.choice.decide`: which
candidates fit, the fastest within budget or the ones within noise of it,
the claims), and the chunk-size slider selects which ``lax.map`` candidate is
set against ``vmap``. The batch size that fits a budget needs compilations
(``bl.max_batch_size``): the explorer gives it only at the advice's own budget,
where ``advise`` fitted it, and elsewhere says which planned-bytes limit to
pass (``budget / ratio``, the same arithmetic as the advice).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from batchlab._util.checks import check_positive_int
from batchlab._util.format import format_bytes, format_seconds, html_table, text_table
from batchlab.advisor.choice import decide, margin
from batchlab.advisor.plot import plot_candidates
from batchlab.advisor.report import Advice, CandidateResult
from batchlab.runs.budget import Budget
from batchlab.widgets.controls import budget_slider, stops_slider
from batchlab.widgets.explorer import Explorer


@dataclasses.dataclass(frozen=True)
class AdvisorSetting:
    """What the advice says at one budget and one chunk size (every figure from the Advice).

    ``advice``: the advisor's choice re-made at this budget from the measured
    candidates (no new measurement). ``fits``: the labels whose peak (observed
    where measured, else planned) is within the budget at the measured batch.
    ``chunk``: the selected ``lax.map`` candidate; ``time_ratio`` its fastest
    time per item over vmap's, ``memory_ratio`` vmap's peak over its peak
    (``None`` without a vmap candidate). ``budget_bytes_used``: the plan limit,
    ``budget / ratio_used``; ``batch_size``: the fitted batch, given only at the
    advice's own budget (elsewhere ``None``: it needs compilations).
    """

    budget: int
    chunk_size: int
    advice: Advice
    fits: tuple[str, ...]
    chunk: CandidateResult
    vmap: CandidateResult | None
    ratio_used: float
    budget_bytes_used: int
    batch_size: int | None

    @property
    def recommended(self) -> str | None:
        return self.advice.recommended

    @property
    def within_noise(self) -> tuple[str, ...]:
        return self.advice.within_noise

    @property
    def chunk_fits(self) -> bool:
        return self.chunk.label in self.fits

    @property
    def time_ratio(self) -> float | None:
        if self.vmap is None or self.vmap.per_item is None or self.chunk.per_item is None:
            return None
        return self.chunk.per_item.fastest / self.vmap.per_item.fastest

    @property
    def memory_ratio(self) -> float | None:
        if self.vmap is None or not self.chunk.peak_bytes:
            return None
        return self.vmap.peak_bytes / self.chunk.peak_bytes

    def _rows(self) -> list[tuple[str, str]]:
        c = self.chunk
        t = "not measured" if c.per_item is None else format_seconds(c.per_item.fastest)
        return [
            ("budget", format_bytes(self.budget)),
            ("fit at the measured batch", ", ".join(self.fits) or "none"),
            ("recommended", str(self.recommended)),
            ("within noise", ", ".join(self.within_noise) or "-"),
            (
                "plan limit",
                f"{format_bytes(self.budget_bytes_used)} (budget / {self.ratio_used:.2f})",
            ),
            (
                "batch size",
                "not fitted at this budget (compilations: bl.max_batch_size(..., "
                "budget_bytes=plan limit))"
                if self.batch_size is None
                else str(self.batch_size),
            ),
            (
                c.label,
                f"{t} per item (fastest), peak {format_bytes(c.peak_bytes)} ({c.peak_source})",
            ),
            (
                f"{c.label} against vmap",
                "-"
                if self.time_ratio is None or self.memory_ratio is None
                else f"{self.time_ratio:.2f}x the time per item (wall clock, fastest samples), "
                f"{self.memory_ratio:.2f}x less peak memory",
            ),
        ]

    def __repr__(self) -> str:
        return "AdvisorSetting\n" + text_table(self._rows(), ("", ""))

    def _repr_html_(self) -> str:
        return html_table(self._rows(), caption="the advice at this budget and chunk size")


def default_budgets(advice: Advice) -> list[int]:
    """Powers of two from below the smallest peak to above the largest, and the advice's budget."""
    peaks = [c.peak_bytes for c in advice.candidates if c.per_item is not None and c.peak_bytes]
    if not peaks:
        return [advice.budget.bytes]
    low, high = 2 ** math.floor(math.log2(min(peaks))), 2 ** math.ceil(math.log2(max(peaks)))
    stops = {low // 2, high * 2, advice.budget.bytes}
    b = low
    while b <= high:
        stops.add(b)
        b *= 2
    return sorted(s for s in stops if s >= 1)


def setting(advice: Advice, budget: int, chunk_size: int) -> AdvisorSetting:
    """The advice re-decided at ``budget`` (nothing measured), with the chunk size selected."""
    label = f"lax.map chunk {chunk_size}"
    decided = decide(
        None, advice.candidates, Budget(int(budget), "explorer"), advice.mode, advice.items, [], 0.0
    )
    kept = tuple(  # the advice's notes on what was measured; the fit notes are this budget's
        n for n in advice.notes if n not in decided.notes and not n.startswith("no candidate fits")
    )
    decided = dataclasses.replace(
        decided, name=advice.name, seconds=advice.seconds, notes=decided.notes + kept
    )
    best = decided.best
    ratio = advice.ratio_used if best is None else margin(best)[0]
    ratio = 1.0 if ratio is None else ratio
    own = budget == advice.budget.bytes and decided.recommended == advice.recommended
    measured = [c for c in advice.candidates if c.per_item is not None]
    return AdvisorSetting(
        budget=int(budget),
        chunk_size=int(chunk_size),
        advice=decided,
        fits=tuple(c.label for c in measured if c.peak_bytes <= budget),
        chunk=advice[label],
        vmap=next((c for c in measured if c.strategy == "vmap"), None),
        ratio_used=float(ratio),
        budget_bytes_used=max(1, int(budget / ratio)),
        batch_size=advice.batch_size if own else None,
    )


class AdvisorExplorer(Explorer):
    """Budget and chunk-size sliders over one :func:`batchlab.advise` result (nothing re-measured).

    Args:
      advice: what ``bl.advise`` returned for a dense workload with ``lax.map`` candidates.
      budgets: the budget slider's stops in bytes (default: powers of two around the
        candidates' peaks, and the advice's own budget).
      budget: the starting budget (default: the advice's own, which must be a stop).
      chunk_size: the starting chunk size (default: the recommended one if it is
        a ``lax.map`` candidate, else the smallest).

    Raises:
      TypeError: ``advice`` is not an Advice; a budget or chunk size is not an int.
      ValueError: the advice has no ``lax.map`` candidate; a start value is not a stop.

    Example:
      >>> import jax.numpy as jnp, batchlab as bl
      >>> a = bl.advise(lambda x: jnp.tanh(jnp.outer(x, x)).sum(), jnp.ones(64), 2**20,
      ...               batch_size=32, chunk_sizes=[4], strategies=["vmap", "chunked"],
      ...               max_seconds=5, observe_peaks=False, progress=False)
      >>> ex = AdvisorExplorer(a)
      >>> ex.update(budget=a.budget.bytes).recommended == a.recommended
      True
    """

    def __init__(
        self,
        advice: Advice,
        budgets: Sequence[int] | None = None,
        *,
        budget: int | None = None,
        chunk_size: int | None = None,
        title: str = "The advice over budget and chunk size",
    ) -> None:
        if not isinstance(advice, Advice):
            raise TypeError(
                f"`advice` must be what bl.advise returned (a bl.advisor.Advice), got "
                f"{type(advice).__name__}."
            )
        # every chunk size the advisor tried; one max_seconds left untimed reads "not measured"
        chunks = sorted(c.chunk_size for c in advice.candidates if c.strategy == "chunked")
        if not chunks:
            raise ValueError(
                "`advice` has no lax.map candidate to select a chunk size from; call bl.advise "
                "on dense input with strategies including 'chunked'. Its candidates: "
                f"{[c.label for c in advice.candidates]}."
            )
        if budgets is None:
            budgets = default_budgets(advice)
        elif isinstance(budgets, (str, bytes)) or not isinstance(budgets, Sequence):
            raise TypeError(f"`budgets` must be a list of bytes, got {type(budgets).__name__}.")
        budgets = sorted({check_positive_int(b, "budgets") for b in budgets})
        if not budgets:
            raise ValueError("`budgets` must hold at least one budget in bytes, got [].")
        budget = advice.budget.bytes if budget is None else check_positive_int(budget, "budget")
        if budget not in budgets:
            raise ValueError(
                f"`budget`={budget} is not one of the slider's stops {budgets}; add it to "
                "`budgets` (the advice's own budget is a stop by default)."
            )
        if chunk_size is None:
            chunk_size = advice.chunk_size if advice.chunk_size in chunks else chunks[0]
        elif check_positive_int(chunk_size, "chunk_size") not in chunks:
            raise ValueError(
                f"`chunk_size`={chunk_size} is not one the advice measured; pick one of {chunks}."
            )
        self.advice = advice
        self.choices = {"budget": tuple(budgets), "chunk_size": tuple(chunks)}

        budget_control = budget_slider(budgets)

        super().__init__(
            lambda budget, chunk_size: setting(advice, budget, chunk_size),
            {"budget": budget, "chunk_size": chunk_size},
            controls={
                "budget": budget_control,
                "chunk_size": stops_slider(tuple(chunks), "lax.map chunk size"),
            },
            draw=lambda ex: plot_candidates(ex.result.advice, highlight=ex.result.chunk.label),
            describe=describe,
            title=title,
        )
        self.update()


def describe(s: AdvisorSetting) -> str:
    """One line for the status: what fits, the choice, and the selected chunk against vmap."""
    n = sum(c.per_item is not None for c in s.advice.candidates)
    head = (
        f"budget {format_bytes(s.budget)}: {len(s.fits)} of {n} candidates fit at "
        f"{s.advice.items} items; recommended <b>{s.recommended}</b>"
    )
    if len(s.within_noise) > 1:
        head += f" (within noise: {', '.join(s.within_noise)})"
    c = s.chunk
    if s.time_ratio is not None and s.memory_ratio is not None:
        head += (
            f"; {c.label}: {s.time_ratio:.2f}x vmap's time per item (wall clock, fastest), "
            f"{s.memory_ratio:.2f}x less peak memory"
        )
    head += f"; plan limit {format_bytes(s.budget_bytes_used)} (budget / {s.ratio_used:.2f})"
    if s.batch_size is not None:
        head += f", batch size {s.batch_size}"
    return head + " (from the advice's measurements: nothing re-measured)"


__all__ = ["AdvisorExplorer", "AdvisorSetting", "default_budgets", "describe", "setting"]
