"""explain_axes: shapes per argument and output, errors that teach, and nothing ever runs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from batchlab import BatchAxisError, explain_axes


def predict(x, w):
    return x @ w


@pytest.mark.parametrize("n", [0, 1, 5])
def test_shapes_per_argument(n):
    e = explain_axes(predict, jnp.ones((n, 3)), jnp.ones((3, 2)), in_axes=(0, None))
    assert e.batch_size == n
    assert [(lf.label, lf.axis, lf.item_shape) for lf in e.inputs] == [
        ("x", 0, (3,)),
        ("w", None, (3, 2)),
    ]
    assert [(o.item_shape, o.shape) for o in e.outputs] == [((2,), (n, 2))]
    assert "per-item shape" in repr(e) and "<table" in e._repr_html_()


def test_negative_axes_pytrees_and_out_axes():
    def fn(d, s):
        return {"y": d["a"].T * s, "n": d["b"].sum()}

    args = ({"a": jnp.ones((2, 7)), "b": jnp.ones((7,))}, jnp.float32(2.0))
    e = explain_axes(fn, *args, in_axes=({"a": -1, "b": 0}, None), out_axes={"y": -1, "n": 0})
    rows = {lf.label: (lf.axis, lf.item_shape) for lf in e.inputs}
    assert rows == {"d['a']": (1, (2,)), "d['b']": (0, ()), "s": (None, ())}
    outs = {o.label: (o.axis, o.shape) for o in e.outputs}
    assert outs == {"out['n']": (0, (7,)), "out['y']": (1, (2, 7))}
    expected = jax.vmap(fn, ({"a": -1, "b": 0}, None), {"y": -1, "n": 0})(*args)
    assert expected["y"].shape == (2, 7) and expected["n"].shape == (7,)


def test_out_axes_none_for_unbatched_output():
    e = explain_axes(
        lambda x, w: (x * 2, w.sum()),
        jnp.ones((4, 2)),
        jnp.ones(3),
        in_axes=(0, None),
        out_axes=(0, None),
    )
    assert [o.axis for o in e.outputs] == [0, None]


def test_shape_dtype_structs_and_never_runs():
    calls = []

    def noisy(x):
        jax.debug.callback(lambda v: calls.append(1), x.sum())
        return x * 2

    e = explain_axes(noisy, jax.ShapeDtypeStruct((10**6, 4), jnp.float32))
    assert e.outputs[0].shape == (10**6, 4)
    e = explain_axes(noisy, jnp.ones((5, 4)))
    jax.effects_barrier()
    assert calls == []
    jax.block_until_ready(jax.vmap(noisy)(jnp.ones((2, 4))))
    jax.effects_barrier()
    assert calls  # the same function does run its callback when it runs


def test_varargs_names():
    e = explain_axes(lambda *xs: xs[0] + xs[1], jnp.ones((3, 2)), jnp.ones((3, 2)))
    assert [lf.label for lf in e.inputs] == ["xs[0]", "xs[1]"]


@pytest.mark.parametrize(
    "args,kwargs,match",
    [
        (
            (jnp.ones((5, 3)), jnp.ones((3, 2))),
            dict(in_axes=0),
            r"`w` has 3 along axis 0 but the batch has 5 items.*use in_axes=\(0, None\)",
        ),
        (
            (jnp.ones((5, 3)), jnp.ones((3, 2))),
            dict(in_axes=(2, None)),
            r"axis 2 of `x`, but `x` has shape \(5, 3\) \(2 axes\); valid axes are -2..1",
        ),
        ((jnp.float32(1.0), jnp.ones((3, 2))), dict(in_axes=(0, None)), r"`x` is a scalar"),
        (
            (jnp.ones((5, 3)), jnp.ones((3, 2))),
            dict(in_axes=(0,)),
            r"`in_axes` has 1 entry .* 2 argument",
        ),
        (
            (jnp.ones((5, 3)), jnp.ones((3, 2))),
            dict(in_axes={"x": 0}),
            r"`in_axes` must be an int, None, or a tuple",
        ),
        ((jnp.ones((5, 3)), jnp.ones((3, 2))), dict(in_axes=(None, None)), r"maps no argument"),
        (
            (jnp.ones((5, 3)), jnp.ones((3, 2))),
            dict(in_axes=(0, None), out_axes=None),
            r"out_axes gives None .*`out`",
        ),
        (
            (jnp.ones((5, 3)), jnp.ones((3, 2))),
            dict(in_axes=(0, None), out_axes=2),
            r"valid positions are -2..1",
        ),
        (
            (jnp.ones((5, 3)), jnp.ones((3, 2))),
            dict(in_axes=(0, None), out_axes=(0, 0)),
            r"`out_axes`=\(0, 0\) does not match",
        ),
    ],
)
def test_errors(args, kwargs, match):
    with pytest.raises(BatchAxisError, match=match):
        explain_axes(predict, *args, **kwargs)


def test_in_axes_tree_mismatch():
    with pytest.raises(
        BatchAxisError, match=r"in_axes for `d` is \{'a': 0\}, which does not match"
    ):
        explain_axes(lambda d: d["a"], {"a": jnp.ones(3), "b": jnp.ones(3)}, in_axes=({"a": 0},))


def test_ragged_list_points_to_padding():
    xs = [jnp.ones(4), jnp.ones(7), jnp.ones(2)]
    with pytest.raises(
        BatchAxisError,
        match=r"`xs` is a Python list of 3 items of different lengths \(4, 7, 2\).*[Pp]ad",
    ):
        explain_axes(lambda xs: sum(x.sum() for x in xs), xs)
    with pytest.raises(BatchAxisError, match="different lengths"):
        explain_axes(lambda xs: xs, [[1.0, 2.0], [3.0]])


def test_batch_axis_error_is_a_value_error():
    assert issubclass(BatchAxisError, ValueError)


def test_bad_types():
    with pytest.raises(TypeError, match="`in_axes` may hold only ints"):
        explain_axes(predict, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=("batch", None))
    with pytest.raises(TypeError, match="`out_axes` may hold only ints"):
        explain_axes(predict, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=(0, None), out_axes=1.0)
    with pytest.raises(TypeError, match="`w` is a str"):
        explain_axes(predict, jnp.ones((5, 3)), "weights", in_axes=(0, None))
    with pytest.raises(TypeError, match="must be a function"):
        explain_axes(np.ones(3), jnp.ones(3))


def test_plot():
    e = explain_axes(predict, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=(0, None))
    fig = e.plot()
    assert fig.axes and "in_axes=(0, None)" in fig.axes[0].get_title(loc="left")


def test_axes_explorer_shows_errors_as_results():
    from batchlab.widgets import AxesExplorer

    ex = AxesExplorer(predict, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=(0, None), out_axes=-1)
    assert ex.result.ok and ex.result.explanation.outputs[0].shape == (2, 5)
    bad = ex.update(w=0)
    assert not bad.ok and "in_axes=(0, None)" in bad.error and "BatchAxisError" in repr(bad)
    assert "<table" in bad._repr_html_() and ex.update(w=None).ok
    with pytest.raises(ValueError, match="`in_axes` needs one entry per argument"):
        AxesExplorer(predict, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=(0,))
    with pytest.raises(TypeError, match="unknown parameter"):
        ex.update(z=0)


def test_broadcast_explorer():
    from batchlab.widgets import BroadcastExplorer

    ex = BroadcastExplorer("(4,)", "(4, 3)")
    assert ex.result.error is not None and "BroadcastError" in repr(ex.result)
    ok = ex.update(a="(4, 1)")
    assert ok.shape == (4, 3) and repr(ok) == "broadcasts to (4, 3)"
    assert ex.update(a="3", b="()").shape == (3,)
    with pytest.raises(ValueError, match="`a` must be a shape like"):
        ex.update(a="(4,")
    with pytest.raises(ValueError, match="`b` must be a shape like"):
        ex.update(a="(4,)", b="(-1, 2)")


def test_list_leaves_are_mapped_together_as_in_vmap():
    """A list is one pytree: axis 0 of every leaf is mapped at once (not item after item)."""
    a, b = jnp.arange(3), 10 * jnp.arange(3)
    assert jax.vmap(lambda s: s[0] + s[1])([a, b]).tolist() == [0, 11, 22]
    e = explain_axes(lambda s: s[0] + s[1], [a, b])
    assert e.batch_size == 3 and [lf.item_shape for lf in e.inputs] == [(), ()]
    mixed = [jnp.ones((3, 4)), jnp.ones((3, 7))]  # other axes may differ
    e = explain_axes(lambda s: s[0].sum() + s[1].sum(), mixed)
    assert [lf.item_shape for lf in e.inputs] == [(4,), (7,)] and e.outputs[0].shape == (3,)


def test_ragged_list_fails_in_jax_too():
    """The kit's ragged-list error matches a real jax.vmap failure, not only the kit's checker."""
    xs = [jnp.ones(4), jnp.ones(7), jnp.ones(2)]
    with pytest.raises(ValueError, match="inconsistent sizes"):
        jax.vmap(lambda xs: xs[0].sum())(xs)
    with pytest.raises(BatchAxisError, match="different lengths"):
        explain_axes(lambda xs: xs[0].sum(), xs)


def _loss(x, y, w):
    return (x @ w - y) ** 2


def test_labels_one_short_are_not_told_to_be_shared():
    """in_axes None for labels one item short runs silently and returns (5, 4): never suggest it."""
    x, y, w = jnp.ones((5, 3)), jnp.ones((4,)), jnp.ones(3)
    assert jax.vmap(_loss, in_axes=(0, None, None))(x, y, w).shape == (5, 4)  # the trap itself
    with pytest.raises(BatchAxisError) as err:
        explain_axes(_loss, x, y, w, in_axes=(0, 0, None))
    msg = str(err.value)
    assert "If `y` is shared by all items" not in msg
    assert "Do not pass `y` whole: in_axes=(0, None, None) raises nothing" in msg
    assert "the batched output (5, 4) instead of (5,), silently" in msg
    assert "1 is missing: give it 5" in msg


def test_an_argument_that_fits_neither_way_is_told_so():
    with pytest.raises(
        BatchAxisError, match=r"Passing `b` whole \(in_axes=\(0, None\)\) does not fit"
    ):
        explain_axes(lambda a, b: a + b, jnp.ones((5, 3)), jnp.ones((4, 2)), in_axes=(0, 0))


def test_a_shared_weight_is_still_told_to_be_shared():
    with pytest.raises(
        BatchAxisError, match=r"If `w` is shared by all items, use in_axes=\(0, None\)"
    ):
        explain_axes(predict, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=0)
