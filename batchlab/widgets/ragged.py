"""Explorers and plots for ragged data: padding strategies (04) and bucket counts (05).

Both explorers measure through the kit's core (``pad``/``bucketize``,
``measure``, ``count_compiles``); the widgets only pick parameters and draw.
The workload is token pooling: look up a ``features``-wide embedding for
every token id and take the masked mean over the sequence, so the work is
proportional to the padded elements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .._format import format_bytes, format_seconds
from ..bucketing import bucketize
from ..compiles import count_compiles
from ..masking import mean_pool, mean_pool_reference
from ..measure import Measurement, measure
from ..padding import as_ragged, pad
from ..padding_report import (
    STRATEGY_COLORS,
    PaddingReport,
    plot_padding_report,
    strategy_boundaries,
)
from .explorer import Explorer


# ------------------------------------------------------------ padding (04)
@dataclass(frozen=True)
class PaddingPoint:
    """One padding setting, measured: cost of pads, run time, memory and correctness."""

    strategy: str
    size: int
    padded_length: int
    waste: float
    truncated: int
    correct: float
    measurement: Measurement

    def __repr__(self) -> str:
        return (
            f"PaddingPoint({self.strategy} {self.size}: length {self.padded_length}, padding {self.waste:.1%}, "
            f"{self.truncated} items cut, {self.correct:.0%} items correct, "
            f"run {format_seconds(self.measurement.median)}, planned peak "
            f"{format_bytes(self.measurement.memory.peak_bytes)})"
        )


class PaddingExplorer(Explorer):
    """Padding strategy dropdown + size slider -> wasted compute, run time, memory, correctness.

    Strategies: ``max`` (pad to the longest; ``size`` unused), ``multiple``
    (round the longest up to a multiple of ``size``) and ``fixed`` (pad or
    *cut* every item to ``size``: fast, but cut items give wrong results).

    Example:
      >>> from batchlab import Ragged
      >>> data = Ragged.from_lengths(np.arange(10) % 7, [1, 4, 5])
      >>> ex = PaddingExplorer(data, vocab=7, features=4, sizes=(2, 8), repeat=3)
      >>> p = ex.update(strategy="fixed", size=2)
      >>> p.padded_length, p.truncated, round(p.correct, 2)
      (2, 2, 0.33)
    """

    def __init__(
        self,
        data: Any,
        *,
        vocab: int,
        features: int = 16,
        sizes: tuple[int, ...] = (16, 32, 64, 128),
        strategy: str = "max",
        seed: int = 0,
        title: str = "Padding explorer",
        **measure_options: Any,
    ):
        self.data = as_ragged(data)
        self.sizes = tuple(int(s) for s in sizes)
        self.table = jax.random.normal(jax.random.key(seed), (vocab, features))
        self.reference = mean_pool_reference(self.data, self.table)
        self.measure_options = measure_options
        super().__init__(
            self._compute_point,
            {"strategy": strategy, "size": self.sizes[0]},
            controls={
                "strategy": _dropdown(("max", "multiple", "fixed"), "strategy"),
                "size": _slider(self.sizes, "length / multiple"),
            },
            draw=_draw_padding,
            describe=repr,
            title=title,
        )
        self.update()

    def _compute_point(self, strategy: str, size: int) -> PaddingPoint:
        if strategy not in ("max", "multiple", "fixed"):
            raise ValueError(f"`strategy` must be 'max', 'multiple' or 'fixed', got {strategy!r}.")
        options = {
            "max": {},
            "multiple": {"multiple_of": size},
            "fixed": {"length": size, "truncate": True},
        }
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the cut count is reported in the result instead
            p = pad(self.data, **options[strategy])
        m = measure(mean_pool, p.values, p.mask, self.table, **self.measure_options)
        out = np.asarray(jax.jit(mean_pool)(p.values, p.mask, self.table))
        correct = (
            np.all(np.isclose(out, self.reference, rtol=1e-4, atol=1e-5), axis=1).mean()
            if len(out)
            else 1.0
        )
        truncated = int(np.sum(self.data.lengths > p.values.shape[1]))
        return PaddingPoint(
            strategy, size, int(p.values.shape[1]), p.waste, truncated, float(correct), m
        )

    @property
    def measured(self) -> list[PaddingPoint]:
        return list(self.cache.values())


def _draw_padding(ex: PaddingExplorer):
    from ..plots import _new_figure

    fig, (ax_m, ax_t) = _new_figure(2, width=5.2, height=3.8)
    p = ex.result
    lengths = np.sort(ex.data.lengths[:64])[::-1]
    ax_m.imshow(
        np.arange(p.padded_length)[None, :] < lengths[:, None],
        aspect="auto",
        cmap="Blues",
        interpolation="nearest",
        vmin=-0.3,
        vmax=1,
    )
    ax_m.set_title(f"dark = data, light = pad ({p.waste:.0%} pads)")
    ax_m.set_xlabel("position (padded length)")
    ax_m.set_ylabel("item (64 shown, sorted)")
    by_length = {
        q.padded_length: q for q in ex.measured
    }  # "max" at any slider value is one setting
    by_length[p.padded_length] = p
    pts = sorted(by_length.values(), key=lambda q: q.padded_length)
    ax_t.plot(
        [q.padded_length for q in pts],
        [q.measurement.median * 1e3 for q in pts],
        "o-",
        color="tab:blue",
    )
    ax_t.plot(
        [p.padded_length], [p.measurement.median * 1e3], "o", ms=14, mfc="none", mec="red", mew=2
    )
    ax_t.set_xlabel("padded length")
    ax_t.set_ylabel("run time (ms, wall clock median)")
    ax_t.set_title(f"{p.correct:.0%} items correct")
    ax_t.grid(True, alpha=0.3)
    return fig


# ------------------------------------------------------------ buckets (05)
@dataclass(frozen=True)
class BucketPoint:
    """One bucketing setting: padding waste, compilations counted, run time of all buckets."""

    strategy: str
    n_buckets: int
    boundaries: tuple[int, ...]
    shapes: int
    compiles: int
    padded_elements: int
    true_elements: int
    measurement: Measurement

    @property
    def ratio(self) -> float:
        return self.padded_elements / self.true_elements

    def __repr__(self) -> str:
        return (
            f"BucketPoint({self.strategy}, {self.n_buckets} buckets: {self.ratio:.2f}x ragged, "
            f"{self.compiles} compiles, run {format_seconds(self.measurement.median)} for all buckets)"
        )


class BucketExplorer(Explorer):
    """Bucket-count slider (+ strategy) -> padding waste, compile count, run time of the whole dataset.

    Example:
      >>> from batchlab import Ragged
      >>> data = Ragged.from_lengths(np.arange(40) % 5, [3, 9, 1, 12, 15])
      >>> ex = BucketExplorer(data, vocab=5, features=4, bucket_counts=(1, 2), repeat=3)
      >>> pt = ex.update(n_buckets=2)
      >>> pt.shapes, pt.compiles
      (2, 2)
    """

    def __init__(
        self,
        data: Any,
        *,
        vocab: int,
        features: int = 16,
        bucket_counts: tuple[int, ...] = (1, 2, 4, 8),
        strategy: str = "optimal",
        seed: int = 0,
        title: str = "Bucket explorer",
        **measure_options: Any,
    ):
        self.data = as_ragged(data)
        self.bucket_counts = tuple(int(k) for k in bucket_counts)
        self.table = jax.random.normal(jax.random.key(seed), (vocab, features))
        self.measure_options = measure_options
        super().__init__(
            self._compute_point,
            {"strategy": strategy, "n_buckets": self.bucket_counts[0]},
            controls={
                "strategy": _dropdown(("optimal", "quantile", "fixed"), "boundaries"),
                "n_buckets": _slider(self.bucket_counts, "buckets"),
            },
            draw=_draw_buckets,
            describe=repr,
            title=title,
        )
        self.update()

    def _compute_point(self, strategy: str, n_buckets: int) -> BucketPoint:
        b = strategy_boundaries(self.data.lengths, strategy, n_buckets=n_buckets)
        buckets = bucketize(self.data, boundaries=b)
        arrays = [(bk.padded.values, bk.padded.mask) for bk in buckets]

        def pool_buckets(arrays, table):  # one program: every bucket, each at its own shape
            return [mean_pool(v, m, table) for v, m in arrays]

        fresh = jax.jit(lambda v, m, t: mean_pool(v, m, t))  # a new jit: its cache starts empty
        with count_compiles(match="lambda") as c:
            for v, m in arrays:
                fresh(v, m, self.table)
        meas = measure(pool_buckets, arrays, self.table, **self.measure_options)
        return BucketPoint(
            strategy,
            n_buckets,
            tuple(int(x) for x in b),
            len(buckets),
            c.count,
            buckets.padded_elements,
            buckets.true_elements,
            meas,
        )

    @property
    def measured(self) -> list[BucketPoint]:
        return list(self.cache.values())


def _draw_buckets(ex: BucketExplorer):
    from ..plots import _new_figure

    fig, (ax_h, ax_t) = _new_figure(2, width=5.2, height=3.8)
    p = ex.result
    report = PaddingReport(ex.data.lengths, ())
    plot_padding_report(report, axes=ax_h)
    ax_h.vlines(
        p.boundaries, 0, ax_h.get_ylim()[1], colors=STRATEGY_COLORS.get(p.strategy, "k"), lw=1.6
    )
    ax_h.set_title(f"{p.ratio:.2f}x ragged, {p.compiles} compiles")
    pts = sorted((q for q in ex.measured if q.strategy == p.strategy), key=lambda q: q.n_buckets)
    ax_t.plot(
        [q.n_buckets for q in pts],
        [q.measurement.median * 1e3 for q in pts],
        "o-",
        color="tab:blue",
    )
    ax_t.plot([p.n_buckets], [p.measurement.median * 1e3], "o", ms=14, mfc="none", mec="red", mew=2)
    ax_t.set_xlabel("buckets (= compilations)")
    ax_t.set_ylabel("run time, all buckets (ms)")
    ax_t.set_yscale("log")
    ax_t.set_title("wall clock median")
    ax_t.grid(True, alpha=0.3)
    return fig


def _dropdown(options: tuple[str, ...], label: str):
    def make(value: str):
        import ipywidgets as w

        return w.Dropdown(options=list(options), value=value, description=label)

    return make


def _slider(stops: tuple[int, ...], label: str):
    def make(value: int):
        import ipywidgets as w

        return w.SelectionSlider(
            options=list(stops),
            value=value,
            description=label,
            continuous_update=False,
            style={"description_width": "initial"},
            layout=w.Layout(width="360px"),
        )

    return make
