"""One plan path: memory_estimate, max_batch_size and the runs planner give one figure.

Closed-over arrays are planned as arguments everywhere, and donated bytes
come off the planned figure (the donation term of the formula is tested).
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import batchlab as bl
from batchlab.measuring.plan import batch_planner, batch_spec, estimate_from_compiled

D, H = 32, 48
W1 = jax.random.normal(jax.random.key(0), (D, H), jnp.float32) / D
W2 = jax.random.normal(jax.random.key(1), (H, D), jnp.float32) / H
ITEM = jax.ShapeDtypeStruct((D,), jnp.float32)


def mlp(x):  # closes over its weights, as a model's forward pass does
    return jnp.tanh(jnp.tanh(x @ W1) @ W2)


def mlp_args(x, w1, w2):
    return jnp.tanh(jnp.tanh(x @ w1) @ w2)


@pytest.mark.parametrize("size", [1, 7, 64, 200])
@pytest.mark.parametrize("strategy, chunk", [("vmap", None), ("map", None), ("chunked", 16)])
def test_memory_estimate_equals_max_batch_size_plan(size, strategy, chunk):
    batched = bl.batch(mlp, strategy=strategy, chunk_size=chunk)
    est = bl.memory_estimate(batched, batch_spec(ITEM, size))
    found = bl.max_batch_size(
        mlp, ITEM, budget_bytes=1 << 40, upper=size, strategy=strategy, chunk_size=chunk
    )
    assert int(found) == size
    assert dict(found.curve)[size] == est.planned_bytes
    assert batch_planner(batched)(batch_spec(ITEM, size)) == est.planned_bytes
    # the weights are planned as arguments: the same figure as passing them
    as_args = bl.memory_estimate(
        bl.batch(mlp_args, strategy=strategy, chunk_size=chunk, in_axes=(0, None, None)),
        batch_spec(ITEM, size),
        W1,
        W2,
    )
    assert est.planned_bytes == as_args.planned_bytes
    assert est.argument_bytes == as_args.argument_bytes >= W1.nbytes + W2.nbytes


def test_jitted_closure_and_measure_run_the_hoisted_plan():
    f = jax.jit(jax.vmap(mlp))
    xs = jnp.ones((8, D))
    est = bl.memory_estimate(f, xs)
    assert est.argument_bytes == xs.nbytes + W1.nbytes + W2.nbytes
    m = bl.measure(f, xs, repeat=2)
    assert m.memory.planned_bytes == est.planned_bytes
    from batchlab.measuring.plan import compile_fn

    c = compile_fn(f, (xs,), {})
    assert c.hoisted and c.const_bytes == W1.nbytes + W2.nbytes
    np.testing.assert_allclose(np.asarray(c.call()), np.asarray(jax.vmap(mlp)(xs)), rtol=1e-6)


def _fake(arg, out, tmp, alias, peak=None, cost=None, **executable):
    stats = SimpleNamespace(
        argument_size_in_bytes=arg,
        output_size_in_bytes=out,
        temp_size_in_bytes=tmp,
        alias_size_in_bytes=alias,
        peak_memory_in_bytes=peak,
    )
    return SimpleNamespace(memory_analysis=lambda: stats, cost_analysis=lambda: cost, **executable)


def test_donated_bytes_come_off_the_planned_figure():
    est = estimate_from_compiled(_fake(arg=1000, out=1000, tmp=24, alias=1000), "fn")
    assert est.planned_bytes == 1024  # argument + output + temp - alias
    assert estimate_from_compiled(_fake(1000, 1000, 24, 0), "fn").planned_bytes == 2024
    assert (
        estimate_from_compiled(_fake(1000, 1000, 24, 1000, peak=1500), "fn").planned_bytes == 1500
    )
    assert estimate_from_compiled(_fake(1000, 1000, 24, 0, peak=1500), "fn").planned_bytes == 2024


def test_donation_lowers_the_plan_of_a_real_update():
    x = jax.ShapeDtypeStruct((64 * 1024,), jnp.float32)
    plain = bl.memory_estimate(jax.jit(lambda v: v.at[0].set(1.0)), x)
    donated = bl.memory_estimate(jax.jit(lambda v: v.at[0].set(1.0), donate_argnums=0), x)
    assert plain.alias_bytes == 0 and donated.alias_bytes == 4 * 64 * 1024
    assert donated.planned_bytes <= plain.planned_bytes - donated.alias_bytes
    # notebook 09's headline figure: a donated update plans one buffer less than a copied one
    on_argument = bl.compiled_update(lambda v: v.at[0].set(1.0), x)
    on_donated = bl.compiled_update(lambda v: v.at[0].set(1.0), x, donate_argnums=0)
    assert on_donated.memory.alias_bytes == 4 * 64 * 1024
    assert on_donated.memory.planned_bytes < on_argument.memory.planned_bytes
    assert (
        on_argument.memory.planned_bytes - on_donated.memory.planned_bytes
        >= on_donated.memory.alias_bytes
    )


def test_which_figure_the_plan_came_from():
    from batchlab.measuring.plan import PEAK_FROM_XLA, PEAK_NO_XLA

    tie = estimate_from_compiled(_fake(1000, 1000, 24, 1000, peak=1024), "fn")
    assert tie.planned_bytes == 1024 and tie.planned_from == PEAK_FROM_XLA  # a tie: XLA's own
    zero = estimate_from_compiled(_fake(1000, 1000, 24, 0, peak=0), "fn")  # 0: XLA gave no peak
    assert zero.xla_peak_bytes is None and zero.planned_from == PEAK_NO_XLA
    one = estimate_from_compiled(_fake(1000, 1000, 24, 0, peak=1), "fn")  # a peak, if tiny
    assert one.xla_peak_bytes == 1 and one.planned_bytes == 2024


def test_backend_is_the_compiled_programs_device_not_the_default():
    tpu = SimpleNamespace(device_set=[SimpleNamespace(platform="tpu")])
    est = estimate_from_compiled(_fake(8, 8, 0, 0, input_shardings=[[tpu]]), "fn")
    assert est.backend == "tpu" and est.name == "fn"
    assert estimate_from_compiled(_fake(8, 8, 0, 0), "g").backend == jax.default_backend()


def test_a_backend_without_memory_analysis_is_named():
    no_stats = SimpleNamespace(memory_analysis=lambda: None)
    with pytest.raises(
        RuntimeError,
        match=rf"^The {jax.default_backend()} backend returned no compiled memory analysis; "
        r"memory_estimate needs XLA's CompiledMemoryStats\.$",
    ):
        estimate_from_compiled(no_stats, "fn")


def test_flops_from_the_cost_analysis_none_when_it_has_none():
    def flops(cost):
        return estimate_from_compiled(_fake(8, 8, 0, 0, cost=cost), "fn").flops

    assert flops({"flops": 0.0}) == 0.0 and flops({"flops": 12}) == 12.0  # 0 is a figure
    assert flops({"flops": -1.0}) is None and flops({}) is None and flops(None) is None
