"""check_broadcast: agrees with jnp.broadcast_shapes, draws conflicts, warns about silent traps."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from batchlab import BroadcastError, SilentBroadcastWarning, check_broadcast
from batchlab.batching.broadcasting import aligned, plot_outer_trap


@pytest.mark.parametrize(
    "shapes",
    [
        [(8, 1, 3), (5, 1)],
        [(3,), ()],
        [(0, 4), (1, 4)],
        [(2, 1), (1, 3), (1, 1, 1)],
        [(7,)],
        [],
        [(4, 5), (5,)],
    ],
)
def test_agrees_with_jax(shapes):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = tuple(jnp.broadcast_shapes(*shapes)) if shapes else ()
        assert check_broadcast(*shapes) == expected


def test_accepts_arrays_numbers_and_structs():
    assert check_broadcast(
        jnp.ones((2, 3)), np.ones(3), 2.0, jax.ShapeDtypeStruct((1, 3), jnp.float32)
    ) == (2, 3)


@pytest.mark.parametrize(
    "shapes,match",
    [
        ([(4,), (4, 3)], r"axis -1: `a` has 4, `b` has 3.*a\[:, None\] has shape \(4, 1\)"),
        ([(2, 4, 3), (5, 1, 3)], r"axis -3: `a` has 2, `b` has 5"),
        ([(3,), (4,)], r"shapes \(3,\) and \(4,\) do not broadcast"),
    ],
)
def test_conflicts(shapes, match):
    with pytest.raises(BroadcastError, match=match):
        check_broadcast(*shapes)


def test_conflict_is_drawn_aligned_from_the_right():
    with pytest.raises(BroadcastError) as info:
        check_broadcast((4,), (4, 3), names=["mask", "values"])
    text = str(info.value)
    assert "  mask:       4\n  values:  4  3\n              ^\n  axis    -2 -1" in text
    assert issubclass(BroadcastError, ValueError)


def test_outer_product_trap_warns():
    with pytest.warns(
        SilentBroadcastWarning,
        match=r"`y` \(5,\) and `pred` \(5, 1\) broadcast to \(5, 5\).*outer product",
    ):
        assert check_broadcast((5,), (5, 1), names=["y", "pred"]) == (5, 5)


def test_mask_trap_warns():
    with pytest.warns(
        SilentBroadcastWarning,
        match=r"`mask` \(4,\) matches the LEADING .*LAST axes.*mask\[:, None\]",
    ):
        check_broadcast((4,), (4, 4), names=["mask", "values"])


@pytest.mark.parametrize(
    "shapes", [[(5, 1), (1, 5)], [(8, 16), (16,)], [(3, 1), (3, 1)], [(1,), (5, 1)]]
)
def test_deliberate_broadcasts_do_not_warn(shapes):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_broadcast(*shapes)


def test_bad_inputs():
    with pytest.raises(TypeError, match="`b` must be an array, a number or a shape"):
        check_broadcast((2,), "x")
    with pytest.raises(ValueError, match="`a` is a shape with a negative size"):
        check_broadcast((-1, 2))
    with pytest.raises(ValueError, match="`names` has 1 entries but 2 operands"):
        check_broadcast((2,), (2,), names=["x"])


def test_aligned():
    assert aligned((8, 1, 3), (5, 1), names=["x", "y"]).splitlines()[1] == "  y:        5  1"


def test_plot_outer_trap():
    pred, y = jnp.arange(4.0)[:, None], jnp.ones(4)
    with jax.numpy_rank_promotion("allow"):
        fig = plot_outer_trap(pred - y, pred[:, 0] - y)
    # the product, the intended column and a colour bar (the legend of the colours)
    assert len(fig.axes) == 3 and "(4, 4)" in fig.axes[0].get_title()
    assert fig.axes[2].get_ylabel().startswith("value")
    legend = fig.axes[0].get_legend()
    assert legend is not None and "meant" in legend.get_texts()[0].get_text()


def test_plain_jax_is_silent_where_the_kit_warns():
    """The notebook's claim: plain JAX (rank promotion allowed) records no warning for the trap."""
    import warnings

    pred, labels = jnp.ones((6, 1)), jnp.ones(6)
    with jax.numpy_rank_promotion("allow"), warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        assert (pred - labels).shape == (6, 6)
    with warnings.catch_warnings(record=True) as kit:
        warnings.simplefilter("always")
        check_broadcast(pred, labels)
    assert not plain and [w.category for w in kit] == [SilentBroadcastWarning]


def test_strict_mode_rejects_a_correct_bias_and_misses_the_equal_rank_trap():
    """What notebook 02 teaches about jax_numpy_rank_promotion, checked against JAX."""
    h, bias = jnp.ones((5, 3)), jnp.ones(3)
    pred, labels = jnp.ones((6, 1)), jnp.ones(6)
    with jax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="rank_promotion"):
            h + bias
        with pytest.raises(ValueError, match="rank_promotion"):
            pred - labels
        assert (h + bias[None, :]).shape == (5, 3)
        assert (pred - labels[None, :]).shape == (6, 6)  # the same trap at equal rank: silent


# --- every diagnosis check_broadcast prints, against jnp broadcasting (hypothesis) ------------

import re  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_shape = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)


def _add(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


def _real(*shapes):
    """The shape of a jnp sum of arrays of these shapes (abstract evaluation), or None."""
    try:
        with jax.numpy_rank_promotion("allow"):
            structs = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
            return tuple(jax.eval_shape(_add, *structs).shape)
    except (ValueError, TypeError):
        return None


@settings(max_examples=200, deadline=None)
@given(st.lists(_shape, min_size=2, max_size=3))
def test_every_broadcast_diagnosis_agrees_with_jax(shapes):
    real = _real(*shapes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            kit, error = check_broadcast(*shapes), None
        except BroadcastError as e:
            kit, error = None, str(e)
    assert (error is None) == (real is not None), (shapes, error, real)
    if error is None:  # the shape is JAX's, and each warning's statement is true of it
        assert kit == real
        for w in caught:
            text = str(w.message)
            if "outer product" in text:  # a real outer product: neither of the pair has its size
                i, j = (ord(c) - ord("a") for c in re.findall(r"^`(\w)` .* and `(\w)` ", text)[0])
                pair = np.broadcast_shapes(shapes[i], shapes[j])
                assert max(np.prod(shapes[i]), np.prod(shapes[j])) < np.prod(pair), (shapes, text)
                assert f"broadcast to {pair}" in text
            else:  # "applied along the LAST axes": a leading match would broadcast elsewhere
                name, fix = re.search(r"trailing axes: (\w)\[(.*)\] has shape", text).groups()
                k = ord(name) - ord("a")
                moved = shapes[k] + (1,) * fix.count("None")
                assert _real(moved, *[s for j, s in enumerate(shapes) if j != k]) == real
        return
    # the axes it marks are exactly those where JAX sees two different sizes, none of them 1
    rank = max(map(len, shapes))
    bad = {ax for ax in range(-rank, 0) if len({s[ax] for s in shapes if len(s) >= -ax} - {1}) > 1}
    marked = {int(a) for a in re.findall(r"axis (-\d+):", error)}
    assert marked == bad and bad, (shapes, error)
    # its suggested fix, applied, broadcasts in JAX against the shape it names
    hint = re.search(
        r"`(\w)` (\(.*?\)) matches the LEADING axes of `(\w)` (\(.*?\)).*has shape (\(.*?\))\.",
        error,
    )
    if hint:
        import ast

        fixed, other = ast.literal_eval(hint.group(5)), ast.literal_eval(hint.group(4))
        assert _real(fixed, other) == other, (shapes, error)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_the_outer_product_it_warns_about_is_what_jax_computes(n):
    pred, labels = jnp.arange(float(n))[:, None], jnp.arange(float(n))
    with pytest.warns(SilentBroadcastWarning, match="outer product"):
        shape = check_broadcast(pred, labels)
    with jax.numpy_rank_promotion("allow"):
        assert (pred - labels).shape == shape == (n, n)
        assert float(jnp.abs(jnp.diagonal(pred - labels)).max()) == 0.0  # the meant ones


def test_the_conflict_message_aligns_marks_and_gives_the_first_per_row_fix_only():
    # three per-row readings exist ((4,) of (4, 3), (4,) and (4, 3) of (4, 3, 5)): one is shown
    with pytest.raises(BroadcastError) as e:
        check_broadcast((4, 3), (4,), (4, 3, 5), names=["x", "mask", "y"])
    assert str(e.value) == (
        "shapes (4, 3) and (4,) and (4, 3, 5) do not broadcast. Aligned from the right, sizes on "
        "one axis must be equal or 1:\n"
        "  x:        4  3\n"
        "  mask:        4\n"
        "  y:     4  3  5\n"
        "            ^  ^\n"
        "  axis  -3 -2 -1\n"
        "axis -2: `x` has 4, `y` has 3; axis -1: `x` has 3, `mask` has 4, `y` has 5 (different "
        "sizes, none of them 1). `x` (4, 3) matches the LEADING axes of `y` (4, 3, 5). If it holds "
        "one value per row (e.g. a mask over the batch), give it trailing axes: x[:, :, None] has "
        "shape (4, 3, 1)."
    )
    # a scalar matches no leading axes: the hint is the mask's, and the fix it gives works
    with pytest.raises(BroadcastError, match=r"none of them 1\)\. `m` \(4,\) matches") as e:
        check_broadcast(2.0, (4, 3), (4,), names=["s", "x", "m"])
    assert str(e.value).count("LEADING") == 1 and "m[:, None] has shape (4, 1)" in str(e.value)
    assert (jnp.ones((4, 3)) * jnp.ones(4)[:, None]).shape == (4, 3)


def test_a_per_row_operand_matching_the_last_axes_too_is_warned_in_full():
    with pytest.warns(SilentBroadcastWarning) as w:
        assert check_broadcast((4,), (4, 3, 4), names=["m", "x"]) == (4, 3, 4)
    assert [str(x.message) for x in w] == [
        "`m` (4,) matches the LEADING axes of `x` (4, 3, 4) and its trailing ones, but "
        "broadcasting aligns from the right: it is applied along the LAST axes, silently. If it "
        "holds one value per row (e.g. a mask over the batch), give it trailing axes: "
        "m[:, None, None] has shape (4, 1, 1)."
    ]
    with warnings.catch_warnings():  # only the trailing axes match: broadcasting's own meaning
        warnings.simplefilter("error")
        assert check_broadcast((4,), (3, 5, 4)) == (3, 5, 4)


def test_aligned_columns_names_and_no_operands():
    assert aligned((100, 3), (3,)) == "  a:    100   3\n  b:          3\n  axis   -2  -1"
    assert aligned() == "  axis  " and check_broadcast() == () == jnp.broadcast_shapes()
    assert aligned(*[(2,)] * 27).splitlines()[25:27] == ["  z:      2", "  arg26:  2"]
    with pytest.raises(TypeError, match=r"^`a` must be an array, a number or a shape \(a tuple "
                       r"of ints\), got tuple \(3\.5, 2\)\.$"):  # fmt: skip
        check_broadcast((3.5, 2))
