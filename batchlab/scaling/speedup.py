"""One program over growing device counts (11): what sharding the batch buys, measured."""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from batchlab._util.backend import backend_facts
from batchlab._util.checks import (
    check_array_tree,
    check_callable,
    check_positive_int,
    check_positive_ints,
)
from batchlab._util.format import Rows, format_bytes, format_seconds
from batchlab.measuring.plan import memory_estimate
from batchlab.measuring.sampler import interleaved
from batchlab.measuring.timing import time_alone
from batchlab.scaling.sharding import batch_size_of, replicate, shard_batch


@dataclass(frozen=True)
class ScalingPoint:
    """One device count: per-device compiled memory, run time, and whether the result matched."""

    n_devices: int
    rows_per_device: int
    argument_bytes: int
    temp_bytes: int
    peak_bytes: int
    seconds: float
    matches_single_device: bool


@dataclass(frozen=True)
class Scaling(Rows):
    """``fn`` on one batch sharded over 1, 2, 4, ... devices (see :func:`measure_scaling`)."""

    n_items: int
    points: tuple[ScalingPoint, ...]

    # run time last, under a wide header: sanitized timings never shift the other columns
    _header = ("devices", "rows/device", "argument/device", "temp/device", "peak/device",
               "equals 1 device", "run time (wall clock)")  # fmt: skip

    def _title(self) -> str:
        return (
            f"a batch of {self.n_items}; per-device memory: compiled memory analysis of the "
            "partitioned program (XLA); run time: median of interleaved wall-clock rounds around "
            "jax.block_until_ready"
        )

    def _rows(self) -> list[tuple]:
        return [
            (p.n_devices, p.rows_per_device, format_bytes(p.argument_bytes),
             format_bytes(p.temp_bytes), format_bytes(p.peak_bytes), p.matches_single_device,
             format_seconds(p.seconds))
            for p in self.points
        ]  # fmt: skip


def measure_scaling(
    fn: Callable,
    x: Any,
    device_counts: Sequence[int],
    *,
    params: tuple = (),
    devices: Sequence[Any] | None = None,
    repeat: int = 5,
) -> Scaling:
    """``fn(x, *params)`` with ``x`` sharded over each of ``device_counts``, against one device.

    Args:
      fn: a function of the batch returning one result per item (a leading axis of the items).
      x: the batch: an array or a pytree of arrays sharing the leading (items) axis.
      device_counts: the device counts to compare, e.g. ``[1, 2, 4, 8]``.
      params: further arguments of ``fn``, replicated whole on every device.
      devices: the devices to use (default ``jax.devices()``); the reference runs on the first.
      repeat: timing rounds per device count.

    Returns:
      A :class:`Scaling`: per device count its rows, argument, temp and peak bytes per device,
      its median run time and whether its result matches one device's.

    Raises:
      TypeError: ``fn`` is not callable, ``device_counts`` / ``repeat`` not ints, or ``x`` /
        ``params`` a leaf that is not an array or a number.
      ValueError: a count below 1 or above the devices, ``repeat`` below 1, leaves of ``x`` of
        different leading sizes, ``fn`` not returning one result per item, or a call from one
        of several processes.
    """
    check_callable(fn)
    check_positive_ints(device_counts, "device_counts")
    check_positive_int(repeat, "repeat")
    n_items = batch_size_of(x)
    check_array_tree(params, "params")
    shapes = [o.shape for o in jax.tree.leaves(jax.eval_shape(fn, x, *params))]
    if any(shape[:1] != (n_items,) for shape in shapes):
        raise ValueError(
            f"`fn` must return one result per item (a leading axis of {n_items}, as `x` has), "
            f"got outputs of shape {', '.join(map(str, shapes)) or 'none'}: a function that "
            "reduces over the batch (e.g. b.mean()) would average the padding rows each device "
            "gets in too. Return per-item results (b * 2; b.mean(axis=1) for items that are "
            "rows) and reduce over the items after."
        )
    devices = list(jax.devices() if devices is None else devices)
    if jax.process_count() > 1:
        raise ValueError(
            f"`measure_scaling` compares with one device of one process, got "
            f"{jax.process_count()} processes; call it in a single process (several processes: "
            "shard_batch and jax.jit inside the job, as notebook 11's two_process_job does)."
        )
    bad = [n for n in device_counts if n > len(devices)]
    if bad:
        raise ValueError(
            f"`device_counts` holds {bad[0]!r}, but there are {len(devices)} device(s); use "
            f"counts from 1 to {len(devices)} (on CPU, simulate more with "
            "XLA_FLAGS=--xla_force_host_platform_device_count=8 before JAX starts)."
        )
    # the reference runs on the first of the devices compared (not the default backend's device)
    x_ref, params_ref = jax.device_put((x, tuple(params)), devices[0])
    ref_leaves = jax.tree_util.tree_leaves(jax.device_get(jax.jit(fn)(x_ref, *params_ref)))
    tolerance = backend_facts(devices[0].platform).tolerance()  # its float32 matmul precision
    jitted, plans, rows, same, calls = jax.jit(fn), {}, {}, {}, {}
    for n in device_counts:
        mesh = jax.make_mesh((n,), ("batch",), devices=devices[:n])
        sb = shard_batch(x, mesh)
        args = (sb.values, *replicate(params, mesh))
        plans[n], rows[n] = memory_estimate(fn, *args), sb.items_per_device
        out = jax.device_get(sb.unpad(jitted(*args)))
        pairs = zip(jax.tree_util.tree_leaves(out), ref_leaves, strict=False)
        same[n] = all(np.allclose(a, b, **tolerance) for a, b in pairs)
        calls[str(n)] = functools.partial(jitted, *args)
    if len(calls) > 1:  # every count in every round: a load burst slows them all alike
        seconds = {k: v.median for k, v in interleaved(calls, rounds=max(repeat, 2)).items()}
    else:  # one count: nothing to compare
        ((k, call),) = calls.items()
        seconds = {k: statistics.median(time_alone(call, repeat, 2.0))}
    points = [
        ScalingPoint(n, rows[n], plans[n].argument_bytes, plans[n].temp_bytes,
                     plans[n].planned_bytes, seconds[str(n)], bool(same[n]))
        for n in device_counts
    ]  # fmt: skip
    return Scaling(sb.n_items, tuple(points))
