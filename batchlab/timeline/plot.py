"""Draws :class:`batchlab.timeline.model.Timeline` results: one row per lane, time in ms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from batchlab._util.backend import machine_label
from batchlab._util.format import format_seconds
from batchlab.timeline.intervals import merge, subtract

COLORS = {
    "annotation": ("tab:green", "your annotations (TraceAnnotation)"),
    "dispatch": ("tab:orange", "dispatch (PjitFunction)"),
    "compute": ("tab:blue", "XLA op running"),
    "wait": ("0.55", "host waiting for the device (or reading a result)"),
    "transfer": ("tab:purple", "host-to-device transfer"),
    "compile": ("tab:red", "compilation"),
    "runtime": ("0.82", "runtime internals"),
    "idle": ("0.96", "idle: nothing traced (hatched)"),
}
TIME_AXIS = "time since the traced code started (ms)"
MAX_DEPTH = 3  # nesting levels drawn per lane (deeper spans are left out of the picture only)


def plot_timelines(timelines: Sequence[Any]):
    """Timelines stacked, one row per lane (time in ms), on one time axis."""
    timelines = list(timelines)
    if not timelines:
        raise ValueError("`timelines` is empty: pass one or more Timeline results.")
    heights = [0.55 * max(len(t.lanes), 1) + 0.7 for t in timelines]
    fig = Figure(figsize=(12, sum(heights) + 1.6), layout="constrained")
    axes = fig.subplots(len(timelines), 1, sharex=True, height_ratios=heights, squeeze=False)
    wall = max(t.wall for t in timelines)
    kinds: set[str] = set()
    for ax, t in zip(axes[:, 0], timelines, strict=True):
        kinds |= _draw_lanes(ax, t, wall)
        # too short to read on the shared axis: a zoom in the blank past its end
        if t.wall < wall / 4:
            zoom = ax.inset_axes([0.3, 0.0, 0.7, 1.0])
            _draw_lanes(zoom, t, t.wall, share=0.7)
            zoom.set_yticks([])
            zoom.tick_params(axis="x", labelsize=9, pad=-14, direction="in")
            zoom.set_facecolor("0.985")
            zoom.xaxis.set_major_locator(MaxNLocator(5))
            zoom.xaxis.set_major_formatter(  # its own scale, said at the first tick
                FuncFormatter(lambda v, pos: ("zoomed: " if pos == 0 else "") + f"{v:.3g} ms")
            )
        figures = (  # the wall time first: overlap can grow only because device busy grew
            f"wall {format_seconds(t.wall)}; device busy {format_seconds(t.device_busy)}, of it "
            f"overlap {format_seconds(t.overlap)}; idle {format_seconds(t.idle)}; "
            f"{t.dispatches} dispatches"
        )
        ax.set_title(f"{t.label or 'timeline'}: {figures}", fontsize=12, loc="left")
    axes[-1, 0].set_xlabel(TIME_AXIS)
    scale = ", same time scale" if len(timelines) > 1 else ""
    fig.suptitle(f"what ran when{scale} (one warmed trace; {machine_label()})", fontsize=12)
    handles = [  # one legend entry per kind drawn, below the panels
        Patch(facecolor=c, label=label, hatch="//" if k == "idle" else None, edgecolor="0.75")
        for k, (c, label) in COLORS.items()
        if k in kinds
    ]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", fontsize=10, ncol=4, frameon=False)
    return fig


def _draw_lanes(ax, t: Any, wall: float, share: float = 1.0) -> set[str]:
    """Draws ``t``'s lanes into ``ax`` (``share`` of a panel's width: an inset's is less) over
    ``[0, wall]`` seconds; returns the kinds drawn."""
    n = max(len(t.lanes), 1)
    wall_ms = max(wall * 1e3, 1e-6)
    min_w = wall_ms / 1500  # about one pixel at the default width
    row_h = 0.8 / MAX_DEPTH
    groups: dict[tuple[int, int, str], list[tuple[float, float]]] = {}
    for s in t.spans:
        if s.depth < MAX_DEPTH:
            bar = (s.start * 1e3, s.start * 1e3 + max(s.duration * 1e3, min_w))
            groups.setdefault((s.lane, s.depth, s.kind), []).append(bar)
    order = list(COLORS)
    for (lane, depth, kind), bars in sorted(groups.items(), key=lambda g: order.index(g[0][2])):
        y = lane - 0.4 + depth * row_h  # the y axis points down: depth 0 on top
        # spans under a pixel apart are drawn as one bar: the same picture, far fewer shapes
        joined = [(a, b - a) for a, b in merge(bars, gap=min_w)]
        ax.broken_barh(joined, (y, row_h * 0.92), facecolors=COLORS[kind][0], linewidth=0)
    busy = [(s.start * 1e3, s.end * 1e3) for s in t.spans]
    own_ms = t.wall * 1e3  # idle only within this run; past its end a shared axis stays blank
    gaps = [(a, b) for a, b in subtract([(0.0, own_ms)], busy) if b - a > wall_ms / 100]
    for a, b in gaps:  # idle: nothing traced in any lane
        ax.axvspan(a, b, facecolor=COLORS["idle"][0], hatch="//", ec="0.75", lw=0, zorder=0)
    if own_ms < wall_ms * 0.99:  # where this run ended, on a time axis shared with longer ones
        ax.axvline(own_ms, color="black", lw=1.2)
        right = own_ms > 0.75 * wall_ms  # near the right edge: the words go left of the line
        text = "end of this run " if right else " end of this run"
        ax.text(own_ms, -0.5, text, va="top", ha="right" if right else "left", fontsize=9)
    # names inside the spans wide enough to hold them (at most 40 labels, widest first)
    width_px = ax.figure.get_figwidth() * 100 * 0.8 * share  # at dpi 100; fonts scale alike
    fits, taken = [], {}  # taken: the label extents (px) already placed in each row
    for s in t.spans:
        px = s.duration * 1e3 / wall_ms * width_px
        text = s.name if len(s.name) <= 28 else s.name[:26] + ".."
        if s.depth < 2 and px > 5.8 * len(text) + 6:
            fits.append((px, s, text))
    for _, s, text in sorted(fits, key=lambda f: -f[0])[:40]:
        mid, half = (s.start + s.duration / 2) * 1e3 / wall_ms * width_px, 2.9 * len(text) + 3
        row = taken.setdefault((s.lane, s.depth), [])
        if any(a < mid + half and mid - half < b for a, b in row):
            continue  # it would print over a wider span's name: spans may overlap in a lane
        row.append((mid - half, mid + half))
        x, y = (s.start + s.duration / 2) * 1e3, s.lane - 0.4 + (s.depth + 0.46) * row_h
        ax.text(x, y, text, ha="center", va="center", fontsize=9, color="black", clip_on=True)
    ax.set_yticks(list(range(n)), [lane.name for lane in t.lanes] or ["(no spans)"], fontsize=11)
    ax.set(ylim=(n - 0.5, -0.5), xlim=(0, wall_ms))
    ax.grid(True, axis="x", alpha=0.3)
    return {kind for (_, _, kind) in groups} | ({"idle"} if gaps else set())
