"""Where bucket boundaries go: the boundary rules, and the padding, padded fraction and compiled
shapes each costs (:func:`padding_report`, counted, not timed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from batchlab._util.checks import check_choice, check_positive_int
from batchlab._util.format import Rows
from batchlab._util.plotting import new_figure
from batchlab.ragged.padding import Cost

RULES = ("max", "fixed", "pow2", "quantile", "optimal")
RULE_COLORS = dict(
    zip(RULES, ("tab:red", "tab:gray", "tab:orange", "tab:purple", "tab:green"), strict=True)
)


def lengths_of(lengths: Any) -> np.ndarray:
    """``lengths`` as checked non-negative int64."""
    arr = np.asarray(lengths)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu") or np.any(arr < 0):
        raise ValueError(
            f"`lengths` must be a 1-D array of non-negative ints, got {arr.dtype}"
            f"{list(arr.shape)}; pass e.g. data.lengths or [len(s) for s in seqs]."
        )
    return arr.astype(np.int64)


def check_boundaries(boundaries: Any, lengths: np.ndarray) -> np.ndarray:
    """``boundaries`` as int64, checked: positive, strictly increasing, covering every length."""
    b, longest = np.asarray(boundaries), int(lengths.max()) if len(lengths) else 0
    ok = b.ndim == 1 and b.size > 0 and b.dtype.kind in "iu"
    if not (ok and b[0] >= 1 and np.all(np.diff(b) > 0) and b[-1] >= longest):
        raise ValueError(
            f"`boundaries` must be positive, strictly increasing ints, the last >= the longest "
            f"item's length {longest}, got {boundaries!r:.60}; add a boundary >= {longest} "
            f"(or pad with truncate=True first)."
        )
    return b.astype(np.int64)


def padded_elements(lengths: Any, boundaries: Any) -> int:
    """Total padded size when every item is padded to its bucket's boundary."""
    lengths = lengths_of(lengths)
    b = check_boundaries(boundaries, lengths)
    return int(b[np.searchsorted(b, lengths)].sum())


def optimal_boundaries(lengths: Any, n_buckets: int) -> np.ndarray:
    """The at most ``n_buckets`` boundaries that minimize the total padded size (exact).

    A dynamic program over the distinct lengths: the cheapest way to cover the first
    ``j`` of them with ``k`` buckets is the cheapest with ``k - 1`` buckets up to some
    ``i``, plus one bucket padding lengths ``i..j-1`` to the ``j-1``-th.

    Args:
      lengths: the items' lengths (1-D, non-negative ints; 0 counts as 1).
      n_buckets: the most boundaries wanted (fewer when there are fewer distinct lengths).

    Returns:
      The boundaries, increasing int64, the last the longest length (``[1]`` for no items).

    Raises:
      TypeError: ``n_buckets`` is not an int.
      ValueError: ``lengths`` is not 1-D non-negative ints, ``n_buckets`` is below 1, or the
        search would take minutes (too many distinct lengths: round them first).

    Example:
      >>> optimal_boundaries([3, 3, 4, 9, 10, 30], 2).tolist()
      [10, 30]
    """
    lengths, n_buckets = lengths_of(lengths), check_positive_int(n_buckets, "n_buckets")
    d, c = np.unique(np.maximum(lengths, 1), return_counts=True)
    m, k_max = len(d), min(n_buckets, len(d))
    if m == 0:
        return np.ones(1, dtype=np.int64)
    if m * m * k_max > 2 * 10**9:  # the DP is O(k * m^2): refuse what would take minutes
        raise ValueError(
            f"`lengths` has {m} distinct values: the exact search costs n_buckets x {m}^2 steps "
            f"(minutes). Round the lengths first (e.g. np.ceil(lengths / 16) * 16, at most "
            f"{int((2 * 10**9 / k_max) ** 0.5)} distinct values for n_buckets={k_max}) or use "
            f"batchlab.ragged.boundaries.rule_boundaries(lengths, "
            f'"quantile", n_buckets={n_buckets}).'
        )
    items_below = np.concatenate([[0], np.cumsum(c)]).astype(np.float64)
    best = np.full(m + 1, np.inf)
    best[0] = 0.0
    choice = np.zeros((k_max + 1, m + 1), dtype=np.int64)
    for k in range(1, k_max + 1):
        new = np.full(m + 1, np.inf)
        for j in range(k, m + 1):
            cost = best[:j] + d[j - 1] * (items_below[j] - items_below[:j])
            choice[k, j] = np.argmin(cost)
            new[j] = cost[choice[k, j]]
        best = new
    bounds, j = [], m
    for k in range(k_max, 0, -1):
        bounds.append(d[j - 1])
        j = choice[k, j]
    return np.array(bounds[::-1], dtype=np.int64)


def rule_boundaries(lengths: Any, rule: str, *, n_buckets: int = 8) -> np.ndarray:
    """Boundaries of one rule: ``max`` (one bucket), ``fixed`` (``n_buckets`` of equal width),
    ``pow2`` (1, 2, 4, ... up to the longest), ``quantile`` (``n_buckets`` of equal item
    counts) or ``optimal`` (:func:`optimal_boundaries`).

    >>> for r in RULES:
    ...     print(r, rule_boundaries([1, 5, 9, 100], r, n_buckets=2).tolist())
    max [100]
    fixed [50, 100]
    pow2 [1, 2, 4, 8, 16, 32, 64, 128]
    quantile [5, 100]
    optimal [9, 100]
    """
    check_choice(rule, "rule", RULES)
    lengths, n_buckets = lengths_of(lengths), check_positive_int(n_buckets, "n_buckets")
    if rule == "optimal":
        return optimal_boundaries(lengths, n_buckets)
    clipped = np.maximum(lengths, 1) if len(lengths) else np.ones(1, np.int64)
    if rule == "max":
        return clipped.max(keepdims=True)
    if rule == "pow2":
        lo, hi = np.ceil(np.log2([clipped.min(), clipped.max()])).astype(np.int64)
        return 2 ** np.arange(lo, hi + 1, dtype=np.int64)
    if rule == "fixed":
        edges = np.ceil(np.arange(1, n_buckets + 1) * clipped.max() / n_buckets)
    else:
        edges = np.quantile(clipped, np.arange(1, n_buckets + 1) / n_buckets, method="inverted_cdf")
    return np.unique(edges.astype(np.int64))


@dataclass(frozen=True)
class RuleCost(Cost):
    """What one boundary rule costs on a length distribution (``ratio``: padded over ragged)."""

    rule: str
    boundaries: tuple[int, ...]
    padded_elements: int
    true_elements: int
    shapes: int


@dataclass(frozen=True)
class PaddingReport(Rows):
    """Padding cost of several rules on one length distribution (:func:`padding_report`)."""

    lengths: np.ndarray
    rows: tuple[RuleCost, ...]
    batch_size: int | None = None  # items per batch, each padded to its own longest item

    _header = ("rule", "padded elements", "vs ragged", "padded fraction", "shapes (= compiles)")

    def __getitem__(self, rule: str) -> RuleCost:
        for r in self.rows:
            if r.rule == rule:
                return r
        raise KeyError(f"no rule {rule!r} in this report; it has {[r.rule for r in self.rows]}.")

    def _rows(self) -> list[tuple]:
        return [
            (r.rule, f"{r.padded_elements:,}", f"{r.ratio:.2f}x", f"{r.waste:.1%}", r.shapes)
            for r in self.rows
        ]

    def _title(self) -> str:
        per = self.batch_size and f", batches of {self.batch_size}, each padded to its longest"
        return (
            f"{len(self.lengths):,} items, ragged minimum {int(self.lengths.sum()):,} elements"
            f"{per or ''} (counted, not timed)"
        )

    def plot(self):
        """Length histogram with each rule's boundaries drawn."""
        return plot_padding_report(self)


def rule_cost(
    lengths: np.ndarray, rule: str, n_buckets: int, batch_size: int | None = None
) -> RuleCost:
    """The boundaries of ``rule`` on checked ``lengths``, and what padding to them costs; with
    ``batch_size``, what padding each batch of a bucket (input order) to its own longest costs."""
    b = rule_boundaries(lengths, rule, n_buckets=n_buckets)
    which = np.searchsorted(b, lengths)
    if batch_size is None or not len(lengths):
        used = np.unique(which).size  # non-empty buckets: compiled shapes
        padded = padded_elements(lengths, b)
    else:  # bucket by bucket, input order inside, in batches of `batch_size`
        batches = [
            group[i : i + batch_size]
            for group in (lengths[which == k] for k in np.unique(which))
            for i in range(0, len(group), batch_size)
        ]
        padded = sum(len(b) * int(b.max()) for b in batches)
        used = len({(len(b), int(b.max())) for b in batches})  # distinct (rows, length)
    return RuleCost(rule, tuple(int(x) for x in b), padded, int(lengths.sum()), used)


def padding_report(
    lengths: Any, *, n_buckets: int = 8, batch_size: int | None = None
) -> PaddingReport:
    """Counts padded elements, the padded fraction and compiled shapes for every rule of ``RULES``.

    Args:
      lengths: the items' lengths (1-D non-negative ints).
      n_buckets: the bucket count of the ``fixed``, ``quantile`` and ``optimal`` rules.
      batch_size: ``None``: every item is padded to its bucket's boundary (one batch per
        bucket). An int: each bucket's items, in input order, go in batches of ``batch_size``,
        each batch padded to its own longest item; shapes are the distinct (rows, length).

    Returns:
      A :class:`PaddingReport`, one :class:`RuleCost` per rule (``report["optimal"]``).

    Raises:
      ValueError: ``lengths`` is not 1-D non-negative ints or too large to count in int64;
        ``n_buckets`` or ``batch_size`` below 1.
      TypeError: ``batch_size`` is not an int.

    Example:
      >>> r = padding_report([2, 3, 3, 8], n_buckets=2)
      >>> r["max"].padded_elements, r["optimal"].padded_elements, r["optimal"].shapes
      (32, 17, 2)
      >>> padding_report([2, 3, 3, 8], batch_size=2)["max"].padded_elements  # 2 x 3 + 2 x 8
      22
    """
    lengths = lengths_of(lengths)
    batch_size = check_positive_int(batch_size, "batch_size", allow_none=True)
    if lengths.size and int(lengths.max()) > (2**62) // lengths.size:
        raise ValueError(
            f"`lengths` are too large to count padded elements in int64 (longest "
            f"{lengths.max()}, {lengths.size} items): pass lengths in tokens, not bytes or ids."
        )
    rows = tuple(rule_cost(lengths, r, n_buckets, batch_size) for r in RULES)
    return PaddingReport(lengths, rows, batch_size)


def plot_padding_report(report: PaddingReport, *, axes=None):
    """Length histogram on top; below, one lane per rule with its bucket boundaries (with
    ``axes``: only the histogram, drawn there)."""
    lengths, rows = report.lengths, report.rows
    lo, hi = (max(int(lengths.min()), 1), max(int(lengths.max()), 2)) if len(lengths) else (1, 2)
    ax_h = axes
    if axes is None:
        fig = Figure(figsize=(11.0, 3.2 + 0.55 * len(rows)), layout="constrained")
        ratios = {"height_ratios": [2.2, 0.5 + 0.45 * len(rows)]}
        ax_h, ax_l = fig.subplots(2, 1, sharex=True, gridspec_kw=ratios)
    bins = np.geomspace(lo * 0.9, hi * 1.05, 50)
    # stepfilled: one patch, not one per bin, so it redraws in a fraction of the time
    label = "items per length bin"
    ax_h.hist(lengths, bins, color="tab:blue", alpha=0.6, histtype="stepfilled", label=label)
    ax_h.set(xscale="log", xlim=(lo * 0.85, hi * 1.8), ylabel="items")
    ax_h.legend(fontsize=10, loc="upper right")
    if axes is not None:
        ax_h.set_xlabel("sequence length (tokens, log scale)")
        return axes.figure
    ax_h.set_title(f"{len(lengths):,} lengths and where each rule puts its boundaries (counted)")
    for y, row in enumerate(reversed(rows)):
        ax_l.vlines(row.boundaries, y - 0.3, y + 0.3, color=RULE_COLORS.get(row.rule), lw=2.5)
        label = f"{row.ratio:.2f}x ragged, {row.shapes} shape{'s' * (row.shapes != 1)}"
        ax_l.text(hi * 1.9, y, label, va="center", fontsize=11)
    ax_l.set_yticks(range(len(rows)), [r.rule for r in reversed(rows)])
    ax_l.set(ylim=(-0.6, len(rows) - 0.4), xscale="log", xlim=(lo * 0.85, hi * 1.8))
    ax_l.set_xlabel("sequence length (tokens, log scale); an item pads to the next boundary up")
    ax_l.vlines([], 0, 0, color="0.3", lw=2.5, label="bucket boundary (colour: rule)")
    ax_l.legend(loc="upper left", bbox_to_anchor=(1.0, -0.15), frameon=False, fontsize=10)
    ax_l.grid(True, axis="x", alpha=0.3, which="both")
    return fig


def plot_tradeoff(lengths: Any, bucket_counts: Any):
    """Buckets (= compilations) against padded size / ragged minimum, per rule."""
    fig, ax = new_figure(1, width=7.5, height=4.2)
    lengths = lengths_of(lengths)
    for s in ("quantile", "optimal"):
        ratios = [rule_cost(lengths, s, k).ratio for k in bucket_counts]
        ax.plot(bucket_counts, ratios, "o-", color=RULE_COLORS[s], label=s)
    p2 = rule_cost(lengths, "pow2", 1)
    ax.plot(p2.shapes, p2.ratio, "D", ms=10, color=RULE_COLORS["pow2"], label="power of two")
    ax.axhline(1.0, color="black", lw=1, ls="--", label="ragged minimum")
    ax.set(xlabel="buckets (= compilations)", ylabel="padded / true elements (log scale)")
    ax.set(yscale="log", title="fewer compilations cost more padding (counted)")
    # ratios of 1x to a few x: a label at each readable step, not only at the decades 1 and 10
    ax.yaxis.set_major_locator(FixedLocator([1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, 16, 32]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:g}x"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=10)
    return fig
