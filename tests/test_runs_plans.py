"""Planned bytes with closed-over weights equal the plan with them as arguments (issue 26)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import batchlab
from batchlab.runs.planning import batch_planner, batch_spec, compile_program

D = 64
W = jax.random.normal(jax.random.key(0), (D, D), jnp.float32) / D  # not constant-foldable
ITEM = jax.ShapeDtypeStruct((D,), jnp.float32)
W_SPEC = jax.ShapeDtypeStruct(W.shape, W.dtype)


def closed(x):
    return jnp.tanh(jnp.tanh(x @ W) @ W)


def with_w(x, w):
    return jnp.tanh(jnp.tanh(x @ w) @ w)


@pytest.mark.parametrize("size", [1, 7, 64, 300])
@pytest.mark.parametrize(
    "strategy, chunk",
    [("vmap", None), ("map", None), ("chunked", 16)],
    ids=["vmap", "map", "chunked"],
)
@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit], ids=["plain", "jitted"])
def test_closed_over_weights_plan_as_arguments(size, strategy, chunk, wrap):
    f_closed = batchlab.batch(
        batchlab.runs.planning.unjit(wrap(closed)), strategy=strategy, chunk_size=chunk
    )
    f_args = batchlab.batch(with_w, strategy=strategy, chunk_size=chunk, in_axes=(0, None))
    plan_closed = batch_planner(f_closed)(batch_spec(ITEM, size))
    plan_args = batch_planner(f_args)(batch_spec(ITEM, size), W_SPEC)
    assert plan_closed == plan_args
    assert plan_closed >= W.nbytes  # the weights are in the plan


def test_plan_of_a_whole_batch_jitted_fn_with_closed_weights():
    batched = jax.jit(jax.vmap(closed))
    plan = batch_planner(batched)(batch_spec(ITEM, 32))
    args = batch_planner(jax.jit(jax.vmap(with_w, in_axes=(0, None))))(batch_spec(ITEM, 32), W_SPEC)
    assert plan == args


def test_hoisted_program_computes_what_the_closure_computes():
    xs = jax.random.normal(jax.random.key(1), (12, D))
    program = compile_program(jax.vmap(closed), batch_spec(ITEM, 12))
    assert program.hoisted and program.const_bytes == W.nbytes
    np.testing.assert_allclose(program(xs), jax.vmap(closed)(xs), rtol=1e-6, atol=1e-6)
    plain = compile_program(jax.vmap(lambda x: jnp.tanh(x) * 2), batch_spec(ITEM, 12))
    assert not plain.hoisted and plain.consts == ()  # nothing closed over: lowered as before


@pytest.mark.parametrize("budget_kib", [96, 160, 400])
def test_max_batch_size_closed_equals_shared_argument(budget_kib):
    budget = budget_kib * 1024
    r_closed = batchlab.max_batch_size(closed, ITEM, budget_bytes=budget)
    r_args = batchlab.max_batch_size(with_w, (ITEM, W_SPEC), in_axes=(0, None), budget_bytes=budget)
    assert int(r_closed) == int(r_args) >= 1
    assert r_closed.planned_bytes == r_args.planned_bytes <= budget
    # the answer holds once the weights are an argument (the bug: closed-over weights planned low)
    plan_as_args = batch_planner(jax.vmap(with_w, in_axes=(0, None)))(
        batch_spec(ITEM, int(r_closed)), W_SPEC
    )
    assert plan_as_args <= budget


def test_shared_argument_may_be_a_real_array_and_a_pytree():
    params = {"w": W, "b": jnp.zeros(D)}
    r = batchlab.max_batch_size(
        lambda x, p: jnp.tanh(x @ p["w"] + p["b"]),
        (ITEM, params),
        in_axes=(0, None),
        budget_bytes=64 * 1024,
    )
    per_item = 2 * D * 4  # one item in, one out
    assert int(r) == (64 * 1024 - W.nbytes - D * 4) // per_item


@pytest.mark.parametrize(
    "example, in_axes, match",
    [
        ((ITEM, W_SPEC), (0, 1), r"`in_axes` must be 0 or a tuple of 0 \(batched\) and None"),
        ((ITEM, W_SPEC), [0, None], r"`in_axes` must be 0 or a tuple"),
        (
            ITEM,
            (0, None),
            r"`example_item` must be the tuple of fn's 2 arguments.*got ShapeDtypeStruct",
        ),
        ((ITEM,), (0, None), r"`example_item` must be the tuple of fn's 2 arguments.*a tuple of 1"),
        ((ITEM, W_SPEC), (None, None), r"`in_axes` must batch at least one argument"),
    ],
)
def test_bad_in_axes(example, in_axes, match):
    with pytest.raises(ValueError, match=match):
        batchlab.max_batch_size(with_w, example, in_axes=in_axes, budget_bytes=2**20)


def test_run_batches_budget_counts_closed_over_weights():
    xs = np.asarray(jax.random.normal(jax.random.key(2), (200, D)))
    budget = 64 * 1024
    fits = int(
        batchlab.max_batch_size(with_w, (ITEM, W_SPEC), in_axes=(0, None), budget_bytes=budget)
    )
    assert fits < 100
    r = batchlab.run_batches(closed, xs, budget_bytes=budget, progress=False)  # batch_size="auto"
    assert r.complete and max(r.batch_sizes) == fits and r.retries == 0
    over = batchlab.run_batches(
        closed, xs, batch_size=fits + 1, budget_bytes=budget, progress=False
    )
    assert over.batches[0].status.startswith("over budget") and max(over.batch_sizes) <= fits
    np.testing.assert_allclose(r.outputs, jax.vmap(closed)(xs), rtol=1e-5, atol=1e-6)
