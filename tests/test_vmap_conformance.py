"""JAX's own vmap tests, run against ``jax.vmap`` and ``batch`` under every strategy (issue 48).

A focused subset of jax 0.10.2's ``tests/batching_test.py`` and ``tests/api_test.py``
(https://github.com/jax-ml/jax, tag jax-v0.10.2, Apache-2.0; test names kept in the case
names), plus the argument kinds a user writes that jax.vmap passes through untouched. Each case
takes a ``vmap``-like ``(fn, in_axes=0, out_axes=0, **options)`` and returns what it computed.
A case run with ``batch(..., strategy=s)`` must give what it gives with ``jax.vmap``: the same
values and shapes, or the same refusal (the same exception type, JAX's own message inside).
Collectives (``axis_name``, ``psum``) and ``strategy='host'`` under an outer trace are refused
with one sentence, listed in UNSUPPORTED and counted.
"""

from __future__ import annotations

import collections
import functools
import re
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from batchlab import batch

RUNNERS = {
    "jax.vmap": jax.vmap,
    **{
        f"{s}-{k}": partial(batch, strategy=s, chunk_size=k)
        for s, k in [("loop", None), ("vmap", None), ("map", None), ("chunked", 2), ("host", 2)]
    },
}


def _wrap(runner):
    """``runner(fn, in_axes, out_axes, **options)`` with jax.vmap's positional signature."""

    def vmap(fn, in_axes=0, out_axes=0, **options):
        return runner(fn, in_axes=in_axes, out_axes=out_axes, **options)

    return vmap


CASES = {}


def case(fn) -> None:
    """Registers a case under its JAX test name (and hides it from pytest's collection)."""
    CASES[fn.__name__] = fn


def rng(*shape):
    return np.random.RandomState(0).randn(*shape).astype(np.float32)


# ---- jax 0.10.2, tests/batching_test.py -------------------------------------------------------


@case
def testConstantFunction(vmap):
    return vmap(lambda x: 3)(np.ones(4))


@case
def testNestedBatchingMatMat(vmap):
    matvec = vmap(jnp.vdot, in_axes=(0, None))
    matmat = vmap(matvec, in_axes=(None, 1), out_axes=1)
    return matmat(rng(4, 3), rng(3, 2))


@case
def testPerExampleGradients(vmap):
    def predict(params, inputs):
        for w, b in params:
            outputs = jnp.dot(w, inputs) + b
            inputs = jnp.tanh(outputs)
        return outputs

    def loss(params, data):
        inputs, targets = data
        return jnp.sum((predict(params, inputs) - targets) ** 2)

    params = [(rng(m, n), rng(m)) for m, n in zip([2, 4], [3, 2], strict=True)]
    return vmap(partial(jax.grad(loss), params))((rng(5, 3), rng(5, 4)))


@case
def testSliceLaxAndNumpy(vmap):
    return vmap(lambda x: lax.slice(x, (2,), (4,)))(rng(5, 10)), vmap(lambda x: x[:, 2])(
        rng(10, 5, 3, 7)
    )


@case
def testRevLaxAndNumpy(vmap):
    x, y = rng(2, 3), rng(3, 2, 4)
    rev = lambda x: lax.rev(x, [0])  # noqa: E731
    flip = lambda x: x[:, ::-1]  # noqa: E731
    return vmap(rev)(x), vmap(rev, (1,), 1)(x), vmap(flip, (1,), 1)(y), vmap(flip, (2,), 2)(y)


@case
def testNpMaximumAndGtrThan(vmap):
    x = rng(10, 5, 3, 7)
    return vmap(lambda x: jnp.maximum(x, 0.0))(x), vmap(lambda x: x > 1.0)(x)


@case
def testDotGeneral(vmap):
    fun = lambda x, y: lax.dot_general(x, y, [((2,), (1,)), ((0,), (0,))])  # noqa: E731
    vec = lambda x, y: lax.dot_general(x, y, [((0,), (0,)), ((), ())])  # noqa: E731
    return (
        vmap(fun)(rng(10, 3, 4, 5), rng(10, 3, 5, 6)),
        vmap(fun, in_axes=(2, 1))(rng(3, 4, 10, 5), rng(3, 10, 5, 6)),
        vmap(fun, in_axes=(3, None))(rng(3, 4, 5, 10), rng(3, 5, 6)),
        vmap(fun, in_axes=(None, 2))(rng(3, 4, 5), rng(3, 5, 10, 6)),
        vmap(vec, in_axes=(None, 1))(rng(4), rng(4, 10)),
    )


@case
def testDot234(vmap):
    return (
        vmap(jnp.dot)(rng(10, 3), rng(10, 3)),
        vmap(jnp.dot, in_axes=(1, None))(rng(5, 8, 10), rng(10, 1)),
        vmap(jnp.dot, in_axes=(1, None))(rng(3, 2), rng(3)),
    )


@case
def testPadAndConcatenate(vmap):
    pad = lambda x: lax.pad(x, np.float32(0), [(1, 2, 1), (0, 1, 0)])  # noqa: E731
    cat = lambda *args: lax.concatenate(args, dimension=0)  # noqa: E731
    cat1 = lambda *args: lax.concatenate(args, dimension=1)  # noqa: E731
    return (
        vmap(pad)(rng(5, 10, 3)),
        vmap(cat, in_axes=(0, 1, None))(rng(10, 2, 3), rng(1, 10, 3), rng(4, 3)),
        vmap(cat1, in_axes=(0, None, 2))(rng(10, 2, 1), rng(2, 3), rng(2, 4, 10)),
    )


@case
def testAny(vmap):
    return vmap(jnp.any)(jnp.array([[True, False], [False, False]]))


@case
def testDynamicSlice(vmap):
    x, idx = jnp.arange(30).reshape((10, 3)), jnp.array([0, 1, 2, 1, 0] * 2)
    return (
        vmap(lambda x, i: x[i], in_axes=(0, None))(x, 1),  # a Python int, unmapped
        vmap(lambda x, i: x[i], in_axes=(0, 0))(x, idx),
        vmap(lambda x, i: x[i], in_axes=(None, 0))(jnp.arange(3), idx),
    )


@case
def testDynamicUpdateSlice(vmap):
    upd = lambda x, y, i: lax.dynamic_update_index_in_dim(x, y, i, axis=0)  # noqa: E731
    idx = np.array([0, 1, 2, 1, 0] * 2)
    return vmap(upd, in_axes=(0, 0, None))(rng(10, 3), rng(10), 1), vmap(upd, in_axes=(None, 0, 0))(
        rng(3), rng(10), idx
    )


@case
def testRandom(vmap):
    seeds = vmap(jax.random.PRNGKey)(np.arange(10))
    return vmap(partial(jax.random.normal, shape=(3, 2)))(seeds)


@case
def testSortKeyVal(vmap):
    k = np.arange(12)[::-1].reshape(3, 4)
    v = np.random.RandomState(0).permutation(12).reshape(3, 4)
    sort = partial(lax.sort_key_val, dimension=0)
    return (
        vmap(partial(lax.sort, dimension=0), (1,), 1)(v),
        vmap(sort, (0, 1))(k, v.T),
        vmap(sort, (None, 0))(k[0], v),
        vmap(sort, (1, None))(k.T, v[0]),
    )


@case
def testNumpyIndexing1(vmap):
    a = jnp.arange(2 * 3 * 4).reshape((2, 3, 4))
    return vmap(lambda a, ind: a[:, ind], (None, 0))(a, np.array([[0, 1], [2, 0]]))


@case
def testTransposePermutation(vmap):
    x = np.arange(6 * 3 * 4 * 5).reshape((3, 4, 6, 5))
    return vmap(lambda x: x + x.T)(x[:, :, 0, :4]), vmap(
        lambda x: jnp.transpose(x, (1, 2, 0)), in_axes=2
    )(x)


@case
def testEmptyTuples(vmap):
    return vmap(lambda x, _: x + 1)(np.array([0, 1]), ()), vmap(lambda x: (x + 1, ()))(
        np.array([0, 1])
    )


@case
def testIndexAddBatchedIndexesOnly(vmap):
    f = lambda x, idx, y: jnp.asarray(x).at[idx].add(y)  # noqa: E731
    return vmap(f, (None, 0, None))(np.zeros((10,)), np.arange(10), 1.0)


@case
def testIssue3883(vmap):
    xs = jnp.array([1, 2, 3, 4])
    return vmap(lambda x: lax.dynamic_slice(x, [], []))(xs), vmap(
        lambda x: lax.dynamic_update_slice(x, 7, [])
    )(xs)


@case
def testNegativeAxes(vmap):
    x = np.arange(3 * 4 * 5).reshape(3, 4, 5)
    ident = lambda y: y  # noqa: E731
    return (
        [vmap(jnp.sum, in_axes=a)(x) for a in (-3, -2, -1)],
        [vmap(ident, in_axes=0, out_axes=a)(x) for a in (-3, -2, -1)],
        vmap(lambda *xs: xs, in_axes=(0, None), out_axes=(0, -1))(np.arange(5), 7)[1],
    )


@case
def testNegativeAxes_in_axes_error(vmap):
    return vmap(jnp.sum, in_axes=-4)(np.ones((3, 4, 5)))


@case
def testNegativeAxes_out_axes_error(vmap):
    return vmap(lambda y: y, in_axes=0, out_axes=-4)(np.ones((3, 4, 5)))


@case
def testNegativeAxes_unmapped_out_axes_error(vmap):
    return vmap(lambda *xs: xs, in_axes=(0, None), out_axes=(0, -2))(np.arange(5), 7)


@case
def testVmapKwargs(vmap):
    f = lambda a, b: (2 * a, 3 * b)  # noqa: E731
    return vmap(f)(jnp.array([1]), jnp.array([2])), vmap(f)(a=jnp.array([1]), b=jnp.array([2]))


@case
def testNonJaxTypedOutput(vmap):
    return vmap(lambda x: "hello")(np.arange(5))


@case
def testAxisIndex(vmap):  # a collective: batch takes no axis_name
    return vmap(lambda x: x - lax.axis_index("i"), axis_name="i")(np.arange(10, dtype="int32"))


@case
def testCommAssocCollective_psum(vmap):  # a collective: batch takes no axis_name
    return vmap(lambda x: x - lax.psum(x, "i"), axis_name="i")(rng(3, 4))


# ---- jax 0.10.2, tests/api_test.py ------------------------------------------------------------


@case
def test_vmap_inconsistent_sizes_constructs_proper_error_message(vmap):
    return vmap(lambda x1, x2, g: g(x1, x2), (0, 0, None))(jnp.ones(2), jnp.ones(3), jnp.add)


@case
def test_vmap_inconsistent_sizes_constructs_proper_error_message_kwargs(vmap):
    f = lambda x1, x2, a3: x1 + x2 + a3  # noqa: E731
    return vmap(f)(jnp.ones(2), a3=jnp.ones(1), x2=jnp.ones(2))


@case
def test_vmap_inconsistent_sizes_constructs_proper_error_message_starargs(vmap):
    return vmap(lambda x, *args: x - sum(args))(jnp.ones(4), jnp.ones(2), jnp.ones(2))


@case
def test_vmap_preserves_docstr(vmap):
    def superfun(a):
        """Does things with stuff."""

    return vmap(superfun).__doc__, vmap(superfun).__name__


@case
def test_vmap_in_axes_list(vmap):
    dictionary = {"a": 5.0, "b": jnp.ones(2)}
    f = lambda dct, x, y: dct["a"] + dct["b"] + x + y  # noqa: E731
    x, y = jnp.zeros(3), jnp.arange(3.0)
    return vmap(f, (None, 0, 0))(dictionary, x, y), vmap(f, [None, 0, 0])(dictionary, x, y)


@case
def test_vmap_in_axes_non_tuple_error(vmap):
    return vmap(lambda x: x["a"], in_axes={"a": 0})


@case
def test_vmap_in_axes_wrong_length_tuple_error(vmap):
    return vmap(lambda x: x["a"], in_axes=(0, {"a": 0}))({"a": jnp.zeros((3, 3))})


@case
def test_vmap_in_axes_tree_prefix_error(vmap):
    return vmap(lambda x: x, in_axes=([0],))(jnp.ones(3))


@case
def test_vmap_in_axes_leaf_types(vmap):
    return vmap(lambda x: x, in_axes=(jnp.array([1.0, 2.0]),))(jnp.array([1.0, 2.0]))


@case
def test_vmap_out_axes_leaf_types(vmap):
    return vmap(lambda x: x, out_axes=(jnp.array([1.0, 2.0]),))(jnp.array([1.0, 2.0]))


@case
def test_vmap_unbatched_object_passthrough_issue_183(vmap):
    return vmap(lambda f, x: f(x), (None, 0))(lambda x: x + 1, jnp.arange(3))


@case
def test_vmap_mismatched_keyword(vmap):
    return vmap(lambda x, y: x + y)(jnp.array([1], "int32"), y=jnp.array([1, 2], "int32"))


def _issue_705(vmap, k):
    h = lambda a, b: jnp.sum(a) + jnp.sum(b)  # noqa: E731
    x, u = rng(10, 4), rng(10, 2)
    return [
        lambda: vmap(h, in_axes=(0, 1))(x, u),
        lambda: vmap(lambda x, y, z: None, in_axes=(0, 1, 0))(x, u, x),
        lambda: vmap(h, in_axes=(0, 1))(x, [u, u]),
        lambda: vmap(lambda x: x)(1.0),
        lambda: vmap(lambda x: x, in_axes=None)(jnp.array([1.0, 2.0])),
        lambda: vmap(lambda x: x, in_axes=1)(jnp.array([1.0, 2.0])),
        lambda: vmap(lambda x: x, in_axes=0, out_axes=(2, 3))(jnp.array([1.0, 2.0])),
        lambda: vmap(lambda x: x, out_axes=None)(jnp.array([1.0, 2.0])),
    ][k]()


for _k in range(8):
    CASES[f"test_vmap_mismatched_axis_sizes_error_message_issue_705_{_k}"] = partial(
        _issue_705, k=_k
    )


@case
def test_vmap_structured_in_axes(vmap):
    x, y, z = np.ones((6, 2, 3)), np.ones((3, 6, 4)), np.ones((4, 5, 6))
    point = collections.namedtuple("Point", ["x", "y"])

    def foo(tree_arg):
        x, (y, z) = tree_arg
        return jnp.dot(x, jnp.dot(y, z))

    def bar(tree_arg):
        x, dct = tree_arg
        return jnp.dot(x, jnp.dot(dct["a"], dct["b"]))

    ordered = collections.OrderedDict([("a", y), ("b", z)])
    return (
        vmap(foo, in_axes=((0, (1, 2)),))((x, (y, z))),
        vmap(foo, in_axes=((0, point(1, 2)),))((x, point(y, z))),
        vmap(bar, in_axes=((0, {"a": 1, "b": 2}),))((x, {"a": y, "b": z})),
        vmap(bar, in_axes=((0, collections.OrderedDict([("a", 1), ("b", 2)])),))((x, ordered)),
    )


@case
def test_vmap_in_axes_bool_error(vmap):
    return vmap(lambda x: x, in_axes=False)(jnp.zeros(3))


@case
def test_vmap_empty_arguments(vmap):
    return vmap(lambda x: x)({})


@case
def test_vmap_unmapped_last(vmap):
    return vmap(lambda x: np.zeros((2,)), out_axes=-1)(np.zeros((5,)))


# ---- what a user writes: unmapped values jax.vmap passes through untouched ---------------------


@case
def user_callable_argument(vmap):
    return vmap(lambda x, act: act(x) * 2, in_axes=(0, None))(rng(5, 3), jnp.tanh)


@case
def user_string_mode(vmap):
    def f(x, mode):
        return x.sum() if mode == "sum" else x.max()

    return [vmap(f, in_axes=(0, None))(rng(5, 3), m) for m in ("sum", "max")]


@case
def user_bool_flag(vmap):
    def f(x, normalize):
        return x / jnp.linalg.norm(x) if normalize else x

    return [vmap(f, in_axes=(0, None))(rng(5, 3), flag) for flag in (True, False)]


@case
def user_int_as_shape(vmap):
    return vmap(lambda x, n: jnp.zeros(n) + x.sum(), in_axes=(0, None))(rng(5, 3), 4)


@case
def user_int_as_slice_bound(vmap):
    return vmap(lambda x, k: x[:k] * 2, in_axes=(0, None))(rng(5, 6), 3)


@case
def user_numpy_array_used_concretely(vmap):
    keep = np.array([True, False, True])
    return vmap(lambda x, keep: x[np.flatnonzero(keep)], in_axes=(0, None))(rng(5, 3), keep)


@case
def user_int_keyword_shape_in_a_dict(vmap):
    cfg = {"width": 2, "act": jnp.sin, "name": "layer"}
    f = lambda x, cfg: cfg["act"](x[: cfg["width"]]) if cfg["name"] else x  # noqa: E731
    return vmap(f, in_axes=(1, None), out_axes=1)(rng(4, 5), cfg)


@case
def user_top_level_dict_in_axes(vmap):
    return vmap(lambda x, w: x @ w, in_axes={"x": 0, "w": None})


@case
def user_top_level_namedtuple_in_axes(vmap):
    axes = collections.namedtuple("Axes", ["x", "w"])(0, None)
    return vmap(lambda x, w: x @ w, in_axes=axes)


@case
def user_list_in_axes(vmap):
    return vmap(lambda x, w: x @ w, in_axes=[0, None])(rng(5, 3), rng(3, 2))


#: (case, runner) pairs batch refuses on purpose, with the sentence that says why
UNSUPPORTED = {
    **{
        (name, r): r"got an unexpected keyword argument 'axis_name'"
        for name in ("testAxisIndex", "testCommAssocCollective_psum")
        for r in RUNNERS
        if r != "jax.vmap"
    },
    ("testNestedBatchingMatMat", "host-2"): r"^strategy='host' dispatches one compiled program",
}


@functools.cache
def outcome(name: str, runner: str):
    """(result, None) or (None, the exception) of one case under one runner."""
    try:
        return CASES[name](_wrap(RUNNERS[runner])), None
    except (ValueError, TypeError) as e:
        return None, e


def _same(got, want):
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        if isinstance(w, (str, type(None))) or callable(w):
            assert g == w
            continue
        if jax.dtypes.issubdtype(jnp.result_type(w), jax.dtypes.prng_key):
            g, w = jax.random.key_data(g), jax.random.key_data(w)
        g, w = np.asarray(g), np.asarray(w)  # batch is jax.jit(jax.vmap): its dtypes canonical
        dtype = jax.dtypes.canonicalize_dtype(w.dtype)  # (an eager identity keeps numpy's int64)
        assert g.shape == w.shape and g.dtype == dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("runner", [r for r in RUNNERS if r != "jax.vmap"])
@pytest.mark.parametrize("name", list(CASES))
def test_batch_does_what_jax_vmap_does(name, runner):
    want, want_error = outcome(name, "jax.vmap")
    got, error = outcome(name, runner)
    if (name, runner) in UNSUPPORTED:
        assert error is not None, f"{name} now runs under {runner}: drop it from UNSUPPORTED"
        assert isinstance(error, TypeError), repr(error)
        assert re.search(UNSUPPORTED[name, runner], str(error)), error
        return
    if want_error is not None:
        assert error is not None, f"jax.vmap raised {want_error!r}, {runner} returned {got!r}"
        kind = TypeError if isinstance(want_error, TypeError) else ValueError
        assert isinstance(error, kind), f"jax.vmap: {want_error!r}\n{runner}: {error!r}"
        assert str(want_error) in str(error), f"jax.vmap: {want_error}\n{runner}: {error}"
        return
    assert error is None, f"jax.vmap returned, {runner} raised {error!r}"
    _same(got, want)


def test_the_cases_include_each_kind_the_issue_lists_and_jax_refusals():
    """Every argument kind of issue 48 is a case, and so are refusals: each one can fail."""
    kinds = ["callable", "string_mode", "bool_flag", "int_as_shape", "slice_bound", "numpy_array"]
    kinds += ["dict_in_axes", "list_in_axes", "docstr", "issue_183"]
    assert all(any(k in name for name in CASES) for k in kinds), kinds
    refused = [n for n in CASES if outcome(n, "jax.vmap")[1] is not None]
    assert len(refused) >= 15 and len(CASES) - len(refused) >= 30, (len(refused), len(CASES))
    assert len(UNSUPPORTED) == 11  # two collectives x 5 runners, one nested host


def test_a_collective_is_refused_by_batch_in_one_sentence():
    with pytest.raises(
        TypeError, match=r"batch\(\) got an unexpected keyword argument 'axis_name'"
    ):
        batch(lambda x: lax.psum(x, "i"), axis_name="i")
