"""explain_axes: shapes per argument and output, errors that teach, and nothing ever runs."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import batchlab
from batchlab import BatchAxisError, explain_axes
from batchlab.batching.axes_spec import param_names


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

    # vmap's rule for debug.callback binds one callback per item while tracing: a small batch
    e = explain_axes(noisy, jax.ShapeDtypeStruct((1000, 4), jnp.float32))
    assert e.outputs[0].shape == (1000, 4)
    huge = jax.ShapeDtypeStruct((10**9, 4), jnp.float32)  # 16 GB: never allocated
    assert explain_axes(lambda x: x * 2, huge).outputs[0].shape == (10**9, 4)
    e = explain_axes(noisy, jnp.ones((5, 4)))
    jax.effects_barrier()
    assert calls == []
    jax.block_until_ready(jax.vmap(noisy)(jnp.ones((2, 4))))
    jax.effects_barrier()
    assert calls  # the same function does run its callback when it runs


def test_varargs_names():
    e = explain_axes(lambda *xs: xs[0] + xs[1], jnp.ones((3, 2)), jnp.ones((3, 2)))
    assert [lf.label for lf in e.inputs] == ["xs[0]", "xs[1]"]
    assert param_names(lambda a, *rest: a, 3) == ["a", "rest[0]", "rest[1]"]
    with pytest.raises(ValueError):  # CPython's max carries no signature
        inspect.signature(max)
    assert param_names(max, 3) == ["args[0]", "args[1]", "args[2]"]  # named by position


@pytest.mark.parametrize(
    "args,kwargs,match",
    [
        (
            (np.ones((5, 3)), np.ones((3, 2))),
            dict(in_axes=0),
            r"`w` has 3 along axis 0 but the batch has 5 items.*use in_axes=\(0, None\)",
        ),
        (
            (np.ones((5, 3)), np.ones((3, 2))),
            dict(in_axes=(2, None)),
            r"axis 2 of `x`, but `x` has shape \(5, 3\) \(2 axes\); valid axes are -2..1",
        ),
        (
            (np.float32(1.0), np.ones((3, 2))),
            dict(in_axes=(0, None)),
            r"`x` has shape \(\) \(0 axes\); a scalar takes None",
        ),
        (
            (np.ones((5, 3)), np.ones((3, 2))),
            dict(in_axes=(0,)),
            r"`in_axes` must be an int, None, or a tuple of 2 entries, one per argument of "
            r"fn\(x, w\), got \(0,\); write e.g. in_axes=\(0, None\)",
        ),
        (
            (np.ones((5, 3)), np.ones((3, 2))),
            dict(in_axes={"x": 0}),
            r"`in_axes` must be an int, None, or a tuple",
        ),
        (
            (np.ones((5, 3)), np.ones((3, 2))),
            dict(in_axes=(0, None), out_axes=None),
            r"out_axes gives None .*`out`",
        ),
    ],
)
def test_errors(args, kwargs, match):
    with pytest.raises(BatchAxisError, match=match):
        explain_axes(predict, *args, **kwargs)


def test_ragged_list_points_to_padding():
    xs = [jnp.ones(4), jnp.ones(7), jnp.ones(2)]
    with pytest.raises(
        BatchAxisError,
        match=r"`xs` is a Python list of 3 items of different lengths \(4, 7, 2\).*[Pp]ad",
    ):
        explain_axes(lambda xs: sum(x.sum() for x in xs), xs)
    with pytest.raises(BatchAxisError, match="different lengths"):
        explain_axes(lambda xs: xs, [[1.0, 2.0], [3.0]])
    many = [jnp.ones(n) for n in range(1, 11)]  # ten lengths: the first eight are shown
    with pytest.raises(
        BatchAxisError,
        match=r"of 10 items of different lengths \(1, 2, 3, 4, "
        r"5, 6, 7, 8, \.\.\.\) along the mapped axis 0\.",
    ):
        explain_axes(lambda xs: xs, many)
    for n, tail in ((8, r"8\) along"), (9, r"8, \.\.\.\) along")):  # "..." only past eight
        with pytest.raises(BatchAxisError, match=rf"of {n} items .*\(1, 2, 3, 4, 5, 6, 7, {tail}"):
            explain_axes(lambda xs: xs, [jnp.ones(k) for k in range(1, n + 1)])


def test_an_unmapped_ragged_list_is_shared_as_jax_vmap_shares_it():
    table = [[1, 2], [3]]  # Python ints of different lengths, not mapped: vmap passes them along
    f = lambda x, t: x * t[1][0]  # noqa: E731
    want = jax.vmap(f, in_axes=(0, None))(jnp.ones(3), table)
    e = explain_axes(f, jnp.ones(3), table, in_axes=(0, None))
    assert [(o.item_shape, o.shape) for o in e.outputs] == [(want.shape[1:], want.shape)]
    assert "t[1][0]   ()     not mapped (shared)" in repr(e)


def test_batch_axis_error_is_a_value_error():
    assert issubclass(BatchAxisError, ValueError)


@pytest.mark.parametrize(
    "fn, args, kwargs",
    [
        (lambda d: d["a"], ({"a": jnp.ones(3), "b": jnp.ones(3)},), dict(in_axes=({"a": 0},))),
        (predict, (jnp.ones((5, 3)), jnp.ones((3, 2))), dict(in_axes=(None, None))),
        (predict, (jnp.ones((5, 3)), jnp.ones((3, 2))), dict(in_axes=("batch", None))),
        (predict, (jnp.ones((5, 3)), jnp.ones((3, 2))), dict(in_axes=(0, None), out_axes=1.0)),
        (predict, (jnp.ones((5, 3)), jnp.ones((3, 2))), dict(in_axes=(0, None), out_axes=2)),
        (predict, (jnp.ones((5, 3)), jnp.ones((3, 2))), dict(in_axes=(0, None), out_axes=(0, 0))),
        (lambda: 1.0, (), {}),
    ],
    ids=["in-tree", "none-mapped", "in-type", "out-type", "out-rank", "out-tree", "no-args"],
)
def test_where_jax_vmap_decides_explain_axes_raises_its_own_error_unchanged(fn, args, kwargs):
    """A tree mismatch, nothing mapped, a type that is not an axis, an out axis past the rank:
    JAX's own words teach these, so the kit adds none of its own (issue 48)."""
    with pytest.raises((ValueError, TypeError)) as jax_error:
        jax.vmap(fn, **kwargs)(*args)
    with pytest.raises((ValueError, TypeError)) as kit:
        explain_axes(fn, *args, **kwargs)
    assert type(kit.value) is type(jax_error.value) and not isinstance(kit.value, BatchAxisError)
    assert str(kit.value) == str(jax_error.value)


def test_a_function_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="must be a function"):
        explain_axes(np.ones(3), jnp.ones(3))


def test_unmapped_values_that_are_not_arrays_reach_fn_as_jax_vmap_passes_them():
    """A string mode, a function, a flag and an int used as a shape: explained, not refused."""

    def f(x, mode, act, flag, n):
        y = act(x) if mode == "act" else x
        return (2 * y if flag else y).reshape(n, -1)

    args, in_axes = (jnp.ones((5, 4)), "act", jnp.tanh, True, 2), (0, None, None, None, None)
    e = explain_axes(f, *args, in_axes=in_axes)
    assert [(lf.label, lf.axis) for lf in e.inputs][1:] == [
        (n, None) for n in ["mode", "act", "flag", "n"]
    ]
    assert e.outputs[0].shape == jax.vmap(f, in_axes=in_axes)(*args).shape == (5, 2, 2)
    with pytest.raises(TypeError, match="unsupported operand"):  # fn's own error, on one item
        explain_axes(predict, jnp.ones((5, 3)), "weights", in_axes=(0, None))
    with pytest.raises(TypeError, match="not a valid JAX type"):  # jax.vmap's: a string mapped
        explain_axes(predict, jnp.ones((5, 3)), "weights", in_axes=(0, 0))


def test_plot():
    e = explain_axes(predict, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=(0, None))
    fig = e.plot()
    assert fig.axes and "in_axes=(0, None)" in fig.axes[0].get_title(loc="left")


def test_axes_explorer_shows_errors_as_results():
    from batchlab.widgets import AxesExplorer

    ex = AxesExplorer(predict, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=(0, None))
    assert ex.update(out_axes=-1).ok and ex.result.explanation.outputs[0].shape == (2, 5)
    bad = ex.update(w=0)
    assert not bad.ok and "in_axes=(0, None)" in bad.error and "BatchAxisError" in repr(bad)
    assert ex.update(w=None).ok
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


# --- every diagnosis the kit prints, against what jax.vmap really does (hypothesis) ----------

from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _vmap_shapes(fn, args, in_axes):
    """What jax.vmap really gives (output shapes), or JAX's own error message."""
    try:
        out = jax.eval_shape(jax.vmap(fn, in_axes=in_axes), *args)
    except (ValueError, TypeError) as e:
        return None, f"{type(e).__name__}: {e}"
    return [tuple(o.shape) for o in jax.tree_util.tree_leaves(out)], None


def _kit(fn, args, in_axes):
    try:
        e = explain_axes(fn, *args, in_axes=in_axes)
    except BatchAxisError as err:
        return None, str(err)
    except TypeError as err:  # fn's own error on the per-item shapes
        return None, f"TypeError: {err}"
    return [o.shape for o in e.outputs], None


def _suggestions(msg):
    """Every ``in_axes=(...)`` the message offers as a fix, and the per-item output it states."""
    import ast
    import re

    offered = re.findall(r"map it, in_axes=(\([^)]*\)): each item sees .* returns (\(.*?\))\.", msg)
    offered += [(s, None) for s in re.findall(r"shared by all items, use in_axes=(\([^)]*\))", msg)]
    return [
        (ast.literal_eval(s), None if out is None else ast.literal_eval(out)) for s, out in offered
    ]


def _twice(*xs):
    return [x * 2 for x in xs]


#: element-wise functions of 1, 2, 3 named parameters (JAX names varargs its own way)
_ELEMENTWISE = [lambda a: _twice(a), lambda a, b: _twice(a, b), lambda a, b, c: _twice(a, b, c)]


def _matmul(x, w):
    return x @ w


@st.composite
def _cases(draw):
    """A batch of ``b`` items, an intended in_axes, then one perturbation of it.

    Sizes other than the batch's are drawn from sizes != b, so the intended
    axis is the only one with b entries.
    """
    b = draw(st.integers(2, 6))
    dim = st.sampled_from([d for d in range(2, 8) if d != b])
    family = draw(st.sampled_from(["elementwise", "matmul"]))
    if family == "matmul":
        f = draw(dim)
        o = draw(
            st.sampled_from([d for d in range(2, 8) if d not in (b, f)])
        )  # f == o: w fits mapped
        shapes, intended = [(b, f), (f, o)], [0, None]
        fn = _matmul
    else:
        n = draw(st.integers(1, 3))
        shapes, intended = [], []
        for _ in range(n):
            rank = draw(st.integers(0, 3))
            item = tuple(draw(dim) for _ in range(rank))
            axis = draw(st.sampled_from([None, *range(rank + 1)]))
            intended.append(axis)
            shapes.append(item if axis is None else (*item[:axis], b, *item[axis:]))
        if all(a is None for a in intended):
            intended[0], shapes[0] = 0, (b, *shapes[0])
        fn = _ELEMENTWISE[n - 1]
    spec = list(intended)
    kind = draw(st.sampled_from(["none", "wrong axis", "shared mapped", "short"]))
    eligible = {
        "wrong axis": [i for i, a in enumerate(spec) if a is not None and len(shapes[i]) > 1],
        "shared mapped": [i for i, a in enumerate(spec) if a is None and shapes[i]],
        "short": [i for i, a in enumerate(spec) if a is not None],
    }.get(kind, [])
    if not eligible:
        kind = "none"
    else:
        i = draw(st.sampled_from(eligible))
        if kind == "wrong axis":
            spec[i] = draw(st.sampled_from([a for a in range(len(shapes[i])) if a != spec[i]]))
        elif kind == "shared mapped":
            spec[i] = 0
        else:
            s = list(shapes[i])
            s[spec[i]] -= 1
            shapes[i] = tuple(s)
    args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    return fn, args, tuple(intended), tuple(spec), kind, b


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_every_diagnosis_agrees_with_jax_vmap(case):
    fn, args, intended, spec, kind, b = case
    names = ["x", "w"] if fn is _matmul else ["a", "b", "c"][: len(args)]
    real, jax_error = _vmap_shapes(fn, args, spec)
    kit, kit_error = _kit(fn, args, spec)
    event(f"{kind}: {'vmap raises' if jax_error else 'vmap runs'}")
    # the kit raises exactly when jax.vmap raises, and agrees on the shapes when it does not
    assert (kit_error is None) == (jax_error is None), (spec, kit_error, jax_error)
    if jax_error is None:
        assert kit == real
        return
    if jax_error.startswith("TypeError"):  # the axes fit; fn itself fails on one item's shapes
        assert kit_error.startswith("TypeError"), (kit_error, jax_error)
        return
    jax_error = jax_error.removeprefix("ValueError: ")
    # it names an argument and axis that JAX's own message names, with the same size
    import re

    m = re.match(r"`(.+?)` has (\d+) along axis (\d+)", kit_error)
    r = re.search(r"axis (\d+), which implies .* \(its shape is (\(.*?\))\)", jax_error)
    if m:
        label, size, axis = m.group(1), int(m.group(2)), int(m.group(3))
        assert f"size {size}: axis {axis} of argument {label} of type" in jax_error, (
            kit_error,
            jax_error,
        )
    else:  # an axis out of range: JAX names the axis and the shape, the kit the argument too
        assert r, (kit_error, jax_error)
        k = names.index(re.search(r"of `(.+?)`", kit_error).group(1))
        assert f"axis {r.group(1)} of `" in kit_error and str(args[k].shape) == r.group(2)
    # every fix it offers, applied, makes jax.vmap succeed, with the per-item output it states
    offered = _suggestions(kit_error)
    for fix, item_out in offered:
        fixed, err = _vmap_shapes(fn, args, fix)
        assert err is None, (kit_error, err)
        if item_out is not None:
            stated = [item_out] if len(fixed) == 1 else list(item_out)
            assert [s[1:] for s in fixed] == stated, (kit_error, fixed)
    # the intended in_axes is among the fixes where shapes decide it (a moved axis, a shared
    # weight that fn cannot take mapped); labels one item short get no in_axes fix at all
    batch = (
        int(re.search(r"the batch has (\d+) items", kit_error or "").group(1) or 0) if m else None
    )
    sizes = [a.shape[ax] for a, ax in zip(args, spec, strict=False) if ax is not None]
    clear = all(sizes.count(b) > sizes.count(n) for n in sizes if n != b)  # else a tie: either way
    decided = kind == "wrong axis" or (kind == "shared mapped" and fn is _matmul)
    if decided and clear:
        assert batch == b, kit_error
    if decided and batch == b:
        event("intended fix checked")
        assert intended in [f for f, _ in offered], (kit_error, intended)
    if kind == "short" and batch == b:  # (in a tie the short size may be taken for the batch's)
        assert not offered, kit_error
    # a silent outcome it warns about ("raises nothing ... batched output S") is what vmap gives
    said = re.search(
        r"(in_axes=\([^)]*\)) raises nothing .* the batched output (\(.*?\)) instead", kit_error
    )
    if said:
        import ast

        got, err = _vmap_shapes(fn, args, ast.literal_eval(said.group(1)[8:]))
        assert err is None and _shapes_text(got) == said.group(2), (kit_error, got)


def _shapes_text(shapes):
    return str(shapes[0]) if len(shapes) == 1 else ", ".join(map(str, shapes))


def test_a_key_mapped_on_its_sequence_axis_is_told_to_map_the_batch_axis():
    """(5, 7, 3) keys mapped on axis 1 (the 7 tokens): map axis 0, each item returns (7,)."""

    def scores(q, k, temperature):
        return (k @ q) / temperature

    q, k, t = jnp.ones((5, 3)), jnp.ones((5, 7, 3)), jnp.float32(2.0)
    with pytest.raises(ValueError, match="axis 1 of argument k"):
        jax.vmap(scores, in_axes=(0, 1, None))(q, k, t)
    with pytest.raises(BatchAxisError) as err:
        explain_axes(scores, q, k, t, in_axes=(0, 1, None))
    msg = str(err.value)
    assert "map it, in_axes=(0, 0, None): each item sees `k` as (7, 3) and returns (7,)" in msg
    assert jax.vmap(scores, in_axes=(0, 0, None))(q, k, t).shape == (5, 7)
    assert "(5, 7) instead of (5,)" not in msg


def test_the_fix_for_a_wrong_sized_argument_counts_what_is_missing_or_extra_as_jax_computes():
    x = jnp.ones((5, 3))
    said = {}
    for n in (3, 8, 4):
        with pytest.raises(BatchAxisError) as e:
            explain_axes(lambda x, v: v @ x, x, jnp.ones((n, 3)), in_axes=(0, 0))
        said[n] = str(e.value)
        # what the message says passing `v` whole gives is what jax.vmap gives
        whole = jax.vmap(lambda x, v: v @ x, in_axes=(0, None))(x, jnp.ones((n, 3)))
        assert f"the batched output {whole.shape} instead of (5,), silently" in said[n]
    assert said[3].endswith("2 are missing: give it 5 (or keep only the items it has entries for).")
    assert said[8].endswith("3 are extra: give it 5 (or keep only the items it has entries for).")
    assert "each item's output becomes (8,) instead of ()" in said[8]
    assert said[4].endswith(
        ", 1 is missing: give it 5 (or keep only the items it has entries for)."
    )


def test_out_axes_none_and_negative_positions_read_each_output():
    x, w = jnp.ones((5, 3)), jnp.ones((3, 2), jnp.bfloat16)
    # an output the same for every item may take None, and the outputs after it keep their axes
    e = explain_axes(lambda x, w: (w.sum(), x.sum()), x, w, in_axes=(0, None), out_axes=(None, 0))
    assert [(o.arg, o.label, o.shape, o.dtype, o.axis) for o in e.outputs] == [
        (0, "out[0]", (), jnp.bfloat16, None),
        (1, "out[1]", (5,), jnp.float32, 0),
    ]
    # None for an output that depends on the mapped `x` is refused, as jax.vmap refuses it
    both = lambda x, w: (x.sum() + w.sum(), x * 2)  # noqa: E731
    with pytest.raises(ValueError):
        jax.vmap(both, in_axes=(0, None), out_axes=(None, 0))(x, w)
    with pytest.raises(
        BatchAxisError, match=r"out_axes gives None \(no batch axis\) for `out\[0\]`"
    ):
        explain_axes(both, x, w, in_axes=(0, None), out_axes=(None, 0))
    # an output built from a mapped input's shape alone is unbatched: None is accepted, as JAX does
    shape_only = lambda x: (jnp.zeros_like(x), x * 2)  # noqa: E731
    assert jax.vmap(shape_only, out_axes=(None, 0))(x)[0].shape == (3,)
    assert explain_axes(shape_only, x, out_axes=(None, 0)).outputs[0].axis is None
    # -rank is the first valid position, as in jax.vmap
    assert jax.vmap(lambda x: x * 2, out_axes=-2)(x).shape == (5, 3)
    assert explain_axes(lambda x: x * 2, x, out_axes=-2).outputs[0].axis == 0


def test_the_fix_for_one_leaf_of_a_dict_argument_unmaps_that_leaf_alone_as_jax_computes():
    # one argument, a dict whose leaves sit on different axes; `v` has 5 entries, the batch 4
    f = lambda d: d["x"] @ d["v"].T + d["w"].sum()  # noqa: E731
    x, w, v = jnp.ones((2, 4, 3)), jnp.ones((4,)), jnp.ones((5, 3))
    in_axes = ({"x": 1, "v": 0, "w": 0},)
    with pytest.raises(BatchAxisError) as e:
        explain_axes(f, {"x": x, "v": v, "w": w}, in_axes=in_axes)
    said = str(e.value)
    suggested = "in_axes=({'v': None, 'w': 0, 'x': 1},)"
    assert f"Do not pass `d['v']` whole: {suggested} raises nothing" in said
    # the suggested in_axes, run in jax.vmap, gives what the message says; v of 4 items, the rest
    whole = jax.vmap(f, in_axes=eval(suggested.removeprefix("in_axes=")))({"x": x, "v": v, "w": w})
    right = jax.vmap(f, in_axes=in_axes)({"x": x, "v": jnp.ones((4, 3)), "w": w})
    assert (whole.shape, right.shape) == ((4, 2, 5), (4, 2))
    assert (
        "each item's output becomes (2, 5) instead of (2,) and the batched output (4, 2, 5) "
        "instead of (4, 2), silently. If its entries are one per item, 1 is extra"
    ) in said


def test_a_tie_is_broken_for_the_size_the_other_argument_can_move_to():
    # a: 3 on axis 0, b: 4 on axis 0; only a has an axis of 4, so the batch is 4 (seen second)
    f = lambda a, b: a.sum() + b.sum()  # noqa: E731
    a, b = jnp.ones((3, 4)), jnp.ones((4, 2))
    with pytest.raises(BatchAxisError) as e:
        explain_axes(f, a, b)
    assert str(e.value).startswith(
        "`a` has 3 along axis 0 but the batch has 4 items (sizes found: `a`: 3 (axis 0), `b`: 4 "
        "(axis 0)). Axis 1 of `a` has 4"
    )
    assert "map it, in_axes=(1, 0)" in str(e.value)
    assert jax.vmap(f, in_axes=(1, 0))(a, b).shape == (4,)  # the fix runs in JAX


def test_batch_refuses_a_call_with_jax_vmaps_own_error_unchanged():
    f = lambda x, *, w: x * w.sum()  # noqa: E731
    x, w = jnp.ones((5, 3)), jnp.ones(4)
    with pytest.raises(ValueError, match="vmap got inconsistent sizes") as jax_error:
        jax.vmap(f)(x, w=w)  # jax.vmap maps keyword arguments on axis 0, always
    for strategy, k in (("vmap", None), ("chunked", 2), ("host", 2), ("loop", None)):
        with pytest.raises(ValueError) as e:
            batchlab.batch(f, strategy=strategy, chunk_size=k)(x, w=w)
        assert type(e.value) is type(jax_error.value) and str(e.value) == str(jax_error.value)
    assert "axis 0 of argument x of type float32[5,3]" in str(jax_error.value)
