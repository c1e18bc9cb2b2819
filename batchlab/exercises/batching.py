"""Exercises for notebooks 00 to 05 (the tour, vmap axes, broadcasting, vmap versus manual
batching, padding and masking, bucketing): hints point at the concept, never the answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.backend import backend_facts
from batchlab.batching.axes import explain_axes
from batchlab.exercises import DIRECTIONS, choose, direction, exercise
from batchlab.measuring.plan import memory_estimate
from batchlab.ragged.boundaries import optimal_boundaries, padded_elements


@exercise("tour.predict_bytes", "Bytes XLA plans for the scorer's arguments and output (a dict).")
def predict_bytes(answer: dict, *, fn: Callable, args: tuple) -> tuple[bool, str]:
    if not isinstance(answer, dict) or not {"argument", "output"} <= set(answer):
        return False, "Answer with a dict with the keys 'argument' and 'output' (in bytes)."
    est = memory_estimate(fn, *args)
    if (int(answer["argument"]), int(answer["output"])) == (est.argument_bytes, est.output_bytes):
        return True, "Both match XLA's compiled memory analysis."
    return False, (
        "Not all figures match the compiled plan: the arguments are every input (the batch x, the "
        "shared weights w, the vector v) at 4 bytes per float32; the output one score per item."
    )


@exercise("tour.change_dtype", "Another dtype: argument and temp bytes shrink, same or grow?")
def change_dtype(answer: Any, *, fn: Callable, args: tuple, dtype: Any) -> tuple[bool, str]:
    keys = ("argument", "temp")
    if not isinstance(answer, dict) or any(answer.get(k) not in DIRECTIONS for k in keys):
        return False, f"A dict {{'argument': ..., 'temp': ...}}: each must be one of {DIRECTIONS}."
    old = memory_estimate(fn, *args)
    new = memory_estimate(fn, *(jnp.asarray(a).astype(dtype) for a in args))
    name = np.dtype(dtype).name
    if answer["argument"] != direction(new.argument_bytes, old.argument_bytes):
        return False, f"Not yet. How many bytes does one {name} element take, against float32's 4?"
    if answer["temp"] != direction(new.temp_bytes, old.temp_bytes):
        return False, (
            f"Not yet. Run bl.buffer_assignment(fn, *args) with the {name} inputs and read the "
            f"dtype of every value in the temp allocation: is the arithmetic done in {name}?"
        )
    return True, f"Right on both (measured on {jax.default_backend()}). Now say why."


@exercise("axes.item_shape", "Shape fn sees per item of x (4, 6, 3) with in_axes=1?")
def item_shape(answer: Any) -> tuple[bool, str]:
    if isinstance(answer, (str, bytes)):  # "43" would read as (4, 3)
        return False, "Answer with a shape, a tuple of ints like (2, 5), not a string."
    if tuple(answer) == (4, 3):
        return True, "Right: vmap removes the mapped axis, only that one; the others keep order."
    return False, "vmap removes exactly the axis in_axes names, counting from 0, from (4, 6, 3)."


@exercise("axes.columns_batch", "in_axes and out_axes mapping x @ w over x's 5 columns.")
def columns_batch(answer: Any, *, fn: Callable, x: Any, w: Any) -> tuple[bool, str]:
    if not isinstance(answer, dict) or not {"in_axes", "out_axes"} <= set(answer):
        return False, "Answer with a dict {'in_axes': ..., 'out_axes': ...}."
    try:
        e = explain_axes(fn, x, w, in_axes=answer["in_axes"], out_axes=answer["out_axes"])
    except (ValueError, TypeError) as err:  # the kit's words, JAX's, or fn's on one item
        why = str(err).splitlines()[0].split(". ")[0]  # the first sentence: never the fix
        return False, f"vmap would refuse it ({why}): which axes hold the items?"
    mapped = {lf.label: lf.axis for lf in e.inputs}
    if mapped.get("w") is not None or e.batch_size != x.shape[1] or mapped.get("x") != 1:
        return False, "5 items, one per column of x, and w the same for every item: which in_axes?"
    if e.outputs[0].shape != (w.shape[1], x.shape[1]):
        got = e.outputs[0].shape
        return False, f"The output comes out as {got}: out_axes says where the batch axis goes."
    return True, "Right: in_axes picks the axis that holds the items, out_axes where they go."


@exercise("axes.non_square", "in_axes=(1, None) on a (3, 4) batch: error, wrong or right answer?")
def non_square(answer: Any, *, fn: Callable, x: Any, w: Any) -> tuple[bool, str]:
    try:
        wrong = jax.vmap(fn, in_axes=(1, None))(x, w)
    except (TypeError, ValueError):
        truth = "error"
    else:
        right = jax.vmap(fn, in_axes=(0, None))(x, w)
        same = wrong.shape == right.shape and bool(jnp.allclose(wrong, right))
        truth = "right answer" if same else "wrong answer"
    return choose(
        answer,
        truth,
        ("error", "wrong answer", "right answer"),
        "Right. Now say why, from the shape each call sees and the shape of w.",
        "Not this time. With in_axes=(1, None), what shape does each call see for x, and can "
        "it be multiplied by w? Try it with plain jax.vmap and read JAX's message.",
    )


@exercise("broadcasting.predict_shape", "What shape do (8, 1, 3) and (5, 1) broadcast to?")
def predict_shape(answer: Any) -> tuple[bool, str]:
    if tuple(answer) == (8, 5, 3):
        return True, "Right: aligned from the right, a missing axis counts as 1, each 1 stretches."
    if len(answer) != 3:
        return False, "The result has as many axes as the longest operand."
    return False, "Align the shapes from the RIGHT, then on each axis take the size that is not 1."


@exercise("broadcasting.residual", "residual(pred, y): the (n,) differences of (n, 1) and (n,).")
def residual(answer: Any) -> tuple[bool, str]:
    pred = np.arange(6.0, dtype=np.float32).reshape(6, 1)
    y = np.linspace(0.0, 1.0, 6, dtype=np.float32)
    with jax.numpy_rank_promotion("allow"):
        out = np.asarray(answer(pred, y))
    if out.shape != (6,):
        hint = " an outer product: every pred against every y" if out.shape == (6, 6) else ""
        return False, f"Your result has shape {out.shape}:{hint}. Make both operands (n,) first."
    if not np.allclose(out, pred[:, 0] - y):
        return False, "The shape is right but the values are not pred[i] - y[i]."
    return True, "Right: both operands have one shape, so the difference is element by element."


@exercise("broadcasting.batch_of_one", "(n, 1) - (n,) MSE at n = 1: error, wrong or right answer?")
def batch_of_one(answer: Any, *, n: int) -> tuple[bool, str]:
    pred = jax.random.normal(jax.random.key(3), (n, 1))
    labels = jax.random.normal(jax.random.key(4), (n,))
    with jax.numpy_rank_promotion("allow"):  # (n, 1) - (n,) broadcasts: it never raises
        written = jnp.mean((pred - labels) ** 2)
    same = bool(jnp.allclose(written, jnp.mean((pred[:, 0] - labels) ** 2), rtol=1e-6))
    return choose(
        answer,
        "right answer" if same else "wrong answer",
        ("error", "wrong answer", "right answer"),
        "Right. Now say why, and what a test with this batch size can catch.",
        f"Not this time. With n = {n}, what shape does pred - labels have, how many pairs "
        "(i, j) does the mean average over, and how many of them are the pairs you meant?",
    )


@exercise("strategies.manual_pairwise", "pairwise_all(xs, ys): (n, m) distances without vmap.")
def manual_pairwise(answer: Any) -> tuple[bool, str]:
    rng = np.random.default_rng(7)
    xs, ys = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)
    expected = np.sqrt(((xs[:, None, :] - ys[None]) ** 2).sum(-1))  # what vmap of one row gives
    out = np.asarray(answer(jnp.asarray(xs), jnp.asarray(ys)))
    if out.shape != expected.shape:
        return False, f"Your result has shape {out.shape}; want one row per x, one column per y."
    if not np.allclose(out, expected, rtol=1e-4, atol=1e-5):
        return False, "The shape is right, not the values: which axis do you sum the squares over?"
    return True, "Right: the same numbers as vmap, written by hand with broadcasting."


@exercise("strategies.chunk_count", "vmap(f) runs at chunk_size=64 on 1000 items? Give an int.")
def chunk_count(answer: Any) -> tuple[bool, str]:
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return False, f"Give a whole number (an int), got {type(answer).__name__}."
    if answer == 16:
        return True, "Right."
    if answer == 15:
        return False, "That counts the full chunks only: what runs the items they leave over?"
    if answer == 1:
        return False, "1 is the number of dispatches (one program); how often does vmap(f) run?"
    return False, "Divide 1000 by 64, then check jax.make_jaxpr: the scan's `length`, plus one."


@exercise("strategies.host_chunk_size", "Small/large host chunk: (time, temp, dispatch) ratios.")
def host_chunk_size(answer: Any, *, items: int, chunks: tuple[int, int]) -> tuple[bool, str]:
    time_ratio, temp_ratio, dispatch_ratio = (float(v) for v in answer)
    # dispatches: one chunk alone is one call; more chunks are a split, a step each, a concatenation
    steps = [-(-items // c) for c in chunks]
    calls = [1 if n == 1 else n + 2 for n in steps]
    if abs(dispatch_ratio - calls[0] / calls[1]) > 0.01 * calls[0] / calls[1]:
        return False, (
            "Count the dispatches again: besides one step per chunk, the host loop makes one more "
            "call before the steps and one after them. Use the `dispatches` column of bl.compare."
        )
    if not temp_ratio < 1 and not backend_facts().fuses_temporaries:  # XLA:TPU fuses them away
        return False, "Smaller chunks hold fewer intermediates: did you divide small by large?"
    if not temp_ratio > 0:
        return False, "The temp ratio is small over large chunk's extra bytes: a positive number."
    if not time_ratio > 0:
        return False, "The time ratio is small over large chunk's seconds: a positive number."
    # the time ratio is not judged: a timing never decides a check (a busy machine can flip it)
    return True, "Right. Now explain each ratio (why is the temp ratio not small / large?)."


@exercise("ragged.wasted_fraction", "Fraction of the padded positions that are pads (0 to 1).")
def wasted_fraction(answer: Any, *, lengths: Any) -> tuple[bool, str]:
    lengths = np.asarray(lengths)
    if abs(float(answer) - (1 - lengths.sum() / (len(lengths) * lengths.max()))) < 1e-3:
        return True, "Right."
    return False, "Count pads, not data: padded is batch x longest; data fills sum(lengths)."


@exercise("ragged.masked_mean", "my_masked_mean(x, mask): NaN-free, 0.0 for an empty row.")
def masked_mean_exercise(answer: Callable, *, x: Any, mask: Any) -> tuple[bool, str]:
    x, mask = jnp.asarray(x), jnp.asarray(mask)
    rows = [np.asarray(x[i])[np.asarray(mask[i])] for i in range(x.shape[0])]
    expected = np.array([r.mean() if len(r) else 0.0 for r in rows], dtype=np.float32)
    got = np.asarray(jax.jit(answer)(x, mask))
    if got.shape != expected.shape:
        return False, f"Your result has shape {got.shape}; reduce over axis 1: one number per row."
    if not np.allclose(got, expected, rtol=1e-5, atol=1e-6):
        return False, "Not the per-item mean: do pads leak in? An empty row gives 0.0, not 0/0."
    if not np.all(np.isfinite(np.asarray(jax.grad(lambda x: jnp.sum(answer(x, mask)))(x)))):
        return False, (
            "The value is right but the gradient has NaN: a `where` after a division by 0 still "
            "differentiates that division. Make the division itself safe."
        )
    return True, "Correct, including empty rows and a NaN-free gradient (the 'double where' trick)."


@exercise("ragged.predict_compiles", "Compilations unpadded and bucketed: (raw, bucketed).")
def predict_compiles(answer: Any, *, lengths: Any, boundaries: Any) -> tuple[bool, str]:
    raw, bucketed = (int(v) for v in answer)
    if raw != len(np.unique(lengths)):
        return False, "Raw count is off: jit compiles once per distinct input shape, not per call."
    if bucketed != len(np.unique(np.searchsorted(boundaries, lengths))):
        return False, "Bucketed count is off: only boundaries that receive an item make a shape."
    return True, "Right: one compilation per distinct shape; bucketing caps it at used buckets."


@exercise("ragged.three_boundaries", "3 bucket boundaries within 5% of the best padded size.")
def three_boundaries(answer: Any, *, lengths: Any) -> tuple[bool, str]:
    lengths, b = np.asarray(lengths), [int(v) for v in answer]
    if len(b) != 3 or b != sorted(set(b)) or b[-1] < lengths.max():
        return False, "Give 3 increasing ints, the last >= the longest, e.g. [32, 128, 1601]."
    best = padded_elements(lengths, optimal_boundaries(lengths, 3))
    mine = padded_elements(lengths, b)
    if mine <= 1.05 * best:
        return True, f"Within {mine / best - 1:.1%} of the optimum found by dynamic programming."
    return False, (
        f"Your boundaries pad {mine / best:.2f}x as much as the best 3. Most items are short: "
        "does your first bucket end close to where most lengths are?"
    )


@exercise("ragged.long_item", "One long item's flop factors: (padded_factor, packed_factor).")
def long_item(answer: Any, *, lengths: Any, extra: int) -> tuple[bool, str]:
    lengths = np.asarray(lengths)
    padded = (len(lengths) + 1) * max(int(lengths.max()), extra) / (len(lengths) * lengths.max())
    packed = (lengths.sum() + extra) / lengths.sum()
    a_padded, a_packed = (float(v) for v in answer)
    if not 0.5 <= a_padded / padded <= 2:
        return False, "The padded factor is off: a mask computes items x longest; and now?"
    if not 0.5 <= a_packed / packed <= 2:
        return False, "The packed factor is off: packing costs the sum of the lengths, no more."
    return True, "Right."


@exercise("ragged.batch_size_change", "New batch_size: compiles, filler_rows, batches (a dict).")
def batch_size_change(
    answer: Any, *, lengths: Any, boundaries: Any, old: int, new: int
) -> tuple[bool, str]:
    hints = {
        "compiles": "What decides a compiled shape: the number of batches, or (batch_size, "
        "boundary)?",
        "filler_rows": "Filler rows only fill up each bucket's last batch: at most "
        "batch_size - 1 per bucket.",
        "batches": "Each bucket is cut into ceil(items / batch_size) batches.",
    }
    if not isinstance(answer, dict) or set(answer) != set(hints):
        return False, "Answer with a dict: {'compiles': ..., 'filler_rows': ..., 'batches': ...}."
    counts = np.bincount(np.searchsorted(boundaries, lengths))
    counts = counts[counts > 0]  # items per bucket that receives any

    def epoch(bs: int) -> dict[str, int]:
        filler, batches = int(np.sum(-counts % bs)), int(np.sum(-(-counts // bs)))
        return {"compiles": len(counts), "filler_rows": filler, "batches": batches}

    before, after = epoch(old), epoch(new)
    words = ("fewer", "same", "more")
    said = {k: str(answer[k]).strip().lower() for k in hints}
    wrong = [k for k in hints if said[k] != direction(after[k], before[k], 0, words)]
    if wrong:
        return False, " ".join(hints[k] for k in wrong)
    return True, "Right."
