"""``advise``: for the user's own function, which strategy, chunk size and batch size, measured here.

Nothing is a rule of thumb. Each applicable candidate is built
(:mod:`batchlab.advisor.candidates`), planned by XLA, timed on this machine
(repeated samples, wall clock around ``jax.block_until_ready``) and run once
more in a fresh process to observe its real peak (:mod:`batchlab.advisor.observe`).
The fastest candidate whose peak fits the budget is chosen; candidates whose
timing spreads overlap the fastest's are *within noise* and said to be, the
choice among them made on peak memory. The batch size that fits the budget
comes from :func:`batchlab.max_batch_size` with the budget divided by the
observed / planned ratio measured here. Measurements are cached by function,
shapes and candidate, so a second call with another budget measures nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from tqdm.auto import tqdm

from batchlab._util.checks import (
    check_array_tree,
    check_bool,
    check_callable,
    check_positive_float,
    check_positive_int,
    check_positive_ints,
)
from batchlab.advisor.candidates import Candidate, dense_candidates, ragged_candidates
from batchlab.advisor.choice import KNOWN, decide, fit_budget
from batchlab.advisor.observe import observe
from batchlab.advisor.report import Advice, CandidateResult
from batchlab.claims.evidence import Samples
from batchlab.measuring.timing import autorange, sample
from batchlab.ragged.datasets import TokenDataset
from batchlab.ragged.padding import Ragged, as_ragged
from batchlab.runs.budget import Budget, default_budget

STRATEGIES = ("vmap", "chunked", "host")
_CACHE: dict[tuple, tuple[Any, dict]] = {}


def clear_cache() -> None:
    """Forgets every measurement :func:`advise` cached (by function, shapes and candidate)."""
    _CACHE.clear()
    KNOWN.clear()


def _signature(tree: Any) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return (str(treedef), tuple((tuple(np.shape(x)), str(np.asarray(x).dtype)) for x in leaves))


def _check_in_axes(in_axes: Any, example: Any) -> None:
    if in_axes is None:
        return
    ok_int = isinstance(in_axes, int) and not isinstance(in_axes, bool) and in_axes == 0
    ok_tuple = isinstance(in_axes, tuple) and all(
        a is None or (isinstance(a, int) and not isinstance(a, bool) and a == 0) for a in in_axes
    )
    if not (ok_int or ok_tuple) or (ok_tuple and 0 not in in_axes):
        raise ValueError(
            f"`in_axes` must be None (`example` is one item), 0, or a tuple of 0 (batched along "
            f"the leading axis) and None (shared) with at least one 0, got in_axes={in_axes!r}; "
            f"e.g. in_axes=(0, None) for fn(x, weights)."
        )
    if ok_tuple and (not isinstance(example, tuple) or len(example) != len(in_axes)):
        raise ValueError(
            f"with in_axes={in_axes!r}, `example` must be the tuple of fn's {len(in_axes)} "
            f"arguments (batched ones with the batch first), got {type(example).__name__}."
        )


def _batch_length(example: Any, in_axes: Any) -> int:
    batched = (
        [a for a, ax in zip(example, in_axes, strict=True) if ax == 0]
        if isinstance(in_axes, tuple)
        else [example]
    )
    sizes = {
        np.shape(x)[0] if np.ndim(x) else None
        for a in batched
        for x in jax.tree_util.tree_leaves(a)
    }
    if len(sizes) != 1 or None in sizes:
        raise ValueError(
            f"`example` is a batch (in_axes={in_axes!r}), so every batched leaf needs the same "
            f"leading size; got sizes {sorted(map(str, sizes))}."
        )
    return int(sizes.pop())


def _item_of(example: Any, in_axes: Any) -> Any:
    """One item as max_batch_size takes it: the item, or the tuple of (item or shared) arguments."""
    take = lambda a: jax.tree_util.tree_map(lambda x: np.asarray(x)[0], a)  # noqa: E731
    if isinstance(in_axes, tuple):
        return tuple(take(a) if ax == 0 else a for a, ax in zip(example, in_axes, strict=True))
    return take(example)


def _batch_of(example: Any, in_axes: Any, b: int) -> tuple:
    """The arguments of one batch of ``b`` items (host arrays)."""
    if in_axes is None:  # one item: the batch repeats it
        return (jax.tree_util.tree_map(lambda x: np.repeat(np.asarray(x)[None], b, 0), example),)
    cut = lambda a: jax.tree_util.tree_map(lambda x: np.asarray(x)[:b], a)  # noqa: E731
    if isinstance(in_axes, tuple):
        return tuple(cut(a) if ax == 0 else a for a, ax in zip(example, in_axes, strict=True))
    return (cut(example),)


def _time(c: Candidate, share: float) -> Samples:
    """Repeated samples of one whole call, per item (the first call, which compiles, apart)."""
    args = jax.tree_util.tree_map(
        lambda a: jax.device_put(a) if isinstance(a, np.ndarray) else a, c.args
    )
    call = lambda: c.run(*args)  # noqa: E731
    jax.block_until_ready(call())
    number = autorange(call, 0.005, max_time=share)
    samples, start = [], time.perf_counter()
    while len(samples) < 3 or (len(samples) < 15 and time.perf_counter() - start < share):
        samples.append(sample(call, number) / c.items)
    return Samples(c.label, samples, "wall clock around jax.block_until_ready, per item")


def _check(
    fn,
    example,
    budget,
    in_axes,
    batch_size,
    chunk_sizes,
    strategies,
    max_seconds,
    observe_,
    packed_fn,
):
    check_callable(fn)
    ragged = isinstance(example, (Ragged, TokenDataset))
    if ragged:
        if in_axes is not None:
            raise ValueError(
                "`in_axes` does not apply to ragged input: `fn(values, mask)` takes one padded "
                f"item; got in_axes={in_axes!r}. Leave it None."
            )
        if len(as_ragged(example)) == 0:
            raise ValueError("`example` holds no items: the advisor needs a workload to measure.")
    else:
        check_array_tree(example, "example")
        _check_in_axes(in_axes, example)
        if packed_fn is not None:
            raise ValueError(
                "`packed_fn` is for ragged input (a bl.Ragged or a TokenDataset) only."
            )
    if budget is not None and not isinstance(budget, Budget):
        check_positive_int(budget, "budget")
    check_positive_int(batch_size, "batch_size", allow_none=True)
    if chunk_sizes is not None:
        check_positive_ints(chunk_sizes, "chunk_sizes")
    if (
        isinstance(strategies, str)
        or not all(s in STRATEGIES for s in strategies)
        or not strategies
    ):
        raise ValueError(
            f"`strategies` must be a non-empty list drawn from {STRATEGIES}, got {strategies!r}."
        )
    check_positive_float(max_seconds, "max_seconds")
    check_bool(observe_, "observe")
    if packed_fn is not None:
        check_callable(packed_fn, "packed_fn")
    return ragged


def advise(
    fn: Callable,
    example: Any,
    budget: int | Budget | None = None,
    *,
    in_axes: Any = None,
    batch_size: int | None = None,
    chunk_sizes: Sequence[int] | None = None,
    strategies: Sequence[str] = STRATEGIES,
    n_buckets: int = 4,
    packed_fn: Callable | None = None,
    max_seconds: float = 30.0,
    observe_peaks: bool = True,
    progress: bool = True,
    cache: bool = True,
) -> Advice:
    """Measures every applicable way to batch ``fn`` on this machine and says which to use, and why.

    Dense input: ``vmap``, ``jax.lax.map(..., batch_size=k)`` for each ``k`` of
    ``chunk_sizes`` (``"chunked"``) and host chunks (the middle ``k``). Ragged
    input (a :class:`batchlab.Ragged` or the shipped :class:`TokenDataset`):
    pad to the longest item, ``n_buckets`` optimal buckets (fixed-shape batches
    of ``batch_size`` rows), and packing when ``packed_fn`` is given. Each is
    timed (time per item: one call's wall-clock samples / items), planned by
    XLA, and observed in a fresh process. The fastest whose peak fits
    ``budget`` is recommended; candidates within noise of it (spreads overlap)
    are named, the least peak memory among them chosen.

    Args:
      fn: dense: the per-item function (``in_axes=None``) or the function
        ``jax.vmap(fn, in_axes)`` maps; ragged: ``fn(values, mask)`` of one padded item.
      example: one item (``in_axes=None``, the batch repeats it), a batch (with
        ``in_axes`` 0 or a tuple of 0 / None: the tuple of ``fn``'s arguments),
        or ragged data.
      budget: bytes (or a ``bl.runs.Budget``); ``None``: :func:`batchlab.default_budget`.
      in_axes: ``None`` (``example`` is one item), ``0`` or a tuple of 0 / None.
      batch_size: items per measured batch (dense; default: the example batch, or 256
        for one item), rows per batch (ragged; default 64).
      chunk_sizes: chunk sizes to try (default: batch / 32, / 8, / 2).
      strategies: drawn from ``("vmap", "chunked", "host")`` (dense only).
      n_buckets: ragged: how many optimal length buckets.
      packed_fn: ragged: ``packed_fn(values, segment_ids, num_segments)``, the packed version.
      max_seconds: the time limit, checked between candidates (a compile under
        way finishes); what did not fit is listed as not measured.
      observe_peaks: run each candidate in a fresh process to observe its peak.
      progress: show a progress bar (``TQDM_DISABLE=1`` hides it too).
      cache: reuse this session's measurements of the same fn, shapes and candidate.

    Returns:
      An :class:`Advice` (``.code``, ``.why``, ``.plot()``, ``.budget_bytes_used``).

    Raises:
      TypeError: ``fn``/``packed_fn`` not callable, ``example`` not arrays, a size not an int.
      ValueError: bad ``in_axes``, ``strategies``, sizes or a ragged workload with no items;
        ``batch_size`` larger than the example batch. All before anything is measured.

    Example:
      >>> import jax.numpy as jnp
      >>> a = advise(lambda x: jnp.tanh(x).sum(), jnp.ones(8), 2**20, batch_size=64,
      ...            chunk_sizes=[8], max_seconds=5, observe_peaks=False, progress=False)
      >>> [c.label for c in a.candidates], a.recommended in ("vmap", "lax.map chunk 8", "host chunk 8")
      (['vmap', 'lax.map chunk 8', 'host chunk 8'], True)
    """
    ragged = _check(
        fn,
        example,
        budget,
        in_axes,
        batch_size,
        chunk_sizes,
        strategies,
        max_seconds,
        observe_peaks,
        packed_fn,
    )
    start = time.perf_counter()
    deadline = start + max_seconds
    if ragged:
        data = as_ragged(example)
        b = check_positive_int(batch_size, "batch_size", allow_none=True) or 64
        n_buckets = check_positive_int(n_buckets, "n_buckets")
        items_sig = ("ragged", hash(data.lengths.tobytes()), str(data.flat.dtype), b, n_buckets)
    else:
        if in_axes is not None:
            have = _batch_length(example, in_axes)
            b = batch_size or have
            if b > have:
                raise ValueError(
                    f"`batch_size`={b} is larger than the example batch ({have} items); pass a "
                    f"smaller batch_size or a bigger example (or one item with in_axes=None)."
                )
        else:
            b = batch_size or 256
        item = example if in_axes is None else _item_of(example, in_axes)
        try:  # abstract evaluation: the user's own error, before anything is measured
            jax.eval_shape(fn, *item) if isinstance(in_axes, tuple) else jax.eval_shape(fn, item)
        except Exception as e:
            raise TypeError(
                f"`fn` cannot be called on one item of `example` (in_axes={in_axes!r}): "
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            ) from e
        sizes = (
            sorted({max(1, b // 32), max(1, b // 8), max(1, b // 2)})
            if chunk_sizes is None
            else sorted(set(chunk_sizes))
        )
        if any(k > b for k in sizes):
            raise ValueError(f"`chunk_sizes` must be at most batch_size={b}, got {sizes}.")
        items_sig = ("dense", _signature(example), str(in_axes), b)
    budget = (
        budget
        if isinstance(budget, Budget)
        else default_budget()
        if budget is None
        else Budget(int(budget), "given")
    )
    bar = tqdm(total=4, desc="advise: building candidates", disable=not progress, leave=False)
    if ragged:
        cands = ragged_candidates(fn, data, b, n_buckets, packed_fn)
    else:
        axes = 0 if in_axes is None else in_axes
        args = _batch_of(example, in_axes, b)
        cands = dense_candidates(fn, args, axes, b, sizes, list(strategies))
    bar.total = len(cands) + 3
    bar.update(1)
    results: dict[str, dict] = {}
    notes: list[str] = []
    for c in cands:
        key = (id(fn), *items_sig, c.label)
        hit = _CACHE.get(key) if cache else None
        if hit is not None and hit[0] is fn:
            results[c.label] = dict(hit[1])
        elif time.perf_counter() < deadline:
            bar.set_description(f"advise: timing {c.label}")
            share = max(0.05, min(0.5, (deadline - time.perf_counter()) / (4 * len(cands))))
            try:
                results[c.label] = {"per_item": _time(c, share), "error": None}
            except Exception as e:  # e.g. out of memory at this batch: the others still count
                results[c.label] = {
                    "per_item": None,
                    "error": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}",
                }
        else:
            results[c.label] = {"per_item": None, "error": "not measured: max_seconds reached"}
        bar.update(1)
    to_observe = [
        c
        for c in cands
        if results[c.label]["per_item"] is not None and "observed" not in results[c.label]
    ]
    left = deadline - time.perf_counter()
    if observe_peaks and to_observe and left > 2:
        bar.set_description("advise: observing peaks in a fresh process")
        seen = observe(to_observe, left)
        for c in to_observe:
            results[c.label]["observed"] = seen.get(c.label, (None, "not observed"))
    elif observe_peaks and to_observe:
        notes.append("peaks not observed: max_seconds reached before the fresh process could run")
    bar.update(1)
    for c in cands:  # cached by function, shapes and candidate, whatever the budget
        r = results[c.label]
        if cache and r.get("per_item") is not None:
            _CACHE[(id(fn), *items_sig, c.label)] = (fn, dict(r))
    out = tuple(
        CandidateResult(
            c.label,
            c.strategy,
            c.chunk_size,
            c.items,
            results[c.label]["per_item"],
            c.planned_bytes,
            *results[c.label].get("observed", (None, "not observed (observe_peaks=False)")),
            c.code,
            results[c.label]["error"],
        )
        for c in cands
    )
    advice = decide(fn, out, budget, "ragged" if ragged else "dense", b, notes, start)
    if not ragged and advice.best is not None:
        bar.set_description("advise: fitting the budget")
        advice = fit_budget(advice, fn, example, in_axes, deadline, items_sig)
    bar.update(1)
    bar.close()
    return advice


__all__ = ["STRATEGIES", "advise", "clear_cache"]
