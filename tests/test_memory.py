"""memory_estimate, device_memory and live_memory."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import batchlab as bl
from batchlab.measuring.live import DeviceMemory
from batchlab.measuring.plan import PEAK_FROM_XLA, PEAK_NO_XLA, PEAK_SUM_ABOVE_XLA


@pytest.mark.parametrize(
    "dtype,itemsize", [(jnp.float32, 4), (jnp.float16, 2), (jnp.int8, 1), (jnp.int32, 4)]
)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)])
def test_argument_and_output_bytes_are_exact(dtype, itemsize, shape):
    x = jax.ShapeDtypeStruct(shape, dtype)
    est = bl.memory_estimate(lambda a: a + a, x)
    n = int(np.prod(shape))
    assert est.argument_bytes == n * itemsize
    assert est.output_bytes == n * itemsize
    assert est.alias_bytes == 0


def test_reduction_output_and_matmul_figures():
    est = bl.memory_estimate(lambda a, b: (a @ b).sum(), jnp.ones((64, 32)), jnp.ones((32, 16)))
    assert est.argument_bytes == (64 * 32 + 32 * 16) * 4
    assert est.output_bytes == 4
    assert est.flops is not None and est.flops >= 2 * 64 * 32 * 16
    assert est.backend == jax.default_backend()


def test_planned_from_is_named():
    est = bl.memory_estimate(lambda a: jnp.tanh(a) * 2, jnp.ones(1000))
    assert est.planned_from in (PEAK_FROM_XLA, PEAK_NO_XLA, PEAK_SUM_ABOVE_XLA)
    if est.planned_from != PEAK_FROM_XLA:
        assert (
            est.planned_bytes
            == est.argument_bytes + est.output_bytes + est.temp_bytes - est.alias_bytes
        )
    else:
        assert est.planned_bytes == est.xla_peak_bytes


def test_peak_covers_arguments_and_temps():
    """One execution holds its arguments, outputs and the temp block at once."""
    f = jax.vmap(lambda x, w: jnp.tanh(x @ w) @ jnp.ones(128), in_axes=(0, None))
    est = bl.memory_estimate(
        f,
        jax.ShapeDtypeStruct((1024, 128), jnp.float32),
        jax.ShapeDtypeStruct((128, 128), jnp.float32),
    )
    assert est.temp_bytes >= 1024 * 128 * 4
    assert est.planned_bytes >= est.argument_bytes + est.temp_bytes
    assert est.planned_bytes > 0
    assert est.source == "compiled memory analysis (XLA)"


def test_temp_grows_with_batch():
    def f(x):
        return jnp.tanh(x @ x.T).sum(1)

    small = bl.memory_estimate(f, jax.ShapeDtypeStruct((32, 16), jnp.float32))
    large = bl.memory_estimate(f, jax.ShapeDtypeStruct((256, 16), jnp.float32))
    assert large.argument_bytes == 8 * small.argument_bytes
    assert large.planned_bytes > small.planned_bytes


def test_pytrees_static_and_keyword_arguments():
    def f(params, x, *, scale, mode):
        y = params["w"] @ x + params["b"]
        return y * scale if mode == "scaled" else y

    params = {"w": jnp.ones((8, 4)), "b": jnp.ones(8)}
    jitted = jax.jit(f, static_argnames="mode")
    est = bl.memory_estimate(jitted, params, jnp.ones(4), scale=2.0, mode="scaled")
    assert est.argument_bytes == (32 + 8 + 4) * 4 + 4  # scale is a traced float32 scalar
    assert est.output_bytes == 8 * 4


def test_static_argnums_and_prejitted():
    def f(x, n):
        return jnp.tile(x, n)

    est = bl.memory_estimate(f, jnp.ones(3), 4, static_argnums=1)
    assert est.output_bytes == 12 * 4
    jitted = jax.jit(f, static_argnums=1)
    assert bl.memory_estimate(jitted, jnp.ones(3), 4).output_bytes == 12 * 4


def test_donation_shows_as_alias_bytes():
    f = jax.jit(lambda x: x * 2, donate_argnums=0)
    est = bl.memory_estimate(f, jnp.ones(1000))
    assert est.alias_bytes == 4000


def test_memory_estimate_runs_nothing():
    calls = []

    def f(x):
        jax.debug.callback(lambda: calls.append(1))
        return x + 1

    bl.memory_estimate(f, jnp.ones(3))
    assert calls == []


def test_repr_and_html_are_human():
    def double(a):
        return a * 2

    est = bl.memory_estimate(double, jax.ShapeDtypeStruct((1024,), jnp.float32))
    assert est.name == "double" and repr(est).startswith(
        f"MemoryEstimate(double on {jax.default_backend()}"
    )
    labels = [k for k, _ in est._rows()]
    assert labels == ["argument", "output", "temp", "alias", "planned", "flops", "planned from"]
    assert "argument=4.00 KiB, output=4.00 KiB" in repr(est)
    assert f"flops=1.02 k, planned from={est.planned_from}" in repr(est)  # 1,024 multiplies
    assert "compiled memory analysis" in est._repr_html_()


@pytest.mark.parametrize(
    "fn,args,err,match",
    [
        (42, (jnp.ones(3),), TypeError, "`fn` must be a function"),
        (lambda x: x, ("abc",), TypeError, r"`args\[0\]` is a str"),
        (lambda x: x, ({"a": [jnp.ones(2), object()]},), TypeError, r"`args\[0\]\['a'\]\[1\]`"),
    ],
)
def test_bad_input(fn, args, err, match):
    with pytest.raises(err, match=match):
        bl.memory_estimate(fn, *args)


def test_bad_static_specs():
    with pytest.raises(ValueError, match="`static_argnums` names argument 3"):
        bl.memory_estimate(lambda x: x, jnp.ones(2), static_argnums=3)
    with pytest.raises(TypeError, match="`static_argnums` must hold ints"):
        bl.memory_estimate(lambda x: x, jnp.ones(2), static_argnums=("a",))
    with pytest.raises(ValueError, match=r"already jax\.jit-wrapped"):
        bl.memory_estimate(jax.jit(lambda x: x), jnp.ones(2), static_argnums=0)


def test_device_memory_on_this_backend():
    stats = bl.device_memory()
    reason = bl.measuring.device_memory_unavailable_reason()
    if not bl.backend_facts().has_memory_stats:
        assert stats is None
        assert f"memory_stats() is None on {jax.default_backend()}" in reason
    else:
        assert stats is not None and stats.bytes_in_use is not None
        assert reason is None


def test_fragmentation_figure():
    stats = DeviceMemory(
        device="fake", bytes_in_use=600, pool_bytes=1000, largest_free_block_bytes=100
    )
    assert stats.room_bytes == 400
    assert stats.fragmentation == pytest.approx(0.75)
    whole = DeviceMemory(
        device="fake", bytes_in_use=600, bytes_limit=1000, largest_free_block_bytes=400
    )
    assert whole.fragmentation == 0.0
    assert DeviceMemory(device="fake", bytes_in_use=1).fragmentation is None
    assert "fragmentation=75.0%" in repr(stats)


def test_live_memory_counts_new_arrays():
    before = bl.measuring.live_memory()
    keep = jnp.zeros((1000,), jnp.float32) + 1
    after = bl.measuring.live_memory()
    assert after.live_array_bytes - before.live_array_bytes >= 4000
    assert after.host_rss_bytes is None or after.host_rss_bytes > 0
    assert "live arrays" in repr(after)
    del keep
