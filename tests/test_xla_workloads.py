"""Allocation traces from XLA's buffer assignment of real programs (batchlab.allocator.xla_workloads)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import batchlab as bl
from batchlab import allocator as A
from batchlab.allocator import xla_workloads as X

SMALL = dict(d_model=64, d_hidden=256, max_len=256, len_step=64)


def test_per_item_and_batched_count_what_calls_allocate():
    per_item = X.per_item_workload(12, **SMALL)
    batched = X.batched_workload(12, batch_size=4, **SMALL)
    assert per_item.calls == 12 and batched.calls == 3
    per_call = {len(p.launch_allocations()) for p in per_item.plans.values()}
    (plan,) = batched.plans.values()
    assert per_call == {len(plan.launch_allocations())} == {2}  # one output + one temp block
    assert per_item.call_allocations == 2 * 12 and batched.call_allocations == 2 * 3
    assert len(per_item.plans) == len(set(X.item_lengths(12, 256, 64)))


def test_temp_is_freed_at_the_end_of_each_call_and_inputs_after():
    t = X.batched_workload(4, batch_size=2, **SMALL).events
    kinds = [(e.kind, e.owner or "") for e in t.events][:6]
    assert kinds[:2] == [("alloc", "weights"), ("alloc", "weights")]
    assert kinds[2][1].startswith("input") and kinds[3][1].startswith("result")
    assert kinds[4][1].startswith("temp") and kinds[5] == ("free", "")


def test_replays_at_realistic_scale_are_cheap_and_fixed_shapes_reuse():
    batched = X.batched_workload(16, batch_size=4, **SMALL).events
    scan = A.capacity_scan(batched, headrooms=(1.0, 1.01, 1.5))
    assert scan.smallest is not None and scan.overhead <= 1.01


def test_training_with_and_without_donation():
    plain = X.training_workload([128] * 3, donate=False, d_model=64, d_hidden=256)
    donated = X.training_workload([128] * 3, donate=True, d_model=64, d_hidden=256)
    assert (
        plain.call_allocations > donated.call_allocations
    )  # new params are outputs only without donation
    for t in (plain, donated):
        assert A.capacity_scan(t.events, headrooms=(2.0,)).fits == (True,)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"`max_len`=100 must be a multiple"):
        X.item_lengths(4, 100, 64)
    with pytest.raises(ValueError, match=r"`n_items`"):
        X.item_lengths(-1, 128, 64)
    with pytest.raises(ValueError, match=r"`batch_size`"):
        X.batched_workload(4, batch_size=0, **SMALL)
    with pytest.raises(
        ValueError,
        match=r"`batch_tokens` must be a non-empty list of positive ints, .*got \[128, 0\]",
    ):
        X.training_workload([128, 0], donate=False)


def four_sorts(x):
    return sum(jnp.sort(x * (i + 1)).sum() for i in range(4))


def test_cpu_buffer_assignment_in_process_and_with_a_cpu_flag_in_a_cpu_child():
    spec = jax.ShapeDtypeStruct((1 << 16,), jnp.float32)
    here = X.cpu_buffer_assignment(four_sorts, spec)
    plain = bl.buffer_assignment(four_sorts, spec)
    assert here.backend == "cpu" and here.allocations == plain.allocations
    flag = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
    frugal = X.cpu_buffer_assignment(four_sorts, spec, xla_flags=flag)
    assert frugal.backend == "cpu" and frugal.op_names and frugal.sequence
    assert frugal.temp_bytes < here.temp_bytes  # the flag reached XLA:CPU in the child


def test_cpu_buffer_assignment_refuses_bad_flags():
    spec = jax.ShapeDtypeStruct((8,), jnp.float32)
    with pytest.raises(TypeError, match=r"`xla_flags` must be a string like"):
        X.cpu_buffer_assignment(four_sorts, spec, xla_flags=["--xla_foo"])
    with pytest.raises(RuntimeError, match=r"compiling for the CPU with XLA_FLAGS='--xla_no_such"):
        X.cpu_buffer_assignment(four_sorts, spec, xla_flags="--xla_no_such_flag=1")
