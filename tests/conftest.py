"""Shared test settings: JAX's strictness on, one array-comparison helper, benchmark loading."""

from __future__ import annotations

import functools
import importlib.util
import signal
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import batchlab

# A process a non-interactive shell starts in the background (`make test &`, a CI lane, nohup)
# has SIGINT ignored, and Python then installs no KeyboardInterrupt handler: Ctrl-C tests
# (run_batches, the launcher) would see nothing. Give the tests the handler a terminal run has;
# children started from here get SIGINT at its default again (a handler is reset on exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# A mask of shape (batch,) against values (batch, seq) would silently
# broadcast; make rank promotion an error in the kit's own tests.
jax.config.update("jax_numpy_rank_promotion", "raise")


def tolerance(dtype) -> dict[str, float]:
    """rtol/atol by dtype, from the backend's facts: float64 tight, float32 that of the backend's
    default matmul precision (one bf16 pass on a TPU), 16-bit floats loose, the rest exact."""
    return batchlab.backend_facts().tolerance(dtype)


def assert_close(actual, expected) -> None:
    """Compares two pytrees of arrays leaf by leaf, tolerance from the dtype."""
    a_leaves, a_tree = jax.tree_util.tree_flatten(actual)
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    assert a_tree == e_tree, f"pytree structure differs: {a_tree} vs {e_tree}"
    for a, e in zip(a_leaves, e_leaves, strict=True):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
        np.testing.assert_allclose(a, e, **tolerance(e.dtype))


@pytest.fixture(params=["plain", "jit"])
def maybe_jit(request):
    """Parametrizes a test over [identity, jax.jit]."""
    return (lambda f: f) if request.param == "plain" else jax.jit


@functools.cache
def load_benchmark(name: str):
    """The script ``benchmarks/<name>.py`` as a module, loaded once (code the package left)."""
    path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def fails_on_five(x):
    """One item through a host callback that raises for the value 5 (an error JAX logs)."""

    def host(v):
        if np.any(np.asarray(v) == 5.0):
            raise ValueError("item 5 is bad")
        return np.asarray(v) * 2

    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(host, out, x, vmap_method="sequential")
