"""batch(): every strategy gives jax.vmap's answer, for every batch size and axis spec."""

from __future__ import annotations

import functools

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
    ("host", 1),
    ("host", 3),
    ("host", 64),
]


def wrap(maybe_jit, strategy, f):
    """maybe_jit(f), except that strategy='host' under jit must refuse (dispatched from Python)."""
    if strategy == "host" and maybe_jit is jax.jit:

        def refused(*args):
            with pytest.raises(TypeError, match="strategy='host' dispatches one compiled program"):
                jax.jit(f)(*args)
            return f(*args)

        return refused
    return maybe_jit(f)


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
    f = wrap(
        maybe_jit, strategy, batch(mlp, strategy=strategy, chunk_size=batch_size, in_axes=(0, None))
    )
    assert_close(f(x, p), jax.vmap(mlp, (0, None))(x, p))


@pytest.mark.parametrize("strategy,batch_size", ALL)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.int32])
def test_dtypes(strategy, batch_size, dtype):
    x = (jnp.arange(35).reshape(7, 5) % 4).astype(dtype)
    f = lambda v: v * 2 + v.sum()  # noqa: E731
    assert_close(batch(f, strategy=strategy, chunk_size=batch_size)(x), jax.vmap(f)(x))


@pytest.mark.parametrize("strategy,batch_size", ALL)
def test_empty_batch(strategy, batch_size):
    x = jnp.ones((0, 4))
    out = batch(mlp, strategy=strategy, chunk_size=batch_size, in_axes=(0, None))(x, params())
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
    got = wrap(
        maybe_jit,
        strategy,
        batch(fn, strategy=strategy, chunk_size=batch_size, in_axes=in_axes, out_axes=out_axes),
    )(*args)
    assert_close(got, expected)


def test_manual_is_refused():
    with pytest.raises(ValueError, match=r"`strategy` must be one of"):
        batch(mlp, strategy="manual")


def test_chunked_does_not_recompile_per_call():
    f = batch(lambda v: v * 2, strategy="chunked", chunk_size=4)
    x = jnp.ones((10, 3))
    f(x)
    with count_compiles() as c:  # any compile: the chunked program is named lax_map
        for _ in range(3):
            f(x)
    assert c.count == 0


def test_chunked_remainder_is_not_padded_to_a_full_batch():
    # XLA's plan for 10 items in chunks of 4 holds one chunk's temporaries, not 12 items
    fn = lambda x, w: jnp.tanh(x @ w) @ w.T  # noqa: E731
    w = jnp.ones((8, 256))
    x = jnp.ones((1000, 8))
    chunked = batchlab.memory_estimate(
        batch(fn, strategy="chunked", chunk_size=125, in_axes=(0, None)), x, w
    )
    full = batchlab.memory_estimate(batch(fn, in_axes=(0, None)), x, w)
    assert chunked.temp_bytes < full.temp_bytes / 4


def test_errors():
    with pytest.raises(ValueError, match="`strategy` must be one of"):
        batch(mlp, strategy="pmap")
    with pytest.raises(ValueError, match="`chunk_size` is required for strategy='chunked'"):
        batch(mlp, strategy="chunked")
    with pytest.raises(ValueError, match="`chunk_size` must be at least 1"):
        batch(mlp, strategy="chunked", chunk_size=0)
    with pytest.raises(TypeError, match="`chunk_size` must be a positive int"):
        batch(mlp, strategy="chunked", chunk_size=2.5)
    with pytest.raises(ValueError, match="`chunk_size` is required for strategy='host'"):
        batch(mlp, strategy="host")
    with pytest.raises(
        ValueError,
        match=r"`chunk_size` only applies to .* chunk_size=4 with strategy='vmap'; drop it",
    ):
        batch(mlp, strategy="vmap", chunk_size=4)
    with pytest.raises(TypeError, match="must be a function"):
        batch(3)
    f = batch(mlp, strategy="chunked", chunk_size=2)
    with pytest.raises(ValueError, match=r"vmap got inconsistent sizes") as e:
        f(x=jnp.ones((3, 4)), p=params())
    assert not isinstance(e.value, BatchAxisError)  # JAX's own error, unchanged
    with pytest.raises(ValueError, match=r"size 3: axis 0 of argument p\['b'\] of type"):
        f(jnp.ones((5, 4)), params())


@pytest.mark.parametrize("strategy,batch_size", ALL)
def test_out_axes_none_for_batched_output_is_vmaps_error(strategy, batch_size):
    f = batch(lambda x: x * 2, strategy=strategy, chunk_size=batch_size, out_axes=None)
    with pytest.raises(ValueError, match="got axis spec None but output was batched"):
        f(jnp.ones((3, 2)))


def test_numpy_inputs():
    x = np.arange(12.0, dtype=np.float32).reshape(6, 2)
    assert_close(batch(jnp.sum, strategy="chunked", chunk_size=4)(x), x.sum(1))


# ---- issue 15: a drop-in for jax.vmap ---------------------------------------------------------


@pytest.mark.parametrize("strategy,batch_size", ALL)
def test_keyword_arguments_are_mapped_on_axis_0(strategy, batch_size):
    x, y = jnp.arange(10.0).reshape(5, 2), jnp.ones((5, 2))
    f = lambda x, y: x * y.sum()  # noqa: E731
    got = batch(f, strategy=strategy, chunk_size=batch_size)(x, y=y)
    assert_close(got, jax.vmap(f)(x, y=y))


@pytest.mark.parametrize("strategy,batch_size", ALL)
def test_tuples_with_per_leaf_specs_are_not_ragged(strategy, batch_size):
    p = (jnp.arange(15.0).reshape(5, 3), jnp.ones(3))
    f = lambda p: p[0] * p[1]  # noqa: E731
    got = batch(f, strategy=strategy, chunk_size=batch_size, in_axes=((0, None),))(p)
    assert_close(got, jax.vmap(f, in_axes=((0, None),))(p))
    q = (jnp.ones((3, 5)), jnp.ones((4, 5)))
    g = lambda q: q[0].sum() + q[1].sum()  # noqa: E731
    assert_close(
        batch(g, strategy=strategy, chunk_size=batch_size, in_axes=1)(q), jax.vmap(g, 1)(q)
    )


@pytest.mark.parametrize("strategy,batch_size", ALL)
def test_unmapped_values_reach_fn_untouched_as_under_jax_vmap(strategy, batch_size):
    """A Python number, a numpy array, a string: what jax.vmap hands fn, fn gets, unchanged."""
    x = jnp.arange(12.0).reshape(4, 3)
    seen = []

    def f(x, c, w, name):
        seen.append((type(c), type(w), name))
        return x * c + w.sum() if name == "abc" else x

    b = batch(f, strategy=strategy, chunk_size=batch_size, in_axes=(0, None, None, None))
    want = jax.vmap(f, (0, None, None, None))(x, 2.0, np.ones(3), "abc")
    assert_close(b(x, 2.0, np.ones(3), "abc"), want)
    assert set(seen) == {(float, np.ndarray, "abc")}
    assert_close(b(x, 3.0, np.ones(3), "abc"), x * 3.0 + 3.0)  # a new value: a new program


def test_axis_spec_errors_are_jax_vmaps_own_raised_when_batch_is_built():
    """A top-level dict, a float axis, a str, a bool: refused by jax.vmap itself, with its words."""
    for spec in ({"x": 0}, (0.5, None), "a", True):
        with pytest.raises(TypeError) as want:
            jax.vmap(mlp, in_axes=spec)
        for strategy, batch_size in ALL:
            with pytest.raises(TypeError) as got:
                batch(mlp, strategy=strategy, chunk_size=batch_size, in_axes=spec)
            assert str(got.value).startswith(str(want.value)), (str(got.value), str(want.value))
            assert f"(`in_axes`={spec!r}, `out_axes`=0)" in str(got.value)
    with pytest.raises(TypeError, match=r"^vmap out_axes must be an int, None, or \(nested\)"):
        batch(mlp, out_axes="a")


@pytest.mark.parametrize("strategy,batch_size", ALL)
def test_bad_out_axes_give_vmaps_errors(strategy, batch_size):
    f = lambda x: (x, x.sum())  # noqa: E731
    x = jnp.ones((5, 3))
    with pytest.raises(ValueError, match=r"`out_axes`=\(3, 0\) is not an axis.*out of bounds"):
        batch(f, strategy=strategy, chunk_size=batch_size, out_axes=(3, 0))(x)
    with pytest.raises(ValueError, match="tree prefix"):
        batch(f, strategy=strategy, chunk_size=batch_size, out_axes=(0, 0, 0))(x)


EVERY = [
    ("loop", None),
    ("vmap", None),
    ("map", None),
    ("chunked", 2),
    ("host", 2),
]


@pytest.mark.parametrize("strategy,chunk_size", EVERY)
def test_keeps_name_qualname_module_and_wrapped_as_vmap_does(strategy, chunk_size):
    def scale(x):
        return 2 * x

    b, v = batch(scale, strategy=strategy, chunk_size=chunk_size), jax.vmap(scale)
    for attr in ("__name__", "__qualname__", "__module__"):
        assert getattr(b, attr) == getattr(v, attr) == getattr(scale, attr), attr
    assert b.__wrapped__ is v.__wrapped__ is scale
    assert b.fn is scale and b.strategy == strategy and b.chunk_size == chunk_size
    assert b.__doc__ == v.__doc__ and b.__doc__.startswith("Vectorized version of scale. ")


# ---- one call convention: every strategy runs compiled code --------------------------------


def three_ops(x, w):
    return jnp.tanh(x @ w).sum(-1) * 2.0  # dot, tanh, reduce, multiply: many eager dispatches


@pytest.mark.parametrize("strategy,chunk_size", EVERY)
def test_every_strategy_compiles_on_the_first_call_and_never_again(strategy, chunk_size):
    """The convention (batch's docstring): a call runs jitted programs, none op by op.

    A fresh ``batch`` on fresh shapes compiles exactly what the strategy dispatches:
    ONE program for vmap, map and chunked (an eager ``jax.vmap`` would compile one
    per primitive), the per-item program (+ the stack, and the item slice JAX caches per
    shape) for loop, the chunk programs (+ the
    split and the concatenation) for host; a second call with the same shapes compiles
    nothing, under every strategy.
    """
    n = 7 + EVERY.index((strategy, chunk_size))  # shapes no other test compiled
    x, w = jnp.ones((n, 5)), jnp.ones((5, n + 1))
    b = batch(three_ops, strategy=strategy, chunk_size=chunk_size, in_axes=(0, None))
    with count_compiles() as first:
        out = jax.block_until_ready(b(x, w))
    with count_compiles() as again:
        jax.block_until_ready(b(x, w))
    assert_close(out, jax.vmap(three_ops, (0, None))(x, w))
    assert again.count == 0, again.names
    if strategy in ("vmap", "map", "chunked"):
        assert first.count == 1, first.names  # one program for the whole batch
    elif strategy == "host":
        plan = b.plan(x, w)
        assert plan.programs == 2 and first.count <= plan.programs + 2, first.names
    else:  # the item step and the stack; in a fresh process also the eager item slice
        eager = {"jit(dynamic_slice)", "jit(squeeze)", "jit(_moveaxis)"}  # cached per shape
        assert "jit(<lambda>)" in first.names, first.names
        assert set(first.names) <= {"jit(<lambda>)", "jit(stack)", *eager}, first.names


def test_batch_is_jit_of_vmap_not_an_eager_vmap():
    x, w = jnp.ones((13, 11)), jnp.ones((11, 2))  # shapes no other test uses
    with count_compiles() as eager:  # what the convention rules out: one program per primitive
        jax.block_until_ready(jax.vmap(three_ops, (0, None))(x, w))
    assert eager.count > 1, eager.names
    f = batch(three_ops, in_axes=(0, None))
    # one jitted program: its jaxpr under make_jaxpr is one pjit call
    eqns = jax.make_jaxpr(f)(x, w).eqns
    assert [e.primitive.name for e in eqns] in (["pjit"], ["jit"]), eqns
    assert_close(f(x, w), jax.jit(jax.vmap(three_ops, (0, None)))(x, w))


# ---- the host strategy ------------------------------------------------------------------------


def outer(x):
    return jnp.tanh(jnp.outer(x, x)) @ x


def test_host_compiles_one_program_for_full_chunks_and_one_for_the_remainder():
    f = batch(outer, strategy="host", chunk_size=8)
    x = jax.random.normal(jax.random.key(3), (35, 16))
    with count_compiles(match="step") as c:
        out = f(x)
    assert c.count == 2  # chunks of 8 (4 of them) and the remainder of 3
    assert_close(out, jax.vmap(outer)(x))
    with count_compiles(match="step") as again:
        f(x), f(x[:19])  # 2 full chunks + a remainder of 3: the same two programs
    assert again.count == 0


def test_host_plan_counts_and_memory():
    x = jnp.ones((1000, 64))
    p = batch(outer, strategy="host", chunk_size=128).plan(x)
    assert (p.full_chunks, p.remainder, p.programs) == (7, 104, 2)
    assert p.dispatches == 1 + 8 + 1  # 1 split into chunks, 8 steps, 1 concatenation
    vmap_temp = batchlab.memory_estimate(batch(outer), x).temp_bytes
    assert p.temp_bytes <= vmap_temp / 4  # one chunk's (128, 64, 64) intermediate, not the batch's
    out = 1000 * 64 * 4
    assert (p.input_copy_bytes, p.chunk_output_bytes) == (out, out)
    assert p.extra_bytes == p.temp_bytes + 2 * out
    one = batch(outer, strategy="host", chunk_size=2000).plan(x)
    assert (one.programs, one.dispatches, one.full_chunks, one.remainder) == (1, 1, 0, 1000)
    assert one.extra_bytes == one.temp_bytes
    assert "dispatches per call=10" in repr(p) and "<table" in p._repr_html_()
    assert "chunks=1000 items: 7 full of 128 + 1 remainder of 104" in repr(p)
    assert "full of 2000 + 1 remainder of 1000" in repr(one)
    kw = batch(outer, strategy="host", chunk_size=128).plan(x=x)  # keywords are planned alike
    assert (kw.full_chunks, kw.remainder, kw.dispatches) == (7, 104, 10)
    with pytest.raises(ValueError, match=r"along axis 1, which implies that its rank should"):
        batch(outer, strategy="host", chunk_size=2, in_axes=1).plan(jnp.ones(3))
    with pytest.raises(
        ValueError,
        match=r"`plan` describes strategy='host' on a non-empty batch; "
        r"this is strategy='vmap' on 1000",
    ):
        batch(outer).plan(x)
    with pytest.raises(
        ValueError,
        match=r"`plan` describes strategy='host' on a non-empty batch; "
        r"this is strategy='host' on 0 items",
    ):
        batch(outer, strategy="host", chunk_size=2).plan(jnp.ones((0, 3)))


def test_host_plan_counts_closed_over_arrays_as_vmaps_plan_does():
    w = jnp.arange(64 * 32, dtype=jnp.float32).reshape(64, 32)  # closed over, not an argument
    x = jnp.ones((100, 64))

    def layer(r):
        return jnp.tanh(r @ w)

    host = batch(layer, strategy="host", chunk_size=32).plan(x)
    assert host.argument_bytes == x.nbytes + w.nbytes
    assert host.argument_bytes == batchlab.memory_estimate(jax.vmap(layer), x).argument_bytes
    assert batch(jnp.tanh, strategy="host", chunk_size=32).plan(x).argument_bytes == x.nbytes


def test_host_refuses_an_outer_jit():
    f = batch(outer, strategy="host", chunk_size=4)
    with pytest.raises(
        TypeError,
        match=r"strategy='host' dispatches one compiled program per chunk.*use strategy='chunked' "
        r"with the same chunk_size \(the same chunks, as one lax.map inside the program\) or "
        r"strategy='vmap'\.",
    ):
        jax.jit(f)(jnp.ones((10, 3)))


def test_loop_is_eager_one_dispatch_per_item():
    f = batch(outer, strategy="loop")
    x = jnp.ones((6, 4))
    with count_compiles(match="lambda") as c:
        f(x)
        f(x)
    assert c.count == 1  # one per-item program, called 6 times per call (not unrolled)


def test_a_function_without_a_name_is_named_by_what_it_wraps():
    def scale(x, k):
        return k * x

    b = batch(functools.partial(scale, k=3), strategy="loop")
    assert b.__name__ == b.__qualname__ == "scale"
    assert b(jnp.ones(2)).tolist() == [3.0, 3.0]
