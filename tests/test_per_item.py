"""per_item_cost: a vmap sweep beside a lax.map loop; the two factors multiply to the speed-up."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from batchlab import measure
from batchlab._util.plotting import figure_to_png
from batchlab.measuring import per_item_cost, sweep
from batchlab.measuring.per_item import machine_label


def item(x, w):
    return jnp.tanh(x @ w).sum()


W = jnp.ones((16, 16)) / 16


def make(b):
    return jnp.ones((b, 16)), W


@pytest.fixture(scope="module")
def measured():
    batched = jax.vmap(item, in_axes=(0, None))
    s = sweep(batched, make, [1, 8, 64], repeat=3)
    loop = measure(lambda xs, w: jax.lax.map(lambda x: item(x, w), xs), *make(64), repeat=3)
    return s, loop


def test_factors_multiply_to_the_speedup(measured):
    s, loop = measured
    cost = per_item_cost(s, loop, 64)
    assert cost.batch_sizes == (1, 8, 64)
    assert cost.per_item[0] == pytest.approx(s.points[0].measurement.median)
    assert cost.loop_median == pytest.approx(loop.median / 64)
    assert cost.fixed_cost_factor * cost.vectorized_factor == pytest.approx(cost.speedup)
    assert "lax.map over 64 items" in repr(cost)


def test_plot_names_the_machine_and_draws_the_spread(measured):
    s, loop = measured
    fig = per_item_cost(s, loop, 64).plot(current=8, memory=s)
    ax_t, ax_m = fig.axes
    assert machine_label() in fig._suptitle.get_text()
    assert "log" in ax_t.get_ylabel() and "log" in ax_t.get_xlabel() and "log" in ax_m.get_ylabel()
    labels = [t.get_text() for t in ax_t.get_legend().get_texts()]
    assert any("min..max" in t for t in labels) and any("lax.map" in t for t in labels)
    assert any("current" in t for t in labels)
    assert ax_t.get_yscale() == "log" and ax_m.get_yscale() == "log"
    # byte ticks sit at powers of two and print in binary units
    ticks = [t for t in ax_m.get_yticks() if ax_m.get_ylim()[0] <= t <= ax_m.get_ylim()[1]]
    assert ticks and all(int(t) & (int(t) - 1) == 0 for t in ticks)
    fig.canvas.draw()
    assert all(lbl.get_text().endswith("B") for lbl in ax_m.get_yticklabels() if lbl.get_text())
    assert figure_to_png(fig)[:4] == b"\x89PNG"


def test_without_a_loop_only_the_sweep(measured):
    s, _ = measured
    cost = per_item_cost(s)
    assert cost.loop_median is None and cost.speedup > 0
    with pytest.raises(ValueError, match=r"no lax\.map loop was measured"):
        _ = cost.fixed_cost_factor
    cost.plot()  # draws without the loop line


def test_bad_inputs(measured):
    s, loop = measured
    with pytest.raises(TypeError, match=r"`sweep` must be a batchlab\.measuring\.Sweep"):
        per_item_cost([1, 2], loop, 4)
    with pytest.raises(TypeError, match=r"`loop` must be a batchlab\.measuring\.Measurement"):
        per_item_cost(s, 0.5, 4)
    with pytest.raises(ValueError, match="`loop_items` must be a positive int"):
        per_item_cost(s, loop, 0)
    one = sweep(jax.vmap(item, in_axes=(0, None)), make, [4], repeat=3)
    with pytest.raises(ValueError, match="a speed-up needs at least two"):
        _ = per_item_cost(one).speedup
    one.points = []
    with pytest.raises(ValueError, match="no measured batch size"):
        per_item_cost(one)


def test_ratios_timed_interleaved_when_given_the_calls(measured):
    s, loop = measured
    batched = jax.jit(jax.vmap(item, in_axes=(0, None)))
    looped = jax.jit(lambda xs, w: jax.lax.map(lambda x: item(x, w), xs))
    cost = per_item_cost(
        s,
        loop,
        64,
        call_at=lambda b: lambda: batched(*make(b)),
        loop_call=lambda: looped(*make(64)),
    )
    assert cost.paired and set(cost.samples) == {"batch 1", "batch 64", "loop"}
    assert len({v.paired for v in cost.samples.values()}) == 1
    assert cost.samples["batch 64"].name == "batch 64, per item"
    # medians of per-round ratios: the factors multiply to about the speed-up
    assert cost.fixed_cost_factor * cost.vectorized_factor == pytest.approx(cost.speedup, rel=0.5)
    assert "paired rounds" in repr(cost)
    assert not per_item_cost(s, loop, 64).paired
    alone = per_item_cost(
        s,
        None,
        64,
        call_at=lambda b: lambda: batched(*make(b)),
        loop_call=lambda: looped(*make(64)),
    )
    assert alone.loop_median == pytest.approx(float(np.median(alone.samples["loop"].values)))
