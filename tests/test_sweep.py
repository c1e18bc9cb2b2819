"""sweep: measure over sizes, keep finished points when one fails."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import batchlab as bl
from batchlab._util.plotting import figure_to_png


def test_sweep_measures_every_value_and_plots():
    s = bl.measuring.sweep(
        lambda x: (x * 2).sum(), lambda n: (jnp.ones((n, 8)),), [1, 4, 16], repeat=3
    )
    assert s.values == [1, 4, 16]
    assert s.peak_bytes == sorted(s.peak_bytes)
    assert "planned peak" in repr(s)
    png = figure_to_png(s.plot(current=4))
    assert png[:4] == b"\x89PNG"


def test_failed_point_is_recorded_and_the_rest_kept():
    def make(n):
        if n == 8:
            raise RuntimeError("RESOURCE_EXHAUSTED: pretend out of memory")
        return (jnp.ones(n),)

    s = bl.measuring.sweep(lambda x: x.sum(), make, [2, 8, 32], repeat=2)
    assert s.values == [2, 32]
    assert len(s.failures) == 1 and "RESOURCE_EXHAUSTED" in s.failures[0].error
    assert "failed" in repr(s)


def test_first_point_usage_error_raises():
    with pytest.raises(TypeError, match="`make_args` must be a function"):
        bl.measuring.sweep(lambda x: x, 3, [1])
    with pytest.raises(TypeError, match=r"`args\[0\]` is a str"):
        bl.measuring.sweep(lambda x: x, lambda n: ("bad",), [1, 2])
