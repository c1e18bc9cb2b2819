"""sweep: measure one function over batch sizes."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import batchlab as bl


def test_sweep_measures_every_value():
    s = bl.measuring.sweep(
        lambda x: (x * 2).sum(), lambda n: (jnp.ones((n, 8)),), [1, 4, 16], repeat=3
    )
    assert s.values == [1, 4, 16] and [p.value for p in s.points] == [1, 4, 16]
    assert s.peak_bytes == [p.measurement.memory.planned_bytes for p in s.points]
    assert s.peak_bytes == sorted(s.peak_bytes) and s.peak_bytes[0] < s.peak_bytes[-1]


def test_usage_errors_raise():
    with pytest.raises(TypeError, match="`make_args` must be a function"):
        bl.measuring.sweep(lambda x: x, 3, [1])
    with pytest.raises(TypeError, match=r"`args\[0\]` is a str"):
        bl.measuring.sweep(lambda x: x, lambda n: ("bad",), [1, 2])
    with pytest.raises(ValueError, match=r"`values` must be .*positive ints.*got \[4, 0\]"):
        bl.measuring.sweep(lambda x: x, lambda n: (jnp.ones(n),), [4, 0])
