"""batch(): every strategy gives jax.vmap's answer, for every batch size and axis spec."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close

import batchlab
from batchlab import BatchAxisError, batch, count_compiles

ALL = [
    ("loop", None),
    ("vmap", None),
    ("map", None),
    ("map", 3),
    ("chunked", 1),
    ("chunked", 3),
    ("chunked", 4),
    ("chunked", 64),
]


def mlp(x, p):
    return jnp.tanh(x @ p["w"]) + p["b"]


def params(dtype=jnp.float32):
    k1, k2 = jax.random.split(jax.random.key(1))
    return {"w": jax.random.normal(k1, (4, 3), dtype), "b": jax.random.normal(k2, (3,), dtype)}


@pytest.mark.parametrize("strategy,batch_size", ALL)
@pytest.mark.parametrize("n", [1, 4, 7])
def test_matches_vmap_across_batch_sizes(strategy, batch_size, n, maybe_jit):
    x = jax.random.normal(jax.random.key(0), (n, 4))
    p = params()
    f = maybe_jit(batch(mlp, strategy=strategy, batch_size=batch_size, in_axes=(0, None)))
    assert_close(f(x, p), jax.vmap(mlp, (0, None))(x, p))


@pytest.mark.parametrize("strategy,batch_size", ALL)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.int32])
def test_dtypes(strategy, batch_size, dtype):
    x = (jnp.arange(35).reshape(7, 5) % 4).astype(dtype)
    f = lambda v: v * 2 + v.sum()  # noqa: E731
    assert_close(batch(f, strategy=strategy, batch_size=batch_size)(x), jax.vmap(f)(x))


@pytest.mark.parametrize("strategy,batch_size", ALL)
def test_empty_batch(strategy, batch_size):
    x = jnp.ones((0, 4))
    out = batch(mlp, strategy=strategy, batch_size=batch_size, in_axes=(0, None))(x, params())
    assert out.shape == (0, 3)


@pytest.mark.parametrize("strategy,batch_size", ALL)
@pytest.mark.parametrize(
    "in_axes,out_axes",
    [
        ((1, None), 0),
        ((-1, None), -1),
        (({"a": 0, "b": 1}, None), {"y": 1, "s": 0}),
        ((0, 0), {"y": 0, "s": None}),
        (0, (0,)),
    ],
)
def test_pytrees_and_axes(strategy, batch_size, in_axes, out_axes, maybe_jit):
    key = jax.random.key(2)
    if in_axes == (1, None) or in_axes == (-1, None):
        args = (jax.random.normal(key, (3, 5)), jnp.float32(2.0))
        fn = lambda x, c: {"y": x * c, "s": x.sum()}  # noqa: E731
        if in_axes == (-1, None):
            out_axes = {"y": -1, "s": 0}
    elif isinstance(in_axes, tuple) and isinstance(in_axes[0], dict):
        args = ({"a": jax.random.normal(key, (5, 2)), "b": jnp.ones((2, 5))}, jnp.ones(2))
        fn = lambda d, w: {"y": d["a"] * d["b"] * w, "s": (d["a"] @ w)}  # noqa: E731
    elif in_axes == (0, 0):
        args = (jax.random.normal(key, (5, 2)), jnp.ones((5, 2)))
        fn = lambda x, y: {"y": x + y, "s": jnp.float32(1.0)}  # noqa: E731
    else:
        args = ((jax.random.normal(key, (5, 2)), jnp.ones((5,))),)
        fn = lambda t: (t[0].sum() + t[1],)  # noqa: E731
    expected = jax.vmap(fn, in_axes, out_axes)(*args)
    got = maybe_jit(
        batch(fn, strategy=strategy, batch_size=batch_size, in_axes=in_axes, out_axes=out_axes)
    )(*args)
    assert_close(got, expected)


def test_manual_is_used_as_written():
    x = jnp.ones((6, 4))
    manual = batch(lambda xs, p: jnp.tanh(xs @ p["w"]) + p["b"][None], strategy="manual")
    assert_close(manual(x, params()), jax.vmap(mlp, (0, None))(x, params()))
    assert manual.strategy == "manual" and manual.__name__ == "manual(<lambda>)"


def test_chunked_does_not_recompile_per_call():
    f = batch(lambda v: v * 2, strategy="chunked", batch_size=4)
    x = jnp.ones((10, 3))
    f(x)
    with count_compiles(match="chunked") as c:
        for _ in range(3):
            f(x)
    assert c.count == 0


def test_chunked_remainder_is_not_padded_to_a_full_batch():
    # XLA's plan for 10 items in chunks of 4 holds one chunk's temporaries, not 12 items
    fn = lambda x, w: jnp.tanh(x @ w) @ w.T  # noqa: E731
    w = jnp.ones((8, 256))
    x = jnp.ones((1000, 8))
    chunked = batchlab.memory_estimate(
        batch(fn, strategy="chunked", batch_size=125, in_axes=(0, None)), x, w
    )
    full = batchlab.memory_estimate(batch(fn, in_axes=(0, None)), x, w)
    assert chunked.temp_bytes < full.temp_bytes / 4


def test_errors():
    with pytest.raises(ValueError, match="`strategy` must be one of"):
        batch(mlp, strategy="pmap")
    with pytest.raises(ValueError, match="`batch_size` is required for strategy='chunked'"):
        batch(mlp, strategy="chunked")
    with pytest.raises(ValueError, match="`batch_size` must be at least 1"):
        batch(mlp, strategy="chunked", batch_size=0)
    with pytest.raises(TypeError, match="`batch_size` must be a positive int"):
        batch(mlp, strategy="chunked", batch_size=2.5)
    with pytest.raises(ValueError, match="`batch_size` only applies to"):
        batch(mlp, strategy="vmap", batch_size=4)
    with pytest.raises(ValueError, match="in_axes/out_axes do not apply"):
        batch(mlp, strategy="manual", in_axes=(0, None))
    with pytest.raises(TypeError, match="must be a function"):
        batch(3)
    f = batch(mlp, strategy="chunked", batch_size=2)
    with pytest.raises(TypeError, match="positionally"):
        f(x=jnp.ones((3, 4)), p=params())
    with pytest.raises(
        BatchAxisError, match="`p\\['b'\\]` has 3 along axis 0 but the batch has 5 items"
    ):
        f(jnp.ones((5, 4)), params())


@pytest.mark.parametrize("strategy,batch_size", [("loop", None), ("chunked", 2)])
def test_out_axes_none_for_batched_output_is_an_error(strategy, batch_size):
    f = batch(lambda x: x * 2, strategy=strategy, batch_size=batch_size, out_axes=None)
    with pytest.raises(BatchAxisError, match="out_axes gives None"):
        f(jnp.ones((3, 2)))


def test_numpy_inputs():
    x = np.arange(12.0, dtype=np.float32).reshape(6, 2)
    assert_close(batch(jnp.sum, strategy="chunked", batch_size=4)(x), x.sum(1))
