"""Pictures of a replay: a memory map and a fragmentation timeline."""

from __future__ import annotations

from batchlab._util.format import format_bytes
from batchlab._util.plotting import bytes_axis, new_figure, owner_color
from batchlab.allocator.replayer import Replay


def plot_memory_map(replay: Replay, *, ax=None, title: str | None = None, legend: bool = True):
    """Draws the simulated address space over time; returns the figure."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Patch, Rectangle

    if ax is None:
        fig, ax = new_figure(1, width=11, height=4.2)
    fig = ax.figure
    end = (replay.times[-1] + 1) if replay.times else 1
    for offset, size, start in replay.regions:  # the pool: reserved but not yet used
        ax.add_patch(Rectangle((start, offset), end - start, size, color="0.88", lw=0, zorder=0))
    patches, colors = [], []
    for b in replay.blocks:
        if b.offset < 0:  # the platform allocator's driver places buffers: no address
            continue
        patches.append(Rectangle((b.start, b.offset), max(b.end - b.start, 0.6), b.size))
        colors.append(owner_color(b.owner))
    ax.add_collection(
        PatchCollection(patches, facecolors=colors, edgecolors="white", linewidths=0.4, zorder=2)
    )
    for f in replay.failures:
        ax.plot([f.time], [replay.capacity * 0.97], "x", color="red", ms=10, mew=3, zorder=3)
    ax.set_xlim(0, end)
    ax.set_ylim(0, replay.capacity)
    bytes_axis(ax.yaxis)
    ax.set_xlabel("time (allocator event)")
    ax.set_ylabel("address")
    ax.set_title(
        title
        or f"memory map: {replay.events_name} on {replay.policy} "
        f"(preallocate={replay.preallocate}) [simulation]"
    )
    if legend:
        owners = sorted({b.owner for b in replay.blocks})
        handles = [Patch(color=owner_color(o), label=o or "buffer") for o in owners]
        handles.append(Patch(color="0.88", label="free (reserved)"))
        if replay.failures:
            handles.append(
                ax.plot(
                    [],
                    [],
                    "x",
                    color="red",
                    ms=10,
                    mew=3,
                    label="failed allocation\n(no free chunk fits; final\nin this one-stream model)",
                )[0]
            )
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=11, frameon=False
        )
    return fig


def plot_timeline(replay: Replay, *, axes=None):
    """Bytes (in use, reserved, largest free block) and fragmentation over time."""
    from matplotlib.ticker import PercentFormatter

    if axes is None:
        fig, axes = new_figure(2, width=5.5, height=3.4)
    ax_b, ax_f = axes
    fig = ax_b.figure
    t = replay.times
    ax_b.step(t, replay.reserved, where="post", color="0.45", lw=2, label="reserved")
    ax_b.step(t, replay.in_use, where="post", color="tab:blue", lw=2, label="in use")
    ax_b.step(
        t,
        replay.largest_free,
        where="post",
        color="tab:green",
        lw=1.5,
        ls="--",
        label="largest free block",
    )
    bytes_axis(ax_b.yaxis)
    ax_b.set_ylim(0, replay.capacity * 1.05)
    ax_b.set_title("bytes [simulation]")
    ax_b.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, frameon=False)
    ax_f.step(t, [100 * f for f in replay.fragmentation], where="post", color="tab:red", lw=2)
    ax_f.yaxis.set_major_formatter(PercentFormatter())
    ax_f.set_ylim(0, 100)
    ax_f.set_title("XLA's fragmentation:\n1 - largest free chunk / free pool bytes", fontsize=11)
    for f in replay.failures:
        ax_f.axvline(f.time, color="red", alpha=0.3)
    for ax in axes:
        ax.set_xlabel("time (allocator event)")
        ax.grid(True, alpha=0.3)
    return fig


def plot_replay(replay: Replay, *, zoom: tuple[int, int] | None = None):
    """Memory map on top, bytes and fragmentation below: one figure per replay."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    fig = Figure(figsize=(11, 7.2), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.25, 1])
    if zoom is None:
        plot_memory_map(replay, ax=top.subplots())
    else:
        low, high = (int(z) for z in zoom)
        if not 0 <= low < high:
            raise ValueError(
                f"`zoom` must be (low, high) addresses with 0 <= low < high, got {zoom!r}."
            )
        ax_map, ax_zoom = top.subplots(1, 2, width_ratios=[2.2, 1])
        plot_memory_map(replay, ax=ax_map, legend=False)
        end = ax_map.get_xlim()[1]
        ax_map.add_patch(
            Rectangle(
                (0, low),
                end,
                max(high - low, replay.capacity // 150),
                fill=False,
                ec="black",
                ls="--",
                lw=1.2,
                zorder=4,
            )
        )
        plot_memory_map(
            replay,
            ax=ax_zoom,
            title=f"zoom: {format_bytes(high - low)} of addresses\n(dashed box on the left)",
        )
        from matplotlib.ticker import FuncFormatter, MultipleLocator

        ax_zoom.set_ylim(low, high)
        step = 1 << max(10, (high - low).bit_length() - 3)  # about 4 to 8 ticks, whole KiB or more
        ax_zoom.yaxis.set_major_locator(MultipleLocator(step, offset=low))
        ax_zoom.yaxis.set_major_formatter(
            FuncFormatter(lambda v, _: "+" + format_bytes(round(v - low)))
        )
        ax_zoom.set_ylabel(f"address - {format_bytes(low)}")
    plot_timeline(replay, axes=bottom.subplots(1, 2))
    return fig


def _scan_label(scan) -> str:
    """A scan's row label: the events, the policy and, for BFC, pool or grown regions."""
    how = scan.policy
    if scan.policy == "bfc":
        how += ", pool" if scan.preallocate else ", grown on demand"
    return f"{scan.events_name}\n({how})"


def plot_capacity_scan(scans, *, ax=None, title: str | None = None):
    """Fits (green dot) or fails (red cross) for every device size scanned, one row per scan."""

    if ax is None:
        fig, ax = new_figure(1, width=11, height=1.2 + 0.7 * len(scans))
    fig = ax.figure
    for row, scan in enumerate(scans):
        peak = max(scan.peak_live_bytes, 1)
        ok = [c / peak for c, f in zip(scan.capacities, scan.fits, strict=True) if f]
        bad = [c / peak for c, f in zip(scan.capacities, scan.fits, strict=True) if not f]
        ax.plot(
            ok, [row] * len(ok), "o", color="tab:green", ms=6, label="fits" if row == 0 else None
        )
        ax.plot(
            bad,
            [row] * len(bad),
            "x",
            color="red",
            ms=7,
            mew=2,
            label="fails (a request finds no free chunk)" if row == 0 else None,
        )
        if scan.smallest is not None:
            ax.plot(
                [scan.smallest / peak],
                [row],
                "o",
                ms=14,
                mfc="none",
                mec="black",
                mew=1.5,
                label="smallest that fits" if row == 0 else None,
            )
    ax.set_yticks(range(len(scans)), [_scan_label(s) for s in scans])
    ax.set_ylim(-0.6, len(scans) - 0.4)
    lo = min(min(s.capacities) / max(s.peak_live_bytes, 1) for s in scans)
    hi = max(max(s.capacities) / max(s.peak_live_bytes, 1) for s in scans)
    pad = (hi - lo) * 0.03 or 0.01
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_xlabel("simulated device / live peak (requests rounded to 256 B)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=10, frameon=False)
    ax.set_title(title or "which device sizes fit [simulation, XLA's BFC rules]")
    return fig
