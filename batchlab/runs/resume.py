"""Resuming a run of :func:`batchlab.run_batches`: what the checkpoint belongs to, checked first.

:func:`open_journal` fingerprints the run (``fn``, the items, the settings
that change outputs), opens or creates its journal and checks the disk has
room for the outputs, all before any batch runs. The batch settings
(``batch_size``, ``budget_bytes``, ...) are stored beside the fingerprint,
not in it: :func:`same_settings` tells whether a resume continues at the
journal's batch size or re-sizes the rest (finished items are kept either way).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

import jax
import numpy as np

from batchlab._util.compile import function_name
from batchlab.runs.attempt import BatchRunner
from batchlab.runs.checkpoint import CheckpointError, Journal, check_room
from batchlab.runs.fingerprint import (
    Unfingerprintable,
    digest,
    fn_descriptions,
    fn_fingerprint_parts,
)
from batchlab.runs.items import Items
from batchlab.runs.planning import batch_spec

_DEFAULT_SETTINGS = {"multiple_of": 1, "tolerance": 0.0, "min_batch_size": 1, "budget_bytes": None}


def same_settings(stored: dict, settings: dict) -> bool:
    return all(stored.get(k, _DEFAULT_SETTINGS.get(k)) == v for k, v in settings.items())


def open_journal(checkpoint, fn, items, data, runner, run_name, settings, on_error) -> Journal:
    """Fingerprints the run and opens (or creates) its journal, before any batch runs.

    Raises CheckpointError for a journal of another run (in words, both ways
    on), one that cannot be created, or an ``fn`` that cannot be fingerprinted;
    ValueError when the disk lacks room for the outputs.
    """
    parts = {
        "fn": function_name(fn),
        **_fn_parts(fn, run_name),
        "items": digest(items)[:16],
        "n_items": data.n,
        "on_error": on_error,
        "check_nan": runner.check_nan,
        "batched": runner.batched,
    }
    described = {"fn": function_name(fn)}
    if run_name is None:
        with contextlib.suppress(Exception):  # words are a courtesy: the fingerprint decides
            described.update(fn_descriptions(fn))
    if not os.path.exists(checkpoint) and data.n and not runner.batched:
        # a per-item fn is traced for its shapes anyway; a batched fn is the user's own code,
        # called only for real batches (its first save says so if the disk is full)
        check_room(checkpoint, data.n * _output_bytes_per_item(runner, data))
    return Journal.open(checkpoint, parts, settings=settings, described=described)


def _fn_parts(fn: Callable, run_name: str | None) -> dict[str, str]:
    if run_name is not None:
        return {"run_name": run_name}
    try:
        return fn_fingerprint_parts(fn)
    except Unfingerprintable as e:
        raise CheckpointError(
            f"`fn` cannot be fingerprinted for the checkpoint ({e}), so a resume could not tell "
            f"whether it is the same function. Name the run instead: run_batches(..., "
            f"checkpoint=..., run_name='my-run-v1'), and change the name when fn changes."
        ) from e


def _output_bytes_per_item(runner: BatchRunner, data: Items) -> int:
    """Bytes of one item's outputs (from shapes, nothing runs); 0 when it cannot be told."""
    try:
        leaves = jax.tree_util.tree_leaves(jax.eval_shape(runner.fn, data.spec_item))
        return int(sum(np.dtype(a.dtype).itemsize * int(np.prod(a.shape)) for a in leaves))
    except Exception:
        return 0


def output_treedef(runner: BatchRunner, data: Items):
    """The structure of fn's output, to rebuild outputs read from a checkpoint."""
    try:
        spec = batch_spec(data.spec_item, 1) if runner.batched else data.spec_item
        return jax.tree_util.tree_structure(jax.eval_shape(runner.fn, spec))
    except Exception:
        return jax.tree_util.tree_structure(0)
