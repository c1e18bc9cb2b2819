"""per_item_cost: a vmap sweep's time per item, and its speed-up paired by round."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import batchlab as bl
from batchlab._util.backend import machine_label
from batchlab._util.plotting import figure_to_png
from batchlab.measuring.per_item import Sweep, SweepPoint, per_item_cost


def item(x, w):
    return jnp.tanh(x @ w).sum()


W = jnp.ones((16, 16)) / 16


def make(b):
    return jnp.ones((b, 16)), W


def sweep(sizes):
    f = jax.vmap(item, in_axes=(0, None))
    return Sweep("item", [SweepPoint(b, bl.measure(f, *make(b), repeat=3)) for b in sizes])


@pytest.fixture(scope="module")
def measured():
    return sweep([1, 8, 64])


def test_per_item_and_speedup_of_the_fastest_samples(measured):
    cost = per_item_cost(measured)
    assert cost.batch_sizes == (1, 8, 64) and not cost.paired
    assert cost.per_item[0] == pytest.approx(measured.points[0].measurement.median)
    assert cost.per_item[2] == pytest.approx(measured.points[2].measurement.median / 64)
    assert cost.speedup == pytest.approx(cost.mins[0] / (cost.mins[2] / 64))
    assert "vmap, batch 64" in repr(cost) and "fastest samples" in repr(cost)


def test_plot_names_the_machine_and_draws_the_spread(measured):
    fig = per_item_cost(measured).plot(current=8, memory=measured)
    ax_t, ax_m = fig.axes
    assert machine_label() in fig._suptitle.get_text()
    assert "log" in ax_t.get_ylabel() and "log" in ax_t.get_xlabel() and "log" in ax_m.get_ylabel()
    labels = [t.get_text() for t in ax_t.get_legend().get_texts()]
    assert any("min..max" in t for t in labels) and any("current" in t for t in labels)
    assert ax_t.get_yscale() == "log" and ax_m.get_yscale() == "log"
    # byte ticks sit at powers of two and print in binary units
    ticks = [t for t in ax_m.get_yticks() if ax_m.get_ylim()[0] <= t <= ax_m.get_ylim()[1]]
    assert ticks and all(int(t) & (int(t) - 1) == 0 for t in ticks)
    fig.canvas.draw()
    assert all(lbl.get_text().endswith("B") for lbl in ax_m.get_yticklabels() if lbl.get_text())
    assert figure_to_png(fig)[:4] == b"\x89PNG"
    per_item_cost(measured).plot()  # without the memory panel


def test_bad_inputs():
    with pytest.raises(TypeError, match=r"`sweep` must be a batchlab\.measuring\.Sweep"):
        per_item_cost([1, 2])
    one = sweep([4])
    with pytest.raises(ValueError, match="a speed-up needs two"):
        _ = per_item_cost(one).speedup
    one.points = []
    with pytest.raises(ValueError, match="no measured batch size"):
        per_item_cost(one)


def test_speedup_timed_interleaved_when_given_the_calls(measured):
    batched = jax.jit(jax.vmap(item, in_axes=(0, None)))
    cost = per_item_cost(measured, call_at=lambda b: lambda: batched(*make(b)))
    assert cost.paired and set(cost.samples) == {"batch 1", "batch 64"}
    assert len({v.paired for v in cost.samples.values()}) == 1
    assert cost.samples["batch 64"].name == "batch 64, per item"
    small, large = (np.array(cost.samples[k].values) for k in ("batch 1", "batch 64"))
    assert cost.speedup == pytest.approx(float(np.median(small / large)))
    assert "paired rounds" in repr(cost)
