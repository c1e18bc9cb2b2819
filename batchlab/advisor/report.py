"""What :func:`batchlab.advise` found: every candidate's plan (XLA's) and paired timing, the
pick, the fit (:func:`batchlab.max_batch_size`, calibrated margin) and why."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import matplotlib
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from batchlab._util.format import Rows, format_bytes, format_seconds
from batchlab._util.plotting import new_figure, seconds_log_axis, short_bytes
from batchlab.measuring.samples import Samples
from batchlab.runs.budget import Budget
from batchlab.runs.search import NO_ROOM


@dataclass(frozen=True)
class CandidateResult:
    """One candidate: XLA's plan at ``items`` items, its samples (per call; ``None``: not
    timed, ``note`` says why) and its plain JAX code."""

    label: str
    strategy: str
    chunk: int | None
    items: int
    planned_bytes: int | float  # NO_ROOM (inf): its compile ran out of device memory
    samples: Samples | None
    code: str
    note: str = ""

    @property
    def per_item(self) -> float | None:
        """The median time per item, in seconds (None where not timed)."""
        return self.samples and self.samples.median / self.items


def plot_candidates(advice: Advice, *, setting=None):
    """x: planned peak (XLA); y: median time per item (bar: fastest .. slowest round).
    ``setting`` (an explorer's: ``budget``, ``recommended``, ``decided``) replaces the advice's
    own. A pick the timings do not back (undecided) gets a grey ring, labelled so."""
    budget, pick, decided = None, None, advice.decided
    if setting is not None:
        budget, pick, decided = setting.budget, setting.recommended, setting.decided
    fig, ax = new_figure(width=9, height=4.8)
    timed = [c for c in advice.candidates if c.samples is not None]
    # faster, but fits fewer items with its own margin (the advice's own budget only)
    left = {k for k, why in advice.excluded if why.startswith("faster")} if setting is None else ()
    line = max(1, int((budget or advice.budget.bytes) / (advice.margin or 1.0)))
    colors = matplotlib.colormaps["tab20" if len(timed) > 10 else "tab10"].colors  # one each
    for i, c in enumerate(timed):
        v = [s / c.items for s in c.samples.values]
        err = [[c.per_item - min(v)], [max(v) - c.per_item]]
        mark = "s" if c.strategy == "host" else "o"
        screened = (c.note or "").startswith("screened out")  # hollow: 6 screening rounds only
        label = c.label + (" (screened out: hollow)" if screened else "")
        over = " (past budget / margin: not picked)" if c.planned_bytes > line else ""
        label += " (left out by its own margin)" if c.label in left else over
        ax.errorbar([c.planned_bytes], [c.per_item], yerr=err, fmt=mark, capsize=3,
                    color=colors[i % len(colors)], label=label,
                    mfc="none" if screened else None)  # fmt: skip
        if c.label == (pick or advice.recommended):  # undecided: grey, and the legend says so
            undecided = "pick, undecided: the fastest median" + (" not left out" if left else "")
            ring = ("k", "pick") if decided else ("0.55", undecided)
            kw = dict(ms=15, mfc="none", mew=1.5 if decided else 2.5, mec=ring[0], label=ring[1])
            ax.plot([c.planned_bytes], [c.per_item], "o", **kw)
    ax.axvline(line, color="tab:red", ls="--", lw=1, label=f"budget / margin {format_bytes(line)}")
    xs = [c.planned_bytes for c in timed] + [line]
    ax.set_xscale("log", base=2)
    ax.set_xlim(min(xs) / 1.15, max(xs) * 1.15)
    ax.xaxis.set_major_locator(LogLocator(base=2, subs=(1.0, 1.5)))
    ax.xaxis.set_minor_locator(NullLocator())
    seconds_log_axis(ax, [s / c.items for c in timed for s in c.samples.values])
    ax.xaxis.set_major_formatter(FuncFormatter(short_bytes))
    ax.set_xlabel("planned peak of one call (XLA compiled memory analysis; log scale)")
    ax.set_ylabel("time per item (median round; log scale)")
    placed = []  # point labels in pixels, the pick then fastest first; one covering another: out
    for c in sorted(timed, key=lambda c: (c.label != (pick or advice.recommended), c.per_item)):
        x, y = ax.transData.transform((c.planned_bytes, c.per_item))
        short = c.label.replace("lax.map chunk ", "map ").replace("host chunk ", "host ")
        if all(abs(x - a) > 5.5 * max(len(short), n) + 8 or abs(y - b) > 13 for a, b, n in placed):
            placed.append((x, y, len(short)))
            ax.annotate(short, (c.planned_bytes, c.per_item), xytext=(5, 4),
                        textcoords="offset points", fontsize=8, color="0.2")  # fmt: skip
    ax.set_title(f"advise({advice.name}), {advice.items} items: bl.measuring.interleaved, "
                 f"{jax.default_backend()}, jax {jax.__version__}", fontsize=11)  # fmt: skip
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=9, frameon=False)
    return fig


@dataclass(frozen=True)
class Advice(Rows):
    """The advice for one function here (see :func:`batchlab.advise`).

    ``recommended``: the pick (``None``: not one item fits); ``tied``: the candidates the
    timings cannot order; ``decided``: the timings back the pick (``False``: the fastest
    median); ``batch_size``: the largest batch (items) whose plan fits ``budget / margin``; on
    ragged data, the rows asked for (or the rows that fit) of the longest item, as rows or
    tokens (``unit``): not fitted above them (``fit_note`` says which).
    """

    name: str
    items: int
    candidates: tuple[CandidateResult, ...]
    recommended: str | None
    runner_up: str | None
    decided: bool
    tied: tuple[str, ...]
    deciding: str
    budget: Budget
    margin: float | None
    margin_source: str
    batch_size: int | None
    excluded: tuple[tuple[str, str], ...] = ()
    lead: str = ""
    seconds: float = 0.0
    fit_note: str = "plan"  # ragged: the rows of the longest item the bound is about

    _header = ("candidate", "planned peak (XLA)", "time per item (median)", "")

    def __getitem__(self, label: str) -> CandidateResult:
        for c in self.candidates:
            if c.label == label:
                return c
        raise KeyError(
            f"no candidate {label!r}; this advice has {[c.label for c in self.candidates]}."
        )

    @property
    def best(self) -> CandidateResult | None:
        """The recommended strategy's row (None where nothing is recommended)."""
        return self.recommended and self[self.recommended]

    @property
    def unit(self) -> str:
        """What ``batch_size`` counts: items, rows (padding) or tokens (buckets, packs)."""
        strategy = self.best and self.best.strategy
        return {"pad": "rows", "buckets": "tokens", "pack": "tokens"}.get(strategy, "items")

    def _fit(self) -> str:
        how = self.margin_source.split(":")[0]  # "calibrated", "given", "uncalibrated"
        return (
            f"{self.fit_note} <= {format_bytes(self.budget.bytes)} / {self.margin or 1.0:.2f} "
            f"({how} margin)"
        )

    @property
    def code(self) -> str:
        """Plain JAX for the pick, with the batch size that fits."""
        if self.best is None:
            return "# nothing fits: " + self.lead
        fit = f"batch_size = {self.batch_size}  # {self.unit} per batch: {self._fit()}"
        return f"{fit}\n{self.best.code}"

    @property
    def why(self) -> str:
        """At most ten lines: the pick, the deciding number, the fit, what faster was left out."""
        if self.best is None:
            return self.lead
        more = f" and {len(self.tied) - 4} more" if len(self.tied) > 4 else ""
        tied = ", ".join(self.tied[:4]) + more
        if self.runner_up is None:
            pick = f"pick: {self.recommended} (the only candidate timed within the budget)"
        elif not self.tied:
            pick = f"pick: {self.recommended}, faster than the runner-up {self.runner_up}"
        elif self.decided:
            pick = (
                f"the timings cannot order {tied}, but each is within 1.1x of the fastest; "
                f"pick: {self.recommended}, the smallest plan among them"
            )
        else:
            left = any(why.startswith("faster") for _, why in self.excluded)
            pick = (
                f"not enough evidence to order {tied}; the fastest median so far"
                f"{' not left out' if left else ''}: {self.recommended} (rerun with a larger "
                "max_seconds to decide)"
            )
        said = "deciding" if self.decided else "undecided, the nearest reading"
        deciding = f"{said}: {self.deciding}" if self.deciding else ""
        fit = f"fit: {self.batch_size} {self.unit} per batch of {self.recommended}, {self._fit()}"
        lines = [line for line in (self.lead, pick, deciding, fit) if line]
        lines += [f"left out: {label}: {why}" for label, why in self.excluded[: 9 - len(lines)]]
        return "\n".join(lines[:10])

    def _title(self) -> str:
        return (
            f"advise({self.name}): {len(self.candidates)} candidates at {self.items} items, "
            f"budget {format_bytes(self.budget.bytes)} ({self.budget.source}), {self.seconds:.1f} s"
        )

    def _rows(self) -> list[tuple]:
        rows = []
        for c in self.candidates:
            t = "-" if c.per_item is None else format_seconds(c.per_item)
            plan = "out of memory" if c.planned_bytes == NO_ROOM else format_bytes(c.planned_bytes)
            rows.append((c.label, plan, t, c.note or "timed"))
        return rows

    def _notes(self) -> tuple[str, ...]:
        return (self.why,)

    plot = plot_candidates  # time per item against XLA's planned peak
