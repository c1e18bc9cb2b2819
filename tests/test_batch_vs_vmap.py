"""Property test: every strategy of ``batch`` behaves like ``jax.vmap`` (issue 15).

Hypothesis generates a per-item function from a few primitives, a pytree of
arguments (arrays mapped on random axes, dicts, tuples, namedtuples, unmapped
Python numbers, unmapped arrays, a keyword argument, and unmapped values that
are not arrays: a function, a string mode, a bool flag, an int used as a shape),
random ``in_axes``/``out_axes`` (negative, None, prefix trees, a top-level list
or dict, sometimes invalid) and batch sizes (0, 1, primes, larger than the chunk). For each case
``jax.vmap`` is the reference: the same values, shapes and dtypes, or an error
of the same kind (ValueError / TypeError) where vmap raises.

A fixed profile (derandomize=True, no deadline, 100 examples per strategy)
keeps CI deterministic. Cases are described by hashable specs, so functions
and batched functions are reused across examples and JAX's compile caches hit.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchlab import batch, batching

EXAMPLES = 100
PROFILE = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

#: every strategy that maps a per-item function ("manual" is the user's own batched code)
STRATEGIES = tuple(s for s in batching.STRATEGIES if s != "manual")
CHUNKS = {"map": [None, 2], "chunked": [1, 3, 8], "host": [1, 3, 8]}  # 8: larger than every batch


class Pair(NamedTuple):
    a: Any
    b: Any


PRIMS = {
    "sin": jnp.sin,
    "tanh": jnp.tanh,
    "square": jnp.square,
    "affine": lambda v: 2.0 * v + 1.0,
    "cumsum": lambda v: jnp.cumsum(v, axis=-1) if v.ndim else v,
}

# an argument: (kind, item shape, spec); spec: axis int / None, or per-leaf axes for containers
#: unmapped values that are not JAX arrays (issue 48): jax.vmap hands them to fn untouched
PLAIN = ("int", "float", "fn", "mode", "flag", "shape")
VALUES = {"int": 2, "float": 0.5, "fn": jnp.cos, "mode": "double", "flag": True, "shape": 3}
ITEM_SHAPES = [(), (4,)]  # 4 is never a batch size, so a wrong axis shows


@st.composite
def arg_spec(draw):
    kind = draw(st.sampled_from(["array", "array", "dict", "tuple", "pair", "shared", *PLAIN]))
    if kind in PLAIN:
        return (kind, (), None)
    if kind == "shared":
        return (kind, (4,), None)
    shape = draw(st.sampled_from(ITEM_SHAPES))
    rank = len(shape) + 1

    def axis():
        # valid axes (negative too), None, and now and then one out of range
        return draw(st.sampled_from([*range(-rank, rank), None, None, rank]))

    if kind == "array":
        return (kind, shape, axis())
    if draw(st.booleans()):
        return (kind, shape, axis())  # one axis for the whole container (a prefix)
    return (kind, shape, (axis(), axis()))


@st.composite
def case(draw):
    args = tuple(draw(st.lists(arg_spec(), min_size=1, max_size=3)))
    kw = draw(st.sampled_from([None, (), (4,)]))  # a keyword argument, mapped on axis 0 as in vmap
    prims = tuple(draw(st.lists(st.sampled_from(sorted(PRIMS)), min_size=1, max_size=2)))
    n = draw(st.sampled_from([0, 1, 2, 3, 5, 7]))
    out_axes = draw(
        st.sampled_from([0, 0, -1, 1, None, (0, None), (-1, 0), (None, 0), (0, 0, 0), {"x": 0}])
    )
    chunks = {s: draw(st.sampled_from(v)) for s, v in CHUNKS.items()}
    top = draw(st.sampled_from(["tuple", "tuple", "list", "dict"]))  # jax.vmap refuses a dict
    return args, kw, prims, n, out_axes, chunks, top


def _leaf(shape: tuple, n: int, axis: int | None, seed: int) -> np.ndarray:
    full = (
        shape
        if axis is None
        else (*shape[: axis % (len(shape) + 1)], n, *shape[axis % (len(shape) + 1) :])
    )
    if axis is not None and not -len(shape) - 1 <= axis <= len(shape):
        full = (n, *shape)  # an out-of-range axis: any array; vmap and batch must both refuse
    size = int(np.prod(full)) if full else 1
    return jnp.asarray(np.linspace(-1.0, 1.0, size, dtype=np.float32).reshape(full) + 0.1 * seed)


def build_args(args: tuple, kw: Any, n: int) -> tuple[tuple, dict, tuple]:
    values, in_axes = [], []
    for i, (kind, shape, spec) in enumerate(args):
        if kind in PLAIN:
            values.append(VALUES[kind])
            in_axes.append(None)
        elif kind == "shared":
            values.append(_leaf(shape, n, None, i))
            in_axes.append(None)
        elif kind == "array":
            values.append(_leaf(shape, n, spec, i))
            in_axes.append(spec)
        else:
            axes = spec if isinstance(spec, tuple) else (spec, spec)
            a, b = (_leaf(shape, n, ax, i + j) for j, ax in enumerate(axes))
            if kind == "dict":
                values.append({"a": a, "b": b})
                in_axes.append(
                    spec if not isinstance(spec, tuple) else {"a": axes[0], "b": axes[1]}
                )
            else:
                container = tuple if kind == "tuple" else Pair
                values.append(container((a, b)) if kind == "tuple" else Pair(a, b))
                in_axes.append(
                    spec
                    if not isinstance(spec, tuple)
                    else container(axes)
                    if kind == "tuple"
                    else Pair(*axes)
                )
    kwargs = {} if kw is None else {"k": _leaf(kw, n, 0, 9)}
    return tuple(values), kwargs, tuple(in_axes)


@functools.cache
def make_fn(kinds: tuple, has_kw: bool, prims: tuple):
    """fn(*args, k=...) -> (x, s): x from the first array leaf, s a scalar from every leaf."""

    def fn(*args, k=None):
        scale, shift, post = 1.0, 0, []
        leaves = []
        for kind, a in zip(kinds, args, strict=True):
            if kind == "int":
                shift = a  # a Python int, untouched, as jax.vmap passes it
            elif kind == "float":
                scale = a
            elif kind == "fn":
                post.append(a)  # a function
            elif kind == "mode":
                scale = scale * (2.0 if a == "double" else 1.0)  # a string compared in Python
            elif kind == "flag":
                post.append(jnp.negative if a else (lambda v: v))  # `if flag:` in Python
            elif kind == "shape":
                shift = shift + jnp.arange(a).sum()  # an int used as a shape
            else:
                leaves += jax.tree_util.tree_leaves(a)
        if k is not None:
            leaves.append(k)
        y = leaves[0] if leaves else jnp.float32(0.0)
        for p in prims:
            y = PRIMS[p](y) + shift
        for p in post:
            y = p(y)
        s = sum(jnp.sum(PRIMS[prims[0]](v)) for v in leaves) * scale
        return y * scale, s

    return fn


@functools.cache
def batched(fn, strategy: str, batch_size: int | None, in_axes_key: str, out_axes_key: str):
    return batch(
        fn,
        strategy=strategy,
        chunk_size=batch_size,
        in_axes=_AXES[in_axes_key],
        out_axes=_AXES[out_axes_key],
    )


_AXES: dict[str, Any] = {}


def _key(axes: Any) -> str:
    k = repr(axes)
    _AXES[k] = axes
    return k


def _run(f, args, kwargs):
    try:
        return f(*args, **kwargs), None
    except (ValueError, TypeError) as e:
        return None, e


def top_level(in_axes: tuple, top: str) -> Any:
    """The same in_axes as a tuple, a list (jax.vmap takes it) or a dict (jax.vmap refuses it)."""
    return {"tuple": in_axes, "list": list(in_axes), "dict": dict(enumerate(in_axes))}[top]


def check_case(c: tuple, strategies=STRATEGIES) -> None:
    args, kw, prims, n, out_axes, chunks, top = c
    values, kwargs, in_axes = build_args(args, kw, n)
    in_axes = top_level(in_axes, top)
    fn = make_fn(tuple(a[0] for a in args), kw is not None, prims)
    expected, vmap_error = _run(
        lambda *a, **k: jax.vmap(fn, in_axes, out_axes)(*a, **k), values, kwargs
    )
    for strategy in strategies:
        _compare(
            fn,
            strategy,
            chunks.get(strategy),
            in_axes,
            out_axes,
            values,
            kwargs,
            expected,
            vmap_error,
        )


def _compare(fn, strategy, batch_size, in_axes, out_axes, values, kwargs, expected, vmap_error):
    try:
        f = batched(fn, strategy, batch_size, _key(in_axes), _key(out_axes))
        got, error = _run(f, values, kwargs)
    except (ValueError, TypeError) as e:  # batch() checks axis types when it is called
        got, error = None, e
    if vmap_error is not None:
        assert error is not None, f"vmap raised {vmap_error!r} but {strategy} returned {got}"
        kind = TypeError if isinstance(vmap_error, TypeError) else ValueError
        assert isinstance(error, kind), f"vmap: {vmap_error!r}\n{strategy}: {error!r}"
        return
    assert error is None, f"vmap returned, but {strategy} raised {error!r}"
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(expected)
    for g, e in zip(
        jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected), strict=True
    ):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)


@PROFILE
@given(c=case())
def test_batch_behaves_like_vmap(c):
    """Each generated case is checked under every strategy: EXAMPLES cases per strategy."""
    check_case(c)


def test_the_generator_covers_what_the_issue_lists():
    """The cases include errors and successes, every batch size and each kind of argument."""
    seen: dict[str, set] = {k: set() for k in ("n", "kinds", "vmap_errors", "out_axes", "top")}

    @settings(PROFILE, max_examples=EXAMPLES)
    @given(c=case())
    def collect(c):
        args, kw, prims, n, out_axes, _, top = c
        seen["n"].add(n)
        seen["top"].add(top)
        seen["kinds"].update(a[0] for a in args)
        seen["out_axes"].add(repr(out_axes))
        values, kwargs, in_axes = build_args(args, kw, n)
        in_axes = top_level(in_axes, top)
        fn = make_fn(tuple(a[0] for a in args), kw is not None, prims)
        _, err = _run(lambda *a, **k: jax.vmap(fn, in_axes, out_axes)(*a, **k), values, kwargs)
        seen["vmap_errors"].add(type(err).__name__ if err else "ok")

    collect()
    assert seen["n"] == {0, 1, 2, 3, 5, 7}
    assert seen["kinds"] == {"array", "dict", "tuple", "pair", "shared", *PLAIN}
    assert {"ok", "ValueError", "TypeError"} <= seen["vmap_errors"]
    assert seen["top"] == {"tuple", "list", "dict"}
    assert len(seen["out_axes"]) >= 8


def test_an_output_that_is_not_a_jax_type_raises_vmaps_type_error_under_every_strategy():
    """A string output: vmap's TypeError and message, not scan's or jit's (JAX's vmap tests)."""
    xs = np.arange(5)
    with pytest.raises(TypeError, match="Output from batched function") as want:
        jax.vmap(lambda x: "hello")(xs)
    for strategy in STRATEGIES:
        for batch_size in CHUNKS.get(strategy, [None]):
            with pytest.raises(TypeError, match=r"Output from batched function.*not a valid JAX"):
                batch(lambda x: "hello", strategy=strategy, chunk_size=batch_size)(xs)
    assert "not a valid JAX type" in str(want.value)
