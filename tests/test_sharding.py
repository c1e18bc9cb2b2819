"""Tests for batchlab.scaling.sharding: same result as one device, uneven batches padded and masked.

The test process's JAX backend already started with one CPU device, so the
multi-device checks run in a fresh subprocess that simulates 8 devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=8``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close

from batchlab import measure_scaling, shard_batch
from batchlab.scaling.sharding import ShardedBatch, replicate

MESH = jax.make_mesh((1,), ("batch",))


@pytest.mark.parametrize("n", [0, 1, 5, 8])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.int32, jnp.bfloat16])
def test_one_device_roundtrip(n, dtype, maybe_jit):
    x = jnp.arange(n * 3).reshape(n, 3).astype(dtype)
    sb = shard_batch(x, MESH)
    assert isinstance(sb, ShardedBatch) and sb.n_items == n and sb.n_padding == 0
    assert sb.values.dtype == dtype and sb.mask.dtype == jnp.bool_
    assert_close(sb.unpad(maybe_jit(lambda v: v * 2)(sb.values)), x * 2)


def test_numpy_and_pytree_inputs():
    sb = shard_batch({"a": np.ones((4, 2), np.float32), "b": np.arange(4)}, MESH)
    assert sb.values["a"].shape == (4, 2) and isinstance(sb.values["b"], jax.Array)
    assert "4 items + 0 padding" in repr(sb)


def test_the_batch_axis_of_the_mesh():
    sb = shard_batch(jnp.ones((3, 2)), MESH)
    assert sb.sharding.spec == jax.sharding.PartitionSpec("batch") and sb.n_devices == 1


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(x=jnp.ones((3, 2)), mesh="cpu"), TypeError, "`mesh` must be a jax.sharding.Mesh"),
        (dict(x=jnp.ones((3, 2)), mesh=None), TypeError, "`mesh` must be a jax.sharding.Mesh"),
        (
            dict(x=jnp.ones((2, 2)), mesh=jax.make_mesh((1,), ("data",))),
            TypeError,
            r"with a 'batch' axis .*, got \('data',\)",
        ),
        (dict(x=jnp.ones(())), ValueError, r"`x` must be .*got leading sizes \{None\}"),
        (
            dict(x={"a": jnp.ones((3, 2)), "b": jnp.ones((4,))}),
            ValueError,
            r"same leading \(batch\) axis, got leading sizes \{3, 4\}",
        ),
        (dict(x=[]), ValueError, r"got leading sizes none \(no arrays\)"),
        (dict(x=["text"]), TypeError, r"`x\[0\]` is a str"),
    ],
)
def test_bad_inputs(kwargs, error, match):
    with pytest.raises(error, match=match):
        shard_batch(**{"mesh": MESH, **kwargs})


def test_measure_scaling_one_device_and_errors():
    s = measure_scaling(
        lambda b, w: jnp.tanh(b @ w), jnp.ones((6, 4)), [1], params=(jnp.ones((4, 3)),), repeat=1
    )
    assert s.points[0].matches_single_device and s.points[0].rows_per_device == 6
    assert "equals 1 device" in repr(s)
    with pytest.raises(ValueError, match="`device_counts` holds 2, but there are 1 device"):
        measure_scaling(lambda b: b, jnp.ones((2, 2)), [2])
    with pytest.raises(TypeError, match="`fn` must be a function"):
        measure_scaling(None, jnp.ones((2, 2)), [1])


def test_replicate_keeps_values():
    w = replicate(jnp.arange(3.0), jax.make_mesh((1,), ("batch",)))
    assert_close(w, jnp.arange(3.0))


MULTI_DEVICE = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from batchlab import shard_batch, measure_scaling, memory_estimate
    assert jax.device_count() == 8, jax.devices()
    f = jax.jit(lambda b, w: jnp.tanh(b @ w))
    w = jnp.linspace(-1, 1, 16 * 32).reshape(16, 32)
    for n in (0, 1, 7, 8, 13, 64, 1001):
        x = jnp.sin(jnp.arange(n * 16, dtype=jnp.float32)).reshape(n, 16)
        sb = shard_batch(x, jax.make_mesh((8,), ("batch",)))
        assert sb.n_items == n and sb.padded_items % 8 == 0 and 0 <= sb.n_padding < 8, sb
        assert int(sb.mask.sum()) == n                       # nothing dropped, padding masked
        shards = sb.values.addressable_shards
        assert len(shards) == 8 and {s.data.shape[0] for s in shards} == {sb.items_per_device}
        assert len({s.device for s in shards}) == 8          # one slice per device
        np.testing.assert_allclose(sb.unpad(f(sb.values, w)), f(x, w), rtol=1e-5, atol=1e-6)
        # a masked reduction over the padded, sharded batch equals the plain one
        total = jax.jit(lambda v, m: jnp.where(m[:, None], v, 0.0).sum())(sb.values, sb.mask)
        np.testing.assert_allclose(total, x.sum(), rtol=1e-4, atol=1e-4)
    # sharding a pytree on a 2-device sub-mesh
    mesh = jax.make_mesh((2,), ("batch",), devices=jax.devices()[:2])
    sb = shard_batch({"x": np.ones((5, 3), np.float32), "i": np.arange(5)}, mesh)
    assert sb.n_devices == 2 and sb.padded_items == 6 and sb.values["i"].tolist() == [0, 1, 2, 3, 4, 0]
    # per-device compiled memory falls with the device count
    x = jnp.ones((1024, 16))
    s = measure_scaling(lambda b, w: jnp.tanh(b @ w), x, [1, 2, 4, 8], params=(w,), repeat=1)
    args = [p.argument_bytes for p in s.points]
    peaks = [p.peak_bytes for p in s.points]
    assert all(p.matches_single_device for p in s.points), s
    assert args == sorted(args, reverse=True) and args[0] > 4 * args[-1], args
    assert peaks == sorted(peaks, reverse=True) and peaks[0] > 4 * peaks[-1], peaks
    print("MULTI-DEVICE OK")
""")


def test_eight_simulated_devices_in_a_subprocess():
    env = dict(
        os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu"
    )
    done = subprocess.run(
        [sys.executable, "-c", MULTI_DEVICE], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "MULTI-DEVICE OK" in done.stdout, done.stderr[-3000:]


def test_one_process_has_no_per_process_layout():
    sb = shard_batch(jnp.ones((3, 2)), MESH)
    assert sb.process_items == () and sb.process_starts == ()
    assert "processes" not in repr(sb)
    # several processes: tests/test_distributed.py (2 processes x 4 devices, uneven rows)
