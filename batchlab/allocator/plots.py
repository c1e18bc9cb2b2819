"""Pictures of a replay: a memory map, bytes and fragmentation over time, capacity scans."""

from __future__ import annotations

import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, MultipleLocator, PercentFormatter

from batchlab._util.format import format_bytes
from batchlab._util.plotting import bytes_axis, new_figure, owner_color
from batchlab.allocator.replayer import Replay

FAILED = dict(color="red", ms=10, mew=3)  # the mark of a failed allocation
EVENT_AXIS = "time (allocator event)"


def plot_memory_map(replay: Replay, ax, *, title: str | None = None, legend: bool = True):
    """Draws the simulated address space over time into ``ax``."""
    end = (replay.times[-1] + 1) if replay.times else 1
    for offset, size, start in replay.regions:  # the pool: reserved but not yet used
        ax.add_patch(Rectangle((start, offset), end - start, size, color="0.88", lw=0, zorder=0))
    placed = [b for b in replay.blocks if b.offset >= 0]  # the platform's driver gives no address
    thin = end / 250  # about two pixels: a block alive for one event still shows its colour
    widths = [max(b.end - b.start, thin) for b in placed]
    patches = [
        Rectangle((b.start, b.offset), w, b.size) for b, w in zip(placed, widths, strict=True)
    ]
    colors = [owner_color(b.owner) for b in placed]
    edges = [c if w < 4 * thin else "white" for c, w in zip(colors, widths, strict=True)]
    ax.add_collection(
        PatchCollection(patches, facecolors=colors, edgecolors=edges, linewidths=0.4, zorder=2)
    )
    for f in replay.failures:
        ax.plot([f.time], [replay.capacity * 0.97], "x", **FAILED, zorder=3)
    ax.set(xlim=(0, end), ylim=(0, replay.capacity), xlabel=EVENT_AXIS, ylabel="address")
    bytes_axis(ax.yaxis)
    policy = f"{replay.policy} (preallocate={replay.preallocate})"
    ax.set_title(title or f"memory map: {replay.events_name}\non {policy} [simulation]")
    if legend:
        owners = sorted({b.owner for b in replay.blocks})
        handles = [Patch(color=owner_color(o), label=o or "buffer") for o in owners]
        handles.append(Patch(color="0.88", label="free (reserved)"))
        if replay.failures:
            label = "failed allocation\n(no free chunk fits; final\nin this one-stream model)"
            handles += ax.plot([], [], "x", **FAILED, label=label)
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1, 1), fontsize=11, frameon=False
        )


def plot_replay(replay: Replay, *, zoom: tuple[int, int] | None = None):
    """Memory map on top (``zoom``: addresses ``low..high`` beside it), bytes and fragmentation."""
    fig = Figure(figsize=(11, 7.2), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.25, 1])
    if zoom is None:
        plot_memory_map(replay, top.subplots())
    else:
        low, high = (int(z) for z in zoom)
        if not 0 <= low < high:
            raise ValueError(
                f"`zoom` must be (low, high) addresses with 0 <= low < high, got {zoom!r}."
            )
        ax_map, ax_zoom = top.subplots(1, 2, width_ratios=[2.2, 1])
        plot_memory_map(replay, ax_map, legend=False)
        box = (0, low), ax_map.get_xlim()[1], max(high - low, replay.capacity // 150)
        ax_map.add_patch(Rectangle(*box, fill=False, ec="black", ls="--", lw=1.2, zorder=4))
        title = f"zoom: {format_bytes(high - low)} of addresses\n(dashed box on the left)"
        plot_memory_map(replay, ax_zoom, title=title)
        ax_zoom.set_ylim(low, high)
        step = 1 << max(10, (high - low).bit_length() - 3)  # about 4 to 8 ticks, whole KiB or more
        ax_zoom.yaxis.set_major_locator(MultipleLocator(step, offset=low))
        ax_zoom.yaxis.set_major_formatter(
            FuncFormatter(lambda v, _: f"+{format_bytes(round(v - low))}")
        )
        ax_zoom.set_ylabel(f"address - {format_bytes(low)}")
    ax_b, ax_f = bottom.subplots(1, 2)
    for values, color, ls, label in [
        (replay.pool_bytes, "0.45", "-", "reserved"),
        (replay.in_use, "tab:blue", "-", "in use"),
        (replay.largest_free, "tab:green", "--", "largest free block"),
    ]:
        lw = 2 if ls == "-" else 1.5
        ax_b.step(replay.times, values, where="post", color=color, lw=lw, ls=ls, label=label)
    bytes_axis(ax_b.yaxis)
    ax_b.set(ylim=(0, replay.capacity * 1.05), title="bytes [simulation]")
    ax_b.legend(fontsize=11, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    percent = [100 * f for f in replay.fragmentation]
    ax_f.step(replay.times, percent, where="post", color="tab:red", lw=2)
    ax_f.yaxis.set_major_formatter(PercentFormatter())
    ax_f.set_ylim(0, 100)
    ax_f.set_title("XLA's fragmentation:\n1 - largest free chunk / free pool bytes", fontsize=12)
    for ax in (ax_b, ax_f):
        ax.set_xlabel(EVENT_AXIS)
        ax.grid(True, alpha=0.3)
    return fig


SCAN_MARKS = [  # (label, marker, style) of the capacities that fit, fail, and the smallest
    ("fits", "o", {"color": "tab:green", "ms": 6}),
    ("fails (a request finds no free chunk)", "x", {"color": "red", "ms": 7, "mew": 2}),
    ("smallest that fits", "o", {"ms": 14, "mfc": "none", "mec": "black", "mew": 1.5}),
]


def plot_capacity_scan(scans):
    """Fits (green dot) or fails (red cross) for every device size scanned, one row per scan."""
    ax = new_figure(1, width=11, height=1.2 + 0.7 * len(scans))[1]
    fits, fails, smallest = [], [], []  # (capacity / live peak, row)
    for row, scan in enumerate(scans):
        peak = max(scan.peak_live_bytes, 1)
        for c, ok in zip(scan.capacities, scan.fits, strict=True):
            (fits if ok else fails).append((c / peak, row))
        if scan.smallest is not None:
            smallest.append((scan.smallest / peak, row))
    for points, (label, marker, style) in zip((fits, fails, smallest), SCAN_MARKS, strict=True):
        ax.plot(*np.reshape(points, (-1, 2)).T, marker, **style, label=label)
    how = {True: "bfc, pool", False: "bfc, grown on demand"}
    labels = [
        f"{s.events_name}\n({how[s.preallocate] if s.policy == 'bfc' else s.policy})" for s in scans
    ]
    ax.set_yticks(range(len(scans)), labels)
    ax.set_ylim(-0.6, len(scans) - 0.4)
    x = [p[0] for p in fits + fails]
    pad = (max(x) - min(x)) * 0.03 or 0.01
    ax.set_xlim(min(x) - pad, max(x) + pad)
    ax.set_xlabel("simulated device / live peak (requests rounded to 256 B)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=10, frameon=False)
    ax.set_title("which device sizes fit [simulation, XLA's BFC rules]")
    return ax.figure
