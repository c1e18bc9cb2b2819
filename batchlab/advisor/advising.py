"""``advise``: plan every candidate with XLA, time those within the budget (one sampler),
fit the pick with ``max_batch_size`` (calibrated margin); a pick that does not fit is left out."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
from tqdm.auto import tqdm

from batchlab._util.checks import (
    check_array_tree,
    check_callable,
    check_positive_float,
    check_positive_int,
)
from batchlab._util.format import format_bytes
from batchlab.advisor.candidates import dense_candidates, fn_name, ragged_candidates
from batchlab.advisor.report import Advice, CandidateResult
from batchlab.batching.strategies import ADVISED
from batchlab.claims.rules import HOLDS, ratio_above, ratio_below
from batchlab.measuring.plan import unjit
from batchlab.measuring.sampler import interleaved
from batchlab.measuring.samples import Samples
from batchlab.ragged.datasets import TokenDataset
from batchlab.ragged.padding import Ragged, as_ragged
from batchlab.runs.budget import Budget, check_in_axes, max_batch_size
from batchlab.runs.calibration import warm_up
from batchlab.runs.search import NO_ROOM

SOURCE = "bl.measuring.interleaved: wall clock of one call, paired by round"
#: fits tried before the advice gives the last one's fitted size (each is a fresh process)
MAX_FITS = 3
#: a short run's candidates shown this much slower than its fastest are not timed further
SCREEN_RATIO = 1.5
#: candidates the timings cannot order but each shown within this of the fastest are equivalent
WITHIN = 1.1


class Verdict(NamedTuple):
    pick: str
    runner_up: str | None
    decided: bool
    tied: tuple[str, ...]
    deciding: str


def screen(samples: Mapping[str, Samples]) -> list[str]:
    """The labels shown over :data:`SCREEN_RATIO` x slower than the fastest (dropped)."""
    fastest = min(samples, key=lambda k: samples[k].median)
    return [
        k
        for k in samples
        if k != fastest and ratio_above(k, fastest, SCREEN_RATIO)(samples).outcome == HOLDS
    ]


def decide(samples: Mapping[str, Samples], planned: Mapping[str, int]) -> Verdict:
    """The pick among ``samples`` (one interleaved run) and the numbers that decided it: the
    fastest median where every other is shown slower; among those it cannot order, each shown
    within :data:`WITHIN` x, the smallest plan; otherwise not enough evidence: the fastest
    median."""
    if len(samples) == 1:
        return Verdict(next(iter(samples)), None, True, (), "")
    order = sorted(samples, key=lambda k: samples[k].median)
    fastest = order[0]
    slower = {k: ratio_above(k, fastest, 1.0)(samples) for k in order[1:]}
    tied = [fastest] + [k for k in order[1:] if slower[k].outcome != HOLDS]
    if len(tied) == 1:
        return Verdict(fastest, order[1], True, (), slower[order[1]].deciding)
    near = {k: ratio_below(k, fastest, WITHIN)(samples) for k in tied[1:]}
    far = [k for k in tied[1:] if near[k].outcome != HOLDS]
    if far:  # not enough evidence: the fastest median so far, said to be undecided
        return Verdict(fastest, far[0], False, tuple(tied), slower[far[0]].deciding)
    pick = min(tied, key=lambda k: (planned[k], samples[k].median))
    other, runner = (pick, fastest) if pick != fastest else (tied[1], tied[1])
    return Verdict(pick, runner, True, tuple(tied), near[other].deciding)


def plan_text(planned: float) -> str:
    """``plans 1.00 MiB``, or that the compile ran out of device memory (:data:`NO_ROOM`)."""
    if planned == NO_ROOM:
        return "ran out of device memory compiling (XLA RESOURCE_EXHAUSTED)"
    return f"plans {format_bytes(planned)}"


def _item_and_batch(example: Any, in_axes: Any, n: int | None) -> tuple[Any, tuple, Any, int]:
    """(one item as max_batch_size takes it, the arguments of a batch of ``n`` (default: the
    example batch, or 256 repeats of one item), the axes, ``n``)."""

    def each(f, a):
        return jax.tree_util.tree_map(lambda x: f(np.asarray(x)), a)

    if in_axes is None:  # one item: the batch repeats it
        n = n or 256
        return example, (each(lambda x: np.repeat(x[None], n, 0), example),), 0, n
    args, axes = (example, in_axes) if isinstance(in_axes, tuple) else ((example,), (0,))
    pairs = list(zip(args, axes, strict=True))
    leaves = [x for a, ax in pairs if ax == 0 for x in jax.tree_util.tree_leaves(a)]
    sizes = {np.shape(x)[0] if np.ndim(x) else None for x in leaves}
    if len(sizes) != 1 or None in sizes:
        raise ValueError(
            f"`example` is a batch (in_axes={in_axes!r}), so every batched leaf needs the same "
            f"leading size; got sizes {sorted(map(str, sizes))}."
        )
    have = sizes.pop()
    if (n or have) > have:
        raise ValueError(
            f"`batch_size`={n} is larger than the example batch ({have} items); pass a "
            "smaller batch_size, a bigger example, or one item with in_axes=None."
        )
    n = n or have
    item = tuple(each(lambda x: x[0], a) if ax == 0 else a for a, ax in pairs)
    args = tuple(each(lambda x: x[:n], a) if ax == 0 else a for a, ax in pairs)
    return (item, args, in_axes, n) if isinstance(in_axes, tuple) else (item[0], args, 0, n)


def _check(fn, example, budget, in_axes, batch_size, strategies, max_seconds, packed_fn):
    """Every argument, before anything compiles; True for ragged ``example``."""
    check_callable(fn)
    ragged = isinstance(example, (Ragged, TokenDataset))
    if ragged and (in_axes is not None or len(example) == 0):
        raise ValueError(
            f"a ragged `example` ({len(example)} items) must hold items and take no `in_axes` "
            f"(`fn(values, mask)` takes one padded item), got in_axes={in_axes!r}."
        )
    if packed_fn is not None and not ragged:
        raise ValueError("`packed_fn` is for ragged input (bl.Ragged, TokenDataset) only.")
    if packed_fn is not None:
        check_callable(packed_fn, "packed_fn")
    if not ragged:
        check_array_tree(example, "example")
    try:
        if not ragged and in_axes is not None:
            check_in_axes(in_axes, example)
    except ValueError as e:  # the same rule, and None: `example` is one item
        raise ValueError(
            f"{e} Or in_axes=None: `example` is one item.".replace("_item", "")
        ) from None
    check_positive_int(budget, "budget")
    check_positive_int(batch_size, "batch_size", allow_none=True)
    if isinstance(strategies, str) or not strategies or not set(strategies) <= set(ADVISED):
        raise ValueError(
            f"`strategies` must be a non-empty list drawn from {ADVISED}, got {strategies!r}."
        )
    check_positive_float(max_seconds, "max_seconds")
    return ragged


def _time(cands: list, items: int, max_seconds: float, bar) -> tuple[dict, dict[str, str]]:
    """Interleaved samples of the candidates worth timing, and why the others were dropped: a short
    run screens, a longer one (paired by round) decides, or ``decide`` says it cannot."""
    calls = {c.label: c.call for c in cands}
    if len(calls) == 1:  # one candidate: nothing to order; two rounds for its figure
        calls["_twice"] = next(iter(calls.values()))
    bar.set_description(f"advise: screening {len(cands)} candidates")
    short = interleaved(calls, rounds=6, passes=1, max_seconds=max_seconds / 4, source=SOURCE)
    short.pop("_twice", None)
    why = f"screened out: over 1.5x the fastest in 6 screening rounds at {items} items (its time)"
    dropped = dict.fromkeys(screen(short), why)
    bar.update(1)
    kept = {k: v for k, v in calls.items() if k not in dropped and k != "_twice"}
    if len(kept) < 2:  # the short run decides: its fastest against the runner-up
        return short, {}
    bar.set_description(f"advise: timing {len(kept)} candidates")
    full = interleaved(kept, rounds=15, passes=2, max_seconds=max_seconds * 3 / 4, source=SOURCE)
    bar.update(1)
    return {**short, **full}, dropped  # the screened keep their short run's samples


def advise(
    fn: Callable,
    example: Any,
    budget: int,
    *,
    in_axes: Any = None,
    batch_size: int | None = None,
    strategies: Sequence[str] = ADVISED,
    packed_fn: Callable | None = None,
    max_seconds: float = 6.0,
    upper: int | None = None,
    progress: bool = True,
) -> Advice:
    """The fastest way to batch ``fn`` that fits ``budget`` (bytes), timed here, and its batch size.

    Args:
      fn: the per-item function, or the one ``jax.vmap(fn, in_axes)`` maps; ragged data:
        ``fn(values, mask)`` of one padded item.
      example: one item (``in_axes=None``: the batch repeats it), a batch (``in_axes=0``), the
        tuple of ``fn``'s arguments (``in_axes`` a tuple of 0 and None), or a ``bl.Ragged`` /
        ``TokenDataset`` (pad, 4 buckets, and with ``packed_fn(values, segment_ids, n)`` packing).
      batch_size: items timed (default: the example batch, or 256); ragged: rows per padded
        batch (default 64; buckets and packs hold ``rows x longest`` tokens).
      strategies: drawn from ``("vmap", "chunked", "host")`` (dense).
      max_seconds: for the interleaved timing (planning and the fit come on top).
      upper: the largest batch size the fit may give (default 16x the timed batch).

    Returns:
      An :class:`Advice`: each candidate's planned peak and timing, the pick (``recommended``;
      ``decided`` False where the timings do not back it), and ``batch_size``, the largest batch
      of the pick whose plan fits the budget (over the margin).

    Raises:
      TypeError, ValueError: an argument (``fn``, ``example``, ``in_axes``, ``budget``,
        ``batch_size``, ``strategies``, ``max_seconds``, ``packed_fn``), checked before any work.

    Example:
      >>> import jax.numpy as jnp
      >>> a = advise(lambda x: jnp.tanh(x).sum(), jnp.ones(8), 2**22, batch_size=16,
      ...            max_seconds=1, progress=False)
      >>> a["lax.map chunk 4"].planned_bytes > 0, a.batch_size >= 1
      (True, True)
    """
    ragged = _check(fn, example, budget, in_axes, batch_size, strategies, max_seconds, packed_fn)
    warm_up()  # the fit calibrates in a child: its server imports while this plans
    start = time.perf_counter()
    budget = Budget(int(budget), "given")
    bar = tqdm(total=4, desc="advise: planning", disable=not progress, leave=False)
    lead, margin, how, size, verdict = "", None, "not fitted", 0, (None, None, False, (), "")
    fit_note = "plan"  # what the fit's plan bound is about
    if ragged:
        data = example.ragged if isinstance(example, TokenDataset) else as_ragged(example)
        n = batch_size or 64
        longest = int(data.lengths.max())
        item = (np.zeros(longest, data.flat.dtype), np.ones(longest, bool))
        fit = max_batch_size(
            unjit(fn), item, budget_bytes=budget.bytes, in_axes=(0, 0), upper=n, margin="calibrated"
        )
        margin, how = float(fit.margin), str(fit.margin_source)
        rows = "the rows asked for"
        if int(fit) < n:
            lead = (
                f"nothing fits at {n} rows x {longest} tokens: fitted {int(fit)} rows "
                f"(budget / {margin:.2f})"
            )
            n, rows = max(1, int(fit)), "the rows that fit"
        fit_note = f"{n} rows x {longest} tokens (the longest item), {rows}: padded, they plan"
        cands = ragged_candidates(fn, data, n, packed_fn)
        items = len(data)
    else:
        item, args, axes, n = _item_and_batch(example, in_axes, batch_size)
        try:  # the user's own error, before anything compiles
            jax.eval_shape(fn, *item) if isinstance(axes, tuple) else jax.eval_shape(fn, item)
        except Exception as e:
            raise TypeError(
                f"`fn` cannot be called on one item of `example` (in_axes={in_axes!r}): "
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            ) from e
        cands = dense_candidates(fn, args, axes, n, strategies)
        if cands and min(c.planned for c in cands) > budget.bytes:
            lean = min(cands, key=lambda c: c.planned)
            small = int(max_batch_size(unjit(fn), item, budget_bytes=budget.bytes, in_axes=axes,
                                       strategy=lean.strategy, chunk_size=lean.chunk,
                                       upper=n))  # fmt: skip
            lead = (
                f"nothing fits {format_bytes(budget.bytes)} at {n} items (the leanest, "
                f"{lean.label}, {plan_text(lean.planned)}): measured at the fitted size, "
                f"{small} items"
            )
            if small:
                item, args, axes, n = _item_and_batch(example, in_axes, small)
                cands = dense_candidates(fn, args, axes, n, strategies)
            else:  # every plan stays over the budget: nothing is timed
                lead += "; not one item fits"
        items = n
    bar.update(1)
    over = {c.label for c in cands if c.planned * (margin or 1.0) > budget.bytes}
    timed = [c for c in cands if c.label not in over]
    planned = {c.label: c.planned for c in cands}
    samples, dropped = _time(timed, items, max_seconds, bar) if timed else ({}, {})
    pool = {k: v for k, v in samples.items() if k not in dropped}
    if not timed and not lead:
        lead = f"no candidate fits with margin {margin:.2f}"
    excluded: list[tuple[str, str]] = []
    bar.set_description("advise: fitting the budget")  # the report names the margin used
    for attempt in range(MAX_FITS if pool else 0):
        verdict = decide(pool, planned)
        pick = next(c for c in cands if c.label == verdict.pick)
        if ragged:
            size = pick.chunk  # rows or tokens per batch, planned within budget / margin above
            break
        fit = max_batch_size(unjit(fn), item, budget_bytes=budget.bytes, strategy=pick.strategy,
                             chunk_size=pick.chunk, in_axes=axes, upper=upper or 16 * n,
                             margin="calibrated", known={n: pick.planned})  # fmt: skip
        size, margin, how = int(fit), float(fit.margin), str(fit.margin_source)
        if size >= n or len(pool) == 1 or attempt == MAX_FITS - 1:
            if size < n and not lead:
                lead = f"nothing timed fits {n} items with the margin: {pick.label} fits {size}"
            break
        why = f"faster, but with margin {margin:.2f} it fits {size} items, not {n}"
        excluded.append((pick.label, why))
        pool.pop(pick.label)
    bar.update(1)
    bar.close()
    if over:  # one line: what was not run, by its plan
        plans = ", ".join(f"{c.label} {plan_text(c.planned)}" for c in cands if c.label in over)
        excluded.append(("not run", f"over the budget at {items} items: {plans}"))
    notes = {c.label: "over the budget: not run" for c in cands if c.label in over}
    notes.update((c.label, "out of memory compiling: not run") for c in cands if c.call is None)
    notes.update(dropped)
    notes.update((k, "left out: " + w) for k, w in excluded if k in planned)
    results = tuple(
        CandidateResult(*c[:3], items, c.planned, samples.get(c.label), c.code, notes.get(c[0], ""))
        for c in cands
    )
    return Advice(fn_name(fn), items, results, *verdict, budget, margin, how, size,
                  tuple(excluded), lead, time.perf_counter() - start, fit_note)  # fmt: skip
