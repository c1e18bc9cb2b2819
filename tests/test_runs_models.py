"""Real equinox and optax models through the runs room: plans, fingerprints, resumes (issue 26)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import batchlab
from batchlab.measuring.plan import batch_planner, batch_spec
from batchlab.runs.checkpoint import fn_fingerprint

D = 16


def mlp(seed=0, activation=jax.nn.relu):
    return eqx.nn.MLP(D, 4, 32, 2, activation=activation, key=jax.random.key(seed))


def data(n, seed=0):
    return np.random.default_rng(seed).normal(size=(n, D)).astype(np.float32)


def test_an_equinox_module_is_fingerprinted_by_its_jaxpr_and_weights():
    x = jax.ShapeDtypeStruct((D,), jnp.float32)
    same = fn_fingerprint(mlp(0), x) == fn_fingerprint(mlp(0), x)
    weights = fn_fingerprint(mlp(0), x) != fn_fingerprint(mlp(1), x)
    static = fn_fingerprint(mlp(0), x) != fn_fingerprint(mlp(0, activation=jax.nn.tanh), x)
    ln = eqx.nn.LayerNorm(D)
    changed = eqx.tree_at(lambda m: m.weight, ln, ln.weight * 2)
    assert same and weights and static and fn_fingerprint(ln, x) != fn_fingerprint(changed, x)


MODEL = mlp(0)
NORM = eqx.nn.LayerNorm(D)  # issue 26: "global 'ln' ... is a object" refused every module


def model_fn(x):
    return MODEL(NORM(x))


def test_an_equinox_model_fn_resumes_without_run_name(tmp_path):
    global MODEL
    xs, path, calls = data(24), tmp_path / "run.ckpt", []

    def stop(batch):  # the same model, batched; interrupted in its third batch
        if isinstance(batch, np.ndarray):
            if len(calls) == 2:
                raise KeyboardInterrupt
            calls.append(1)
        return jax.vmap(model_fn)(batch)

    clean = batchlab.run_batches(model_fn, xs, batch_size=4, progress=False)
    with pytest.raises(KeyboardInterrupt):
        batchlab.run_batches(
            stop,
            xs,
            batch_size=4,
            strategy="manual",
            run_name="m",
            checkpoint=tmp_path / "b.ckpt",
            progress=False,
        )
    # a per-item model fn: no run_name needed
    batchlab.run_batches(model_fn, xs[:8], batch_size=4, checkpoint=path, progress=False)
    resumed = batchlab.run_batches(model_fn, xs[:8], batch_size=2, checkpoint=path, progress=False)
    assert resumed.resumed_items == 8
    np.testing.assert_allclose(resumed.outputs, clean.outputs[:8], rtol=1e-6)
    old = MODEL
    MODEL = mlp(1)  # other weights: other outputs, refused, the global named
    try:
        with pytest.raises(
            batchlab.CheckpointError,
            match=r"fn changed since the journal was written",
        ):
            batchlab.run_batches(model_fn, xs[:8], batch_size=4, checkpoint=path, progress=False)
    finally:
        MODEL = old


def test_the_plan_of_a_closed_over_model_equals_its_params_as_arguments():
    params, static = eqx.partition(MODEL, eqx.is_array)

    def with_params(x, p):
        return eqx.combine(p, static)(x)

    spec = jax.ShapeDtypeStruct((D,), jnp.float32)
    p_spec = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    for b in (1, 9, 128):
        closed = batch_planner(jax.vmap(MODEL))(batch_spec(spec, b))
        args = batch_planner(jax.vmap(with_params, in_axes=(0, None)))(batch_spec(spec, b), p_spec)
        assert closed == args
    budget = 256 * 1024
    r = batchlab.max_batch_size(MODEL, spec, budget_bytes=budget)
    r_args = batchlab.max_batch_size(
        with_params, (spec, params), in_axes=(0, None), budget_bytes=budget
    )
    assert int(r) == int(r_args) > 0


def per_item_step(opt):
    """One optax step on one item's gradient (a per-item fit, as in meta-learning)."""

    def step(x):
        grads = jax.grad(lambda w: jnp.sum((x @ w) ** 2))(jnp.ones((D, 2)))
        updates, _ = opt.update(grads, opt.init(grads))
        return updates

    return step


def test_an_optax_transform_is_part_of_the_fingerprint(tmp_path):
    path, xs = tmp_path / "run.ckpt", data(6)
    r = batchlab.run_batches(
        per_item_step(optax.adam(1e-3)), xs, batch_size=3, checkpoint=path, progress=False
    )
    assert r.complete and r.outputs.shape == (6, D, 2)
    again = batchlab.run_batches(
        per_item_step(optax.adam(1e-3)), xs, batch_size=2, checkpoint=path, progress=False
    )
    assert again.resumed_items == 6  # an equal optimizer resumes
    with pytest.raises(batchlab.CheckpointError, match=r"different run \(fn changed"):
        batchlab.run_batches(
            per_item_step(optax.adam(1e-2)), xs, batch_size=3, checkpoint=path, progress=False
        )


def test_a_flax_nnx_module_is_fingerprinted_like_an_equinox_one(tmp_path):
    """Issue 34: a closed-over nnx module was refused ("PytreeState": a node without children
    read as an unhashable leaf) unless run_name was given; now it resumes, and other weights
    (values or shapes) are refused."""
    nnx = pytest.importorskip("flax.nnx")
    xs, path = data(8), tmp_path / "run.ckpt"
    model = nnx.Linear(D, 3, rngs=nnx.Rngs(0))

    def fn(x):
        return model(x).sum()

    first = batchlab.run_batches(fn, xs, batch_size=4, checkpoint=path, progress=False)
    model = nnx.Linear(D, 3, rngs=nnx.Rngs(0))  # another object, the same weights: resumes
    again = batchlab.run_batches(fn, xs, batch_size=4, checkpoint=path, progress=False)
    assert again.resumed_items == 8 and np.array_equal(again.outputs, first.outputs)
    model = nnx.Linear(D, 3, rngs=nnx.Rngs(1))
    with pytest.raises(
        batchlab.CheckpointError,
        match=r"fn changed since the journal was written",
    ):
        batchlab.run_batches(fn, xs, batch_size=4, checkpoint=path, progress=False)
    model = nnx.Linear(D, 4, rngs=nnx.Rngs(0))
    with pytest.raises(batchlab.CheckpointError, match=r"fn changed since the journal was written"):
        batchlab.run_batches(fn, xs, batch_size=4, checkpoint=path, progress=False)
