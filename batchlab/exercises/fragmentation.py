"""Exercises of notebooks 08 and 09 (fragmentation, buffer reuse, donation)."""

from __future__ import annotations

import jax

from batchlab.allocator import BFCAllocator
from batchlab.exercises import exercise
from batchlab.measuring.memory import memory_estimate


@exercise("fragmentation.hand_trace", "Offset of d=600 B after a, b, c of 1000 B and free b?")
def _hand_trace(answer):
    a = BFCAllocator(4096)
    for name in "abc":
        a.allocate(name, 1000)
    a.free("b")
    if answer == a.allocate("d", 600).offset:
        return True, "Right: best fit picks the 1024-byte hole b left, not the larger free tail."
    return False, (
        "Round every request up to 256 bytes and list the free chunks after `free b`: best fit "
        "takes the *smallest* free chunk that fits."
    )


@exercise("fragmentation.donation_alias", "donate_argnums aliasing exactly the parameters.")
def _donation_alias(answer, *, step, args, params_index):
    nbytes = args[params_index].nbytes
    est = memory_estimate(jax.jit(step, donate_argnums=answer), *args)
    extra = sorted(({answer} if isinstance(answer, int) else set(answer)) - {params_index})
    if est.alias_bytes == nbytes and not extra:
        return True, f"alias_bytes = {est.alias_bytes} = params.nbytes: the update is in place."
    if est.alias_bytes == nbytes:
        return False, (
            f"The parameters' bytes alias, but you also donated position(s) {extra}, which the "
            f"output cannot reuse: JAX warns and keeps them. Donate only the parameters."
        )
    return False, "Not the parameters' bytes alias: which input (from 0) does the output replace?"


@exercise("fragmentation.fixed_shape", "The workload with overhead 1.0 that is no training loop.")
def _fixed_shape(answer):
    if answer == "batched":
        return True, "One fixed shape: every freed block fits the next request exactly."
    if answer in ("per-item", "bucketed"):
        return False, "Run allocator.simulate(...) and read `overhead`: varying shapes leave holes."
    return False, "Choose among 'per-item', 'batched', 'bucketed'."


@exercise("fragmentation.growth_vs_pool", "preallocate=False: a larger, smaller or same device?")
def _growth_vs_pool(answer, *, pool, grown):
    if pool.overhead is None or grown.overhead is None:
        return False, "One of the scans found no fitting device; widen the headrooms."
    difference = grown.overhead - pool.overhead
    truth = "same" if abs(difference) < 0.005 else "larger" if difference > 0 else "smaller"
    if str(answer).strip().lower() != truth:
        return False, "Draw the memory map with preallocate=False: can a free chunk span regions?"
    return True, "Right; compare the memory maps to see where the regions went."


@exercise("fragmentation.loop_scaling", "Growth of one eager update's bytes as the array doubles.")
def _loop_scaling(answer):
    if 1.9 <= float(answer) <= 2.1:
        return True, "Right. Does its time grow as much? Compare a small and a large array."
    return False, "Does the result of x.at[i].set(v) live in a new buffer? How big is it?"
