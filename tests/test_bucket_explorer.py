"""05's bucket explorer: one compilation per bucket shape, the run is one jitted call per bucket."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import batchlab as bl
from batchlab import Ragged
from batchlab.ragged.boundaries import rule_boundaries
from batchlab.ragged.bucketing import bucketize
from batchlab.widgets import BucketExplorer


@pytest.fixture(scope="module")
def data() -> Ragged:
    lengths = np.random.default_rng(0).integers(1, 60, size=120)
    values = np.random.default_rng(1).integers(0, 20, size=int(lengths.sum()))
    return Ragged.from_lengths(values, lengths)


@pytest.fixture(scope="module")
def explorer(data) -> BucketExplorer:
    return BucketExplorer(data, vocab=20, features=8, bucket_counts=(1, 2, 4), repeat=3)


@pytest.mark.parametrize("strategy, n_buckets", [("optimal", 4), ("quantile", 2), ("fixed", 4)])
def test_one_compilation_per_bucket_shape_and_none_in_the_run(explorer, strategy, n_buckets):
    pt = explorer.update(rule=strategy, n_buckets=n_buckets)
    # every compilation of the setting's program is counted, the run's first call included:
    # anything compiled twice would make compiles > shapes
    assert pt.compiles == pt.shapes == len(pt.boundaries)
    assert pt.compile_seconds > 0 and pt.measurement.compile_seconds == pt.compile_seconds
    assert pt.measurement.runs == 3


def test_the_plan_adds_up_over_the_buckets(data, explorer):
    pt = explorer.update(rule="optimal", n_buckets=4)
    buckets = bucketize(data, boundaries=rule_boundaries(data.lengths, "optimal", n_buckets=4))
    # as JAX holds them on the device (int32 ids without jax_enable_x64)
    ids = sum(
        jnp.asarray(bk.padded.values).nbytes + jnp.asarray(bk.padded.mask).nbytes for bk in buckets
    )
    table = 20 * 8 * 4
    outputs = sum(len(bk.padded.values) * 8 * 4 for bk in buckets)
    m = pt.measurement.memory
    assert m.argument_bytes == ids + len(buckets) * table  # each program takes the table
    assert m.output_bytes == outputs
    assert m.planned_bytes == m.argument_bytes + m.output_bytes + m.temp_bytes
    assert "largest temp" in m.planned_from


def test_a_revisit_measures_nothing(explorer):
    explorer.update(rule="optimal", n_buckets=2)
    explorer.update(rule="optimal", n_buckets=1)
    before = len(explorer.cache)
    with bl.count_compiles() as compiles:
        explorer.update(rule="optimal", n_buckets=2)
    assert explorer.last_from_cache and compiles.count == 0 and len(explorer.cache) == before


def test_an_unknown_timing_option_is_refused_before_any_work(data):
    with pytest.raises(
        TypeError, match=r"`measure_options` may hold max_time, repeat, tolerance.*got \['warmup'\]"
    ):
        BucketExplorer(data, vocab=20, features=8, bucket_counts=(1, 2), warmup=3)


def test_a_new_setting_shows_its_plan_first_then_the_measurement(data):
    ex = BucketExplorer(data, vocab=20, features=8, bucket_counts=(1, 2, 4), repeat=3)
    _ = ex.widget  # with a front end, so the plan is really drawn
    seen = []
    draw = ex._draw

    def spy(explorer):
        seen.append(explorer.pending)
        return draw(explorer)

    ex._draw = spy
    pt = ex.update(rule="quantile", n_buckets=4)
    plan = seen[0]  # drawn before anything was compiled: a plan, then the measured point
    assert type(plan).__name__ == "BucketPlan" and seen[-1] is None and ex.pending is None
    assert (plan.boundaries, plan.shapes, plan.ratio) == (pt.boundaries, pt.shapes, pt.ratio)
    assert pt.compiles == plan.shapes  # the plan's "shapes to compile" is what was compiled
    assert pt.trace_seconds > 0  # new shapes are traced and lowered before XLA compiles them
    assert 0 < ex.last_first_answer_seconds < ex.last_update_seconds
    ex.pending = plan
    assert "compiling" in ex.figure().axes[0].get_title()
