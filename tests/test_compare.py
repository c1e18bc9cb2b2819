"""compare(): every strategy measured on the same inputs; structure and ordering, never timings."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from batchlab import compare
from batchlab.batching import Comparison


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


@pytest.fixture(scope="module")
def inputs():
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    return (
        jax.random.normal(k1, (32, 8)),
        jax.random.normal(k2, (8, 256)),
        jax.random.normal(k3, (256, 8)),
    )


def manual_mlp(xs, w1, w2):
    return jnp.tanh(xs @ w1) @ w2


def test_every_strategy_measured_and_agrees(inputs):
    c = compare(
        mlp, *inputs, in_axes=(0, None, None), manual=manual_mlp, chunk_size=4, max_time=0.05
    )
    assert isinstance(c, Comparison)
    assert c.strategies == ["loop", "vmap", "map", "chunked", "host", "manual"]
    for r in c.results:
        assert r.measurement is not None, r.error
        assert r.agrees is True
        assert (
            r.items == 32
            and r.run_seconds > 0
            and r.measurement.trace_lower_seconds + r.measurement.compile_seconds > 0
        )
    # planned memory: chunks of 4 hold an eighth of the hidden activations that full vmap holds
    assert c.get("chunked").temp_bytes < c.get("vmap").temp_bytes / 4
    assert c.get("map").temp_bytes < c.get("vmap").temp_bytes
    assert c.get("chunked").label == "chunked (chunk 4)"
    assert c.get("loop").label == "loop (eager)"
    # dispatches: one program for the in-program strategies; per item / per chunk from Python
    assert [c.get(s).dispatches for s in ("vmap", "map", "chunked", "manual")] == [1, 1, 1, 1]
    assert c.get("loop").dispatches == 32 * 2 + 1  # a slice and a step per item, one stack
    assert c.get("host").dispatches == 1 + 8 + 1  # one split, 8 chunks of 4, one concatenation
    # host: one chunk's temp + its input copy and chunk outputs, still well under vmap's
    assert c.get("host").temp_bytes < c.get("vmap").temp_bytes / 2
    text = repr(c)
    assert "agrees with vmap" in text and "yes" in text and "items/s" in text
    assert "<table" in c._repr_html_()
    assert c.plot().axes


def test_sweep_over_batch_sizes(inputs):
    c = compare(
        mlp,
        *inputs,
        in_axes=(0, None, None),
        strategies=("vmap", "chunked"),
        chunk_size=4,
        batch_sizes=[4, 16, 32],
        max_time=0.05,
    )
    assert c.batch_sizes == [4, 16, 32]
    vmap_temp = [c.get("vmap", b).temp_bytes for b in c.batch_sizes]
    assert vmap_temp == sorted(vmap_temp) and vmap_temp[-1] > vmap_temp[0]  # grows with the batch
    chunk_temp = [c.get("chunked", b).temp_bytes for b in (16, 32)]
    assert chunk_temp[1] <= chunk_temp[0] * 1.5  # bounded by the chunk, not the batch
    assert c.plot().axes


def test_errors(inputs):
    with pytest.raises(ValueError, match="`strategies` may hold"):
        compare(mlp, *inputs, strategies=("pmap",))
    with pytest.raises(
        ValueError, match=r"\('manual' with manual=my_batched_fn\), got \('manual',\)"
    ):
        compare(mlp, *inputs, strategies=("manual",))
    with pytest.raises(ValueError, match=r"`batch_sizes` must lie in 1..32"):
        compare(mlp, *inputs, in_axes=(0, None, None), batch_sizes=[128])
    with pytest.raises(ValueError, match="one axis had size 8: axis 0 of argument w1 of type"):
        compare(mlp, *inputs)
    with pytest.raises(TypeError, match="`manual` must be a function"):
        compare(mlp, *inputs, in_axes=(0, None, None), manual="fast")
    with pytest.raises(KeyError, match="no result for strategy='loop'"):
        compare(mlp, *inputs, in_axes=(0, None, None), strategies=("vmap",), max_time=0.05).get(
            "loop"
        )


def test_strategy_explorer_keeps_every_point_measured(inputs):
    from batchlab.widgets import StrategyExplorer

    ex = StrategyExplorer(
        mlp,
        *inputs,
        in_axes=(0, None, None),
        batch_sizes=[8, 32],
        strategies=("vmap",),
        chunk=4,
        max_time=0.05,
    )
    ex.update(batch_size=8)
    now = ex.update(batch_size=32, strategies=["vmap", "chunked"])
    assert now.strategies == ["vmap", "chunked"] and now.get("chunked", 32).chunk == 4
    assert sorted(ex.points) == [("chunked", 32), ("vmap", 8), ("vmap", 32)] and ex.figure().axes


def test_strategy_explorer_errors(inputs):
    from batchlab.widgets import StrategyExplorer

    with pytest.raises(ValueError, match="`strategies` may hold"):
        StrategyExplorer(mlp, *inputs, batch_sizes=[8], strategies=("manual",))
    with pytest.raises(
        ValueError,
        match=r"`batch_sizes` must be a non-empty list of positive ints, e.g. \[1, 2, 4\], got \[\]",
    ):
        StrategyExplorer(mlp, *inputs, batch_sizes=[])
    with pytest.raises(ValueError, match="`chunk` must be at least 1"):
        StrategyExplorer(mlp, *inputs, batch_sizes=[8], chunk=0)


def test_eager_loop_is_timed_as_it_runs(inputs):
    c = compare(
        mlp, *inputs, in_axes=(0, None, None), strategies=("loop",), batch_sizes=[8], max_time=0.05
    )
    eager = c.get("loop")
    assert eager.agrees and eager.dispatches == 8 * 2 + 1
    # the eager loop's plan is one item's program plus the item outputs held for the stack
    item_temp = bl_memory(mlp, inputs[0][0], inputs[1], inputs[2]).temp_bytes
    assert eager.temp_bytes == item_temp + 8 * 8 * 4
    assert "first call minus the steady median" in eager.measurement.notes[0]


def bl_memory(*args):
    from batchlab import memory_estimate

    return memory_estimate(*args)


def test_strategies_are_timed_interleaved_and_paired_per_batch_size(inputs):
    from batchlab.claims import ratio_above

    c = compare(
        mlp,
        *inputs,
        in_axes=(0, None, None),
        strategies=("vmap", "map"),
        batch_sizes=[8, 32],
        max_time=0.05,
    )
    at32 = {s: c.get(s).samples for s in ("vmap", "map")}
    assert at32["vmap"].paired is not None and at32["vmap"].paired == at32["map"].paired
    assert c.get("vmap", 8).samples.paired != at32["vmap"].paired  # one interleaved run per size
    assert c.get("map").run_seconds == c.get("map").measurement.median
    assert "paired rounds" in ratio_above("map", "vmap", 1000.0)(at32).deciding
    one = compare(mlp, *inputs, in_axes=(0, None, None), strategies=("vmap",), max_time=0.05)
    assert one.get("vmap").samples.paired is None and len(one.get("vmap").samples.values) >= 2
