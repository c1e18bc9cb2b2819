"""Drawing XLA's buffer assignment (00, 08): allocations as bands, values as boxes."""

from __future__ import annotations

from batchlab._util.format import format_bytes
from batchlab._util.plotting import new_figure


def plot_buffer_assignment(assignment, *, ax=None, kinds=("parameter", "output", "temp")):
    """XLA's plan as a picture: one band per allocation (height = its bytes),
    one box per value at XLA's offset, from its first to its last instruction.
    """
    from matplotlib.patches import Rectangle

    if ax is None:
        fig, ax = new_figure(1, width=11, height=4.6)
    fig = ax.figure
    allocations = [
        a for a in assignment.allocations_of(*kinds) if any(v.start is not None for v in a.values)
    ]
    steps = max(len(assignment.sequence), 1)
    gap = max((a.size for a in allocations), default=1) * 0.08
    base, ticks, labels, palette = (
        0.0,
        [],
        [],
        (
            "tab:blue",
            "tab:orange",
            "tab:green",
            "tab:red",
            "tab:purple",
            "tab:brown",
            "tab:pink",
            "tab:olive",
        ),
    )
    n = 0
    for a in allocations:
        ax.add_patch(Rectangle((0, base), steps, a.size, color="0.93", lw=0, zorder=0))
        for v in a.values:
            if v.start is None:
                continue
            width = max(v.end - v.start, 0.4)
            ax.add_patch(
                Rectangle(
                    (v.start, base + v.offset),
                    width,
                    v.size,
                    facecolor=palette[n % len(palette)],
                    edgecolor="white",
                    lw=1.5,
                    alpha=0.9,
                    zorder=2,
                )
            )
            if width >= 1 and v.size >= 0.25 * a.size and v.size >= 0.1 * gap / 0.08:
                ax.text(
                    v.start + width / 2,
                    base + v.offset + v.size / 2,
                    v.name.replace("{}", "")[:14],
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="white",
                    zorder=3,
                    clip_on=True,
                    rotation=0 if width >= 0.12 * steps else 90,
                )
            n += 1
        ticks.append(base + a.size / 2)
        labels.append(f"{a.kind}\n{format_bytes(a.size)}")
        base += a.size + gap
    ax.set_xlim(0, steps)
    ax.set_ylim(0, max(base - gap, 1))
    ax.set_yticks(ticks, labels)
    ax.set_xlabel("step in XLA's instruction order")
    ax.set_title(
        f"XLA buffer assignment of {assignment.name} on {assignment.backend} "
        f"[from XLA: boxes sharing a band share bytes]"
    )
    return fig
