"""From measured candidates to a choice: fastest within budget, within-noise named, budget fitted.

:func:`decide` picks the fastest candidate whose peak (observed where measured,
else planned) fits the budget at the measured batch; every other candidate
within budget is compared with it by a claim (``ratio_above`` on the timing
samples), and those the claim cannot tell apart (*inconclusive here*) are
within noise: the one with the smallest peak among them is named, and the
advice says they tie. :func:`fit_budget` then asks :func:`batchlab.max_batch_size`
for the largest batch of the choice under ``budget / ratio``, the ratio being
the observed / planned peak measured here (1 where nothing was observed, or
where the plan was not exceeded: the plan is never relaxed).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import jax
import numpy as np

from batchlab._util.format import format_bytes
from batchlab.advisor.candidates import fn_name
from batchlab.advisor.reasons import above_plan, chunk_tradeoff, fits, within_noise
from batchlab.advisor.report import Advice, CandidateResult
from batchlab.claims.evidence import Scope
from batchlab.runs.budget import Budget, max_batch_size
from batchlab.runs.planning import unjit

#: ``max_batch_size`` points already planned, per function, shapes and candidate
KNOWN: dict[tuple, tuple[Any, dict]] = {}


def _scope(mode: str, items: int, candidates: tuple[CandidateResult, ...]) -> Scope:
    chunks = tuple(
        sorted({c.chunk_size for c in candidates if c.chunk_size and c.strategy != "pad"})
    )
    sizes = (
        {"items": items}
        if mode == "dense"
        else {"items": items, "rows per batch": candidates[0].chunk_size}
    )
    if chunks and mode == "dense":
        sizes["chunk sizes"] = chunks
    return Scope(sizes=sizes)


def decide(
    fn: Any,
    candidates: tuple[CandidateResult, ...],
    budget: Budget,
    mode: str,
    items: int,
    notes: list[str],
    start: float,
) -> Advice:
    """The choice among measured candidates and the claims that back it (no budget fit yet)."""
    notes = list(notes)
    measured = [c for c in candidates if c.per_item is not None]
    items_total = candidates[0].items if candidates else items
    scope = _scope(mode, items_total, candidates)
    claims, tied, best = [], [], None
    if measured:
        pool = [c for c in measured if c.peak_bytes <= budget.bytes]
        if not pool:
            pool = measured
            notes.append(
                f"no candidate fits the budget ({format_bytes(budget.bytes)}) at {items_total} items; "
                "the choice is among all of them, at the smaller batch size fitted below"
            )
        fastest = min(pool, key=lambda c: c.per_item.fastest)
        others = [c for c in pool if c is not fastest]
        compared, tied = within_noise(fastest, others, scope)
        group = [fastest] + [c for c in others if c.label in tied]
        best = min(group, key=lambda c: (c.peak_bytes, c.per_item.fastest))
        tied = [c.label for c in group] if len(group) > 1 else []
        claims += compared
        vmap = next((c for c in measured if c.strategy == "vmap"), None)
        if vmap is not None:
            lean = best if best is not vmap else min(measured, key=lambda c: c.peak_bytes)
            if lean is not vmap:
                claims += chunk_tradeoff(vmap, lean, scope)
        claims.append(fits(best, budget.bytes, scope))
        if best.observed_bytes is not None:
            claims.append(above_plan(best, scope))
    skipped = [c.label for c in candidates if c.per_item is None]
    if skipped:
        notes.append(f"not measured: {', '.join(skipped)} (see the table)")
    return Advice(
        name=fn_name(fn),
        mode=mode,
        items=items_total,
        candidates=candidates,
        recommended=None if best is None else best.label,
        within_noise=tuple(tied),
        budget=budget,
        ratio_used=None,
        budget_bytes_used=None,
        batch_size=None if best is None or mode == "dense" else best.chunk_size,
        budget_note="rows per batch as given (the ragged workload is measured whole)",
        claims=tuple(claims),
        scope=scope,
        seconds=time.perf_counter() - start,
        notes=tuple(notes),
    )


def margin(best: CandidateResult) -> tuple[float, str]:
    """The plan-to-real ratio to divide the budget by, and where it comes from."""
    if best.ratio is None:
        return 1.0, "XLA's plan only (no observed peak here: the plan is a lower bound)"
    if best.ratio <= 1:
        return 1.0, f"XLA's plan (the observed peak was {best.ratio:.2f}x the plan: not relaxed)"
    return best.ratio, (
        f"budget / {best.ratio:.2f}, the observed / planned peak of {best.label} at "
        f"{best.items} items measured here"
    )


def fit_budget(
    advice: Advice, fn: Any, example: Any, in_axes: Any, deadline: float, sig: tuple
) -> Advice:
    """The largest batch of the recommended candidate under the budget, the measured ratio applied."""
    best = advice.best
    ratio, how = margin(best)
    used = max(1, int(advice.budget.bytes / ratio))
    if time.perf_counter() > deadline:
        return dataclasses.replace(
            advice,
            ratio_used=ratio,
            budget_bytes_used=used,
            budget_note="not fitted: max_seconds reached (use max_batch_size(budget_bytes=advice.budget_bytes_used))",
        )
    strategy = "chunked" if best.strategy == "chunked" else best.strategy
    if isinstance(in_axes, tuple):
        item = tuple(_first(a) if ax == 0 else a for a, ax in zip(example, in_axes, strict=True))
        axes = in_axes
    else:
        item, axes = (example if in_axes is None else _first(example)), 0
    key = (id(fn), *sig, best.label)
    hit = KNOWN.get(key)
    known = hit[1] if hit is not None and hit[0] is fn else {}
    KNOWN[key] = (fn, known)
    r = max_batch_size(
        unjit(fn),
        item,
        budget_bytes=used,
        strategy=strategy,
        chunk_size=best.chunk_size,
        in_axes=axes,
        known=known,
    )
    note = f"fits {format_bytes(advice.budget.bytes)} with {how}: plan <= {format_bytes(used)}"
    return dataclasses.replace(
        advice,
        ratio_used=ratio,
        budget_bytes_used=used,
        batch_size=int(r),
        budget_note=note,
        seconds=advice.seconds,
    )


def _first(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[0], tree)


__all__ = ["KNOWN", "decide", "fit_budget", "margin"]
