"""The batching drawings and tables, each as a person approved it, read back artist by artist.

Each drawing here was looked at as a PNG at projector size before its description was stored
in ``tests/figures/<name>.json``: every text (content, place, size, colour), box, line, image
and tick label. A change to a drawing (a colour, an offset, a label, a scale) fails the test
with the difference; a deliberate change is looked at again and stored with
``BATCHLAB_UPDATE_FIGURES=1 pytest tests/test_figures.py``. The figures' data are fixed here
(shapes, made-up timings and bytes), so the descriptions hold on every JAX version and machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex

import batchlab as bl
from batchlab.batching.comparison_plot import plot_comparison

STORE = Path(__file__).parent / "figures"
UPDATE = os.environ.get("BATCHLAB_UPDATE_FIGURES") == "1"


def _r(v):
    """Numbers to 4 significant digits, recursively, so a description is plain JSON."""
    if isinstance(v, str | bool) or v is None:
        return v
    if isinstance(v, dict):
        return {k: _r(x) for k, x in v.items()}
    if np.ndim(v) > 0 or isinstance(v, list | tuple):
        return [_r(x) for x in np.asarray(v, dtype=object).tolist()]
    return float(f"{float(v):.4g}")


def _colour(c):
    return None if c is None or (isinstance(c, str) and c == "none") else to_hex(c, keep_alpha=True)


def _text(t):
    return dict(
        text=t.get_text(), xy=_r(t.get_position()), size=_r(t.get_fontsize()),
        colour=_colour(t.get_color()), ha=t.get_ha(), va=t.get_va(),
        weight=str(t.get_fontweight()), family=list(t.get_fontfamily()),
    )  # fmt: skip


def _axes(ax, renderer):
    texts = [_text(t) for t in ax.texts]
    for a in ax.texts:
        if getattr(a, "arrow_patch", None) is not None:
            texts.append(dict(arrow=a.arrowprops.get("arrowstyle"), xy=_r(a.xy), at=_r(a.xyann)))
    lines = [
        dict(label=ln.get_label(), x=_r(ln.get_xdata()), y=_r(ln.get_ydata()),
             colour=_colour(ln.get_color()), style=ln.get_linestyle(), width=_r(ln.get_linewidth()),
             marker=str(ln.get_marker()), size=_r(ln.get_markersize()),
             face=_colour(ln.get_markerfacecolor()))
        for ln in ax.get_lines()
    ]  # fmt: skip
    patches = [
        dict(kind=type(p).__name__, box=_r(p.get_bbox().bounds) if hasattr(p, "get_bbox") else None,
             face=_colour(p.get_facecolor()) if p.get_fill() else None,
             edge=_colour(p.get_edgecolor()), width=_r(p.get_linewidth()), label=p.get_label())
        for p in ax.patches
    ]  # fmt: skip
    images = [
        dict(data=_r(im.get_array()), cmap=im.get_cmap().name, clim=_r(im.get_clim()))
        for im in ax.images
    ]
    legend = ax.get_legend()
    return dict(
        place=_r(ax.get_position().bounds),
        title={k: _text(ax.title if k == "center" else getattr(ax, f"_{k}_title"))
               for k in ("left", "center")},
        labels=[ax.get_xlabel(), ax.get_ylabel()],
        lim=_r([ax.get_xlim(), ax.get_ylim()]), scale=[ax.get_xscale(), ax.get_yscale()],
        on=ax.axison, ticks=[[t.get_text() for t in ax.get_xticklabels()],
                             [t.get_text() for t in ax.get_yticklabels()]],
        grid=[[g.get_visible(), _r(g.get_alpha())] for g in (a.get_gridlines()[:1] for a in (ax.xaxis, ax.yaxis)) for g in g],
        minor=[t.get_text() for t in ax.get_yticklabels(minor=True)],
        texts=texts, lines=lines, patches=patches, images=images,
        bars=[type(c).__name__ for c in ax.containers],
        legend=None if legend is None else dict(
            texts=[t.get_text() for t in legend.get_texts()], title=legend.get_title().get_text(),
            size=_r(legend.get_texts()[0].get_fontsize()) if legend.get_texts() else None,
            frame=legend.get_frame_on(), box=_r(legend.get_window_extent(renderer).bounds)),
    )  # fmt: skip


def describe(fig, replace: dict[str, str] = {}) -> dict:  # noqa: B006 (read only)
    """A figure as JSON: its size, suptitle and every axes' artists (after a layout)."""
    FigureCanvasAgg(fig).draw()  # a layout and a renderer to measure the legends with
    renderer = fig.canvas.get_renderer()
    got = dict(
        size=_r(fig.get_size_inches()),
        suptitle=None if fig._suptitle is None else _text(fig._suptitle),
        axes=[_axes(ax, renderer) for ax in fig.axes],
    )
    text = json.dumps(got, indent=1, sort_keys=True)
    for old, new in replace.items():
        text = text.replace(old, new)
    return json.loads(text)


def check(name: str, got: dict) -> None:
    path = STORE / f"{name}.json"
    if UPDATE or not path.exists():
        assert UPDATE, f"no stored description {path}: look at the drawing, then store it"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert got == want, f"{name} differs from the approved drawing ({path})"


def test_the_axes_drawing_is_the_approved_one():
    e = bl.explain_axes(lambda x, w: (x @ w, w.sum()), jnp.ones((5, 3)), jnp.ones((3, 2)),
                        in_axes=(0, None), out_axes=(1, None))  # fmt: skip
    check("axes_two_outputs", describe(e.plot()))
    scalar = bl.explain_axes(lambda s, x: s * x, jnp.ones(4), jnp.ones((4, 2, 3)), in_axes=(0, 0))
    check("axes_scalar_item", describe(scalar.plot()))


def test_the_outer_trap_drawing_is_the_approved_one():
    # the largest magnitude is negative (-3): a colour scale from the data alone would differ
    pred, labels = np.arange(4.0)[:, None] / 2, np.array([1.0, 0.0, 3.0, -1.0])
    fig = bl.plots.plot_outer_trap(pred - labels, pred[:, 0] - labels, title="pred - labels")
    check("outer_trap", describe(fig))
    # and one whose largest magnitude is positive (3) while its lowest value is -1
    fig = bl.plots.plot_outer_trap(np.array([[3.0, -1.0], [0.5, 1.0]]), np.array([3.0, 1.0]))
    check("outer_trap_positive", describe(fig))


def _fixed(c, times: dict, temp: dict):
    """``c`` with made-up timings and bytes per (strategy, items): a drawing's fixed data."""
    results = []
    for r in c.results:
        m = r.measurement
        memory = dataclasses.replace(m.memory, temp_bytes=temp[r.strategy, r.items])
        m = dataclasses.replace(m, times=times[r.strategy, r.items], memory=memory)
        results.append(dataclasses.replace(r, measurement=m))
    return dataclasses.replace(c, results=tuple(results), name="double")


def _where() -> str:
    from batchlab._util.backend import machine_label

    return machine_label()


def _double(x):
    return x * 2


def test_the_comparison_bars_are_the_approved_ones():
    c = bl.compare(_double, jnp.ones((16, 4)), strategies=("vmap", "chunked", "loop"),
                   max_time=0.01)  # fmt: skip
    c = _fixed(
        c,
        {("vmap", 16): (1e-5, 2e-5, 4e-5), ("chunked", 16): (3e-5, 3.5e-5, 5e-5),
         ("loop", 16): (2e-3, 2.2e-3, 3e-3)},
        {("vmap", 16): 0, ("chunked", 16): 512, ("loop", 16): 0},
    )  # fmt: skip
    check("comparison_bars", describe(c.plot(), {_where(): "<machine>"}))


def test_the_comparison_sweep_is_the_approved_one():
    c = bl.compare(_double, jnp.ones((16, 4)), strategies=("vmap", "chunked"),
                   manual=lambda x: x + x, batch_sizes=(4, 16), max_time=0.01)  # fmt: skip
    times = {("vmap", 4): (1e-5, 1.2e-5, 2e-5), ("vmap", 16): (2e-5, 2.5e-5, 3e-5),
             ("chunked", 4): (3e-5, 3.1e-5, 4e-5), ("chunked", 16): (9e-5, 1e-4, 2e-4),
             ("manual", 4): (1e-5, 1.1e-5, 2e-5), ("manual", 16): (2e-5, 2.4e-5, 3e-5)}  # fmt: skip
    temp = {("vmap", 4): 0, ("vmap", 16): 256, ("chunked", 4): 64, ("chunked", 16): 64,
            ("manual", 4): 0, ("manual", 16): 256}  # fmt: skip
    fig = plot_comparison(_fixed(c, times, temp), current=16)
    check("comparison_sweep", describe(fig, {_where(): "<machine>"}))
    wide = {k: (t[0] * (300 if k[1] == 16 else 1),) for k, t in times.items()}  # spans >= 20x
    fig = _fixed(c, wide, {k: v * 1000 + 8 for k, v in temp.items()}).plot()
    check("comparison_sweep_log", describe(fig, {_where(): "<machine>"}))
    # exactly 20x between the fastest and the slowest run: log scale; no temp at all: 0..1
    edge = {k: (0.125 if k == ("vmap", 4) else 2.5,) for k in times}
    fig = _fixed(c, edge, dict.fromkeys(temp, 0)).plot()
    check("comparison_sweep_edges", describe(fig, {_where(): "<machine>"}))


def test_tradeoff_labels_its_ratios_between_the_decades():
    """05's trade-off curve: ratios of 1x to a few x get labels (1.5x, 2x, 3x), not only 1 and 10."""
    fig = bl.plots.plot_tradeoff([5, 9, 5, 30, 12, 9, 31, 200, 7, 64], (1, 2, 4))
    ax = fig.axes[0]
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    shown = [t.get_text() for t in ax.get_yticklabels() if lo <= t.get_position()[1] <= hi]
    assert "1x" in shown and "2x" in shown and len(shown) >= 4, shown


def test_memory_map_draws_a_one_event_block_in_its_own_colour():
    """08's memory map: a temp block alive for one event is drawn wide enough, with no white edge
    washing out its colour (the legend's orange must be what the eye sees)."""
    from matplotlib.collections import PatchCollection
    from matplotlib.figure import Figure

    from batchlab import allocator

    events = allocator.Events.from_events(
        [(0, "alloc", "w", 4096, "weights"), (1, "alloc", "t", 256, "temp"), (2, "free", "t")]
        + [(t, "alloc", f"r{t}", 256, "result output") for t in range(3, 300)],
        name="one short temp",
    )
    replay = allocator.replay(events, allocator.BFCAllocator(1 << 20))
    ax = Figure().subplots()
    allocator.plots.plot_memory_map(replay, ax, legend=False)
    (coll,) = [c for c in ax.collections if isinstance(c, PatchCollection)]
    faces, edges = coll.get_facecolors(), coll.get_edgecolors()
    placed = [b for b in replay.blocks if b.offset >= 0]
    (i,) = [k for k, b in enumerate(placed) if b.owner == "temp"]
    assert list(edges[i]) == list(faces[i]), (edges[i], faces[i])
