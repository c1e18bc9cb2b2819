"""Planned bytes against batch size for budget searches (06): the curves and the budget line."""

from __future__ import annotations

from matplotlib.ticker import FuncFormatter

from batchlab._util.format import format_bytes
from batchlab._util.plotting import log2_axis, new_figure, short_bytes

_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple")
_STYLES = (("s-", 7, 3), ("o--", 5, 2), ("^-.", 5, 2), ("v:", 5, 2))


def plot_budget_curves(results: list):
    """Planned bytes versus batch size of :func:`batchlab.max_batch_size` results (each answer
    ringed; a chunk's remainder sizes as separate marks), with the budget line, log2 axes."""
    axes = new_figure(1, width=7.0, height=4.2)[1]
    for i, r in enumerate(results):
        label = r.strategy + (f" (chunk {r.chunk_size})" if r.chunk_size else "")
        points = sorted(r.curve)
        chunk = r.chunk_size if r.strategy != "vmap" and r.chunk_size and r.chunk_size > 1 else 0
        line = [(b, p) for b, p in points if not chunk or b % chunk == 0 or b < chunk]
        rest = [(b, p) for b, p in points if (b, p) not in line]
        color, (fmt, ms, z) = _COLORS[i % len(_COLORS)], _STYLES[i % len(_STYLES)]
        if line:
            kw = dict(color=color, ms=ms, zorder=z, label=f"{label}: largest batch {r.batch_size}")
            axes.plot(*zip(*line, strict=True), fmt, **kw)
        if rest:
            kw = dict(color=color, ms=8, mew=2, zorder=z)
            kw["label"] = f"{label}: batch % {chunk} != 0 (remainder planned apart)"
            axes.plot(*zip(*rest, strict=True), "x", **kw)
        if r.planned_bytes is not None:
            axes.plot([r.batch_size], [r.planned_bytes], "o", ms=14, mfc="none", mec=color, mew=2)
    axes.plot([], [], "o", ms=12, mfc="none", mec="black", mew=2, label="answer (ringed)")
    budgets = sorted({r.budget_bytes for r in results})
    for b in budgets:
        axes.axhline(b, color="red", ls="--", lw=1.5)
    top = f" budget {format_bytes(budgets[-1])}"
    transform = axes.get_yaxis_transform()
    axes.text(0.01, budgets[-1], top, color="red", ha="left", va="bottom", transform=transform)
    log2_axis(axes, "x")
    axes.set_yscale("log", base=2)
    axes.yaxis.set_major_formatter(FuncFormatter(short_bytes))
    axes.set_xlabel("batch size (items, log2 axis)")
    axes.set_ylabel("planned bytes (log2 axis)")
    axes.set_title("planned bytes per batch (XLA compiled memory analysis)")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right", fontsize=9)
    return axes.figure
