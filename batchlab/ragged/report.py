"""What padding costs: padded elements, wasted compute and compiled shapes, per boundary rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from batchlab._util.checks import check_positive_int
from batchlab._util.format import Rows
from batchlab._util.plotting import new_figure
from batchlab.ragged.boundaries import (
    check_boundaries,
    equal_width_boundaries,
    lengths_of,
    optimal_boundaries,
    padded_elements,
    power_of_two_boundaries,
    quantile_boundaries,
)

RULE_COLORS = {
    "max": "tab:red",
    "fixed": "tab:gray",
    "pow2": "tab:orange",
    "quantile": "tab:purple",
    "optimal": "tab:green",
}

RULES = ("max", "fixed", "pow2", "quantile", "optimal")


@dataclass(frozen=True)
class RuleCost:
    """What one padding rule costs on a length distribution."""

    rule: str
    boundaries: np.ndarray
    padded_elements: int
    true_elements: int
    shapes: int

    @property
    def waste(self) -> float:
        """Fraction of computed positions that are padding (linear cost per position)."""
        return 1 - self.true_elements / self.padded_elements if self.padded_elements else 0.0

    @property
    def ratio(self) -> float:
        """Padded elements / the ragged minimum (1.0 = no padding at all)."""
        return self.padded_elements / self.true_elements if self.true_elements else 1.0


@dataclass(frozen=True)
class PaddingReport(Rows):
    """Padding cost of several rules on one length distribution (:func:`padding_report`)."""

    lengths: np.ndarray
    rows: tuple[RuleCost, ...]

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

    _header = ("rule", "padded elements", "vs ragged", "wasted compute", "shapes (= compiles)")

    def _title(self) -> str:
        return (
            f"{len(self.lengths):,} items, ragged minimum {int(self.lengths.sum()):,} elements "
            "(counted, not timed)"
        )

    def plot(self, *, axes=None):
        """Length histogram with each rule's boundaries drawn."""
        return plot_padding_report(self, axes=axes)


def rule_boundaries(
    lengths: Any, rule: str, *, n_buckets: int = 8, boundaries: Any = None
) -> np.ndarray:
    """Boundaries of one rule: ``max`` (one bucket), ``fixed`` (``boundaries`` or equal width),
    ``pow2``, ``quantile`` or ``optimal`` (both with ``n_buckets``).

    Example:
      >>> rule_boundaries([1, 5, 9], "max").tolist()
      [9]
    """
    lengths = lengths_of(lengths)
    if rule == "max":
        return np.array([max(int(lengths.max()) if len(lengths) else 1, 1)])
    if rule == "fixed":
        if boundaries is not None:
            return check_boundaries(boundaries, lengths)
        return equal_width_boundaries(lengths, n_buckets)
    if rule == "pow2":
        return power_of_two_boundaries(lengths)
    if rule == "quantile":
        return quantile_boundaries(lengths, n_buckets)
    if rule == "optimal":
        return optimal_boundaries(lengths, n_buckets)
    raise ValueError(f"`rule` must be one of {list(RULES)}, got {rule!r}.")


def padding_report(
    lengths: Any,
    rule: str | tuple[str, ...] | None = None,
    *,
    n_buckets: int = 8,
    boundaries: Any = None,
    batch_size: int | None = None,
) -> PaddingReport:
    """Counts padded elements, wasted compute and compiled shapes for padding rules.

    Args:
      lengths: ``(items,)`` true lengths (or a :class:`Ragged`).
      rule: one name or a tuple of ``max``, ``fixed``, ``pow2``,
        ``quantile``, ``optimal``; ``None`` for all.
      n_buckets: buckets for ``fixed`` (equal width), ``quantile`` and ``optimal``.
      boundaries: explicit boundaries for ``fixed``.
      batch_size: rows per batch as in :func:`batchlab.bucket_batches`; ``None``:
        each bucket is one batch of its own items.

    Returns:
      A :class:`PaddingReport` (table; ``.plot()`` draws the histogram).

    Example:
      >>> r = padding_report([2, 3, 3, 8], ("max", "optimal"), n_buckets=2)
      >>> r["max"].padded_elements, r["optimal"].padded_elements, r["optimal"].shapes
      (32, 17, 2)
      >>> padding_report([2, 3, 3, 8], "optimal", n_buckets=2, batch_size=2)["optimal"].padded_elements
      28
    """
    lengths = lengths_of(lengths)
    if lengths.size and int(lengths.max()) > (2**62) // max(lengths.size, 1):
        raise ValueError(
            f"`lengths` are too large to count padded elements in int64 (longest {int(lengths.max())}, "
            f"{lengths.size} items): pass lengths in tokens, not bytes or ids."
        )
    if rule is not None and not isinstance(rule, (str, tuple, list)):
        raise TypeError(
            f"`rule` must be a name or a tuple of names from {list(RULES)}, got {rule!r}."
        )
    batch_size = check_positive_int(batch_size, "batch_size", allow_none=True)
    names = RULES if rule is None else ((rule,) if isinstance(rule, str) else tuple(rule))
    rows = []
    for name in names:
        b = rule_boundaries(lengths, name, n_buckets=n_buckets, boundaries=boundaries)
        counts = np.bincount(np.searchsorted(b, lengths), minlength=len(b))
        if batch_size is not None:  # every batch is batch_size rows: the last one filled up
            counts = -(-counts // batch_size) * batch_size
        padded = int(np.dot(counts, b.astype(np.int64)))
        rows.append(RuleCost(name, b, padded, int(lengths.sum()), int(np.count_nonzero(counts))))
    return PaddingReport(lengths, tuple(rows))


# --------------------------------------------------------------------- plots
def plot_padding_report(report: PaddingReport, *, axes=None):
    """Length histogram on top; below, one lane per rule with its buckets as spans."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    lengths = report.lengths
    hi = max(int(lengths.max()), 2) if len(lengths) else 2
    lo = max(int(lengths.min()), 1) if len(lengths) else 1
    if axes is not None:
        _length_histogram(axes, lengths, lo, hi)
        return axes.figure
    rows = report.rows
    fig = Figure(figsize=(11.0, 3.2 + 0.55 * len(rows)), layout="constrained")
    ax_h, ax_l = fig.subplots(
        2, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, 0.5 + 0.45 * len(rows)]}
    )
    _length_histogram(ax_h, lengths, lo, hi)
    ax_h.set_xlabel("")
    ax_h.set_title(
        f"{len(lengths):,} lengths and where each rule puts its buckets (counted, not timed)"
    )
    for i, row in enumerate(rows):
        y = len(rows) - 1 - i
        color = RULE_COLORS.get(row.rule, "black")
        edges = np.concatenate([[lo * 0.9], row.boundaries])
        for k in range(len(row.boundaries)):
            ax_l.barh(
                y,
                edges[k + 1] - edges[k],
                left=edges[k],
                height=0.62,
                color=color,
                alpha=0.35 if k % 2 else 0.75,
                edgecolor="white",
                linewidth=1.2,
            )
        ax_l.text(
            hi * 1.9,
            y,
            f"{row.ratio:.2f}x ragged, {row.shapes} shape{'s' * (row.shapes != 1)}",
            va="center",
            fontsize=11,
        )
    ax_l.set_yticks(range(len(rows)), [r.rule for r in rows][::-1])
    ax_l.set_ylim(-0.6, len(rows) - 0.4)
    ax_l.set_xscale("log")
    ax_l.set_xlim(lo * 0.85, hi * 1.8)
    ax_l.set_xlabel(
        "sequence length (tokens, log scale); a bucket pads its items to its right edge"
    )
    ax_l.legend(
        handles=[
            Patch(color="0.3", alpha=0.75, label="bucket"),
            Patch(color="0.3", alpha=0.35, label="next bucket (shades alternate)"),
        ],
        fontsize=10,
        loc="upper left",
        bbox_to_anchor=(1.0, -0.15),
        frameon=False,
    )
    ax_l.grid(True, axis="x", alpha=0.3, which="both")
    return fig


def _length_histogram(ax, lengths, lo: int, hi: int) -> None:
    ax.hist(
        lengths,
        bins=np.geomspace(lo * 0.9, hi * 1.05, 50),
        color="tab:blue",
        alpha=0.6,
        histtype="stepfilled",  # one patch, not one per bin: redraws in a fraction of the time
        label="items per length bin",
    )
    ax.set_xscale("log")
    ax.set_xlim(lo * 0.85, hi * 1.8)
    ax.set_ylabel("items")
    ax.set_xlabel("sequence length (tokens, log scale)")
    ax.legend(fontsize=10, loc="upper right")


def tradeoff(
    lengths: Any, bucket_counts: Any, rules: tuple[str, ...] = ("quantile", "optimal")
) -> dict:
    """``{rule: [padded / ragged for each bucket count]}`` plus ``pow2`` as one point."""
    lengths = np.asarray(lengths)
    total = lengths.sum()
    out = {
        s: [
            padded_elements(lengths, rule_boundaries(lengths, s, n_buckets=k)) / total
            for k in bucket_counts
        ]
        for s in rules
    }
    p2 = rule_boundaries(lengths, "pow2")
    out["pow2"] = (
        int(np.unique(np.searchsorted(p2, lengths)).size),
        padded_elements(lengths, p2) / total,
    )
    return out


def plot_tradeoff(lengths: Any, bucket_counts: Any, *, axes=None):
    """Buckets (= compilations) against padded size / ragged minimum, per rule."""
    fig, ax = new_figure(1, width=7.5, height=4.2) if axes is None else (axes.figure, axes)
    curves = tradeoff(lengths, bucket_counts)
    for s in ("quantile", "optimal"):
        ax.plot(bucket_counts, curves[s], "o-", color=RULE_COLORS[s], label=s)
    ax.plot(*curves["pow2"], "D", ms=10, color=RULE_COLORS["pow2"], label="power of two")
    ax.axhline(1.0, color="black", lw=1, ls="--", label="ragged minimum")
    ax.set_xlabel("buckets (= compilations)")
    ax.set_ylabel("padded / true elements (log scale)")
    ax.set_yscale("log")
    ax.set_title("fewer compilations cost more padding (counted)")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=10)
    return fig
