"""Exercises for notebooks 06 (memory budget), 07 (error handling), 08 and 09 (fragmentation,
buffer reuse, donation) and 12 (the advisor)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from batchlab.allocator import BFCAllocator
from batchlab.exercises import choose, direction, exercise
from batchlab.measuring.plan import memory_estimate
from batchlab.runs.budget import max_batch_size


@exercise(
    "budget.chunk_effect",
    "Double the chunk of a chunked lax.map and take three quarters of the budget: how many items "
    "fit now? (an int)",
)
def _chunk_effect(answer: Any, *, measured: int) -> tuple[bool, str]:
    if answer == measured:
        return True, "Right: the chunked program's planned bytes decide, as max_batch_size found."
    if answer > measured:
        return False, "Fewer fit: how big are one chunk's D x D temporaries, against the budget?"
    return False, (
        "More fit: a batch below one chunk runs as a plain vmap. How many items does a plain vmap "
        "fit in this budget (its bytes per item)?"
    )


@exercise(
    "budget.largest_batch",
    "Write largest(fn, item, budget) that finds the largest vmap batch whose planned bytes "
    "fit `budget`, using batchlab.memory_estimate with jax.ShapeDtypeStruct inputs.",
)
def _largest_batch(
    answer: Callable, *, fn: Callable, item: Any, budgets: list[int]
) -> tuple[bool, str]:
    for budget in budgets:
        expected, got = int(max_batch_size(fn, item, budget_bytes=budget)), answer(fn, item, budget)
        if int(got) != expected:
            return False, (
                f"For a budget of {budget} bytes your answer {got} is wrong: compare the planned "
                "bytes (MemoryEstimate.planned_bytes) of it and of one more item with the budget."
            )
    return True, "Right for every budget. How many compilations did yours need?"


@exercise(
    "budget.resume_equal",
    "Write same(a, b) -> bool: do two RunResults hold the same outputs "
    "for the same items and the same failures?",
)
def _resume_equal(answer: Callable, *, a: Any, b: Any, different: Any) -> tuple[bool, str]:
    if not answer(a, b) or answer(a, different):
        return False, "Compare indices, outputs, failures: equal runs match, different ones do not."
    return True, "Right: indices, outputs (exactly, same program) and failures must all match."


@exercise(
    "budget.features_effect",
    "Double the item size D (features) and keep the budget: the largest vmap batch becomes how "
    "many times the old one? (a ratio, e.g. 0.5 for half)",
)
def _features_effect(answer: Any, *, measured_ratio: float) -> tuple[bool, str]:
    if answer > 0 and abs(np.log2(answer / measured_ratio)) <= 0.6:
        return True, "Right order. Now say why, from the buffer of one item that grows fastest."
    if answer >= 1:
        return False, "A larger item needs more memory per item: can more fit the same budget?"
    if answer > measured_ratio:
        return False, "Fewer items fit than that: how does one item's largest buffer grow with D?"
    return False, "More items fit than that: look again at which buffer grows fastest with D."


@exercise(
    "faults.double_budget",
    "Run the same dataset with twice the budget: the batch size run_batches settles on becomes "
    "how many times the old one? (a ratio)",
)
def _double_budget(answer: Any, *, measured_ratio: float) -> tuple[bool, str]:
    if answer > 0 and abs(np.log2(answer / measured_ratio)) <= 0.4:
        return True, "Right, and run_batches finds that size itself."
    if answer < measured_ratio:
        return False, "More than that fits. How do planned bytes grow with the batch (06's curve)?"
    return False, "Less than that fits: part of the plan does not grow with the budget."


@exercise(
    "advisor.wider_mlp",
    "Double the MLP's hidden width (256 -> 512; the same 64 inputs, 8 outputs, 512 items, "
    "chunk 16). Does the planned-peak ratio vmap / lax.map chunk 16 rise, fall or stay? "
    "Answer with one word: 'rises', 'falls' or 'stays'.",
)
def wider_mlp(answer: Any, *, old_ratio: float, new_ratio: float) -> tuple[bool, str]:
    return choose(
        answer,
        direction(new_ratio, old_ratio, 0.02, ("falls", "stays", "rises")),
        ("rises", "falls", "stays"),
        "Right. Now say why in one sentence.",
        "Not that direction. Split each plan in two: what every program holds once, whatever "
        "the batch (the weights), and what vmap holds per item but lax.map only per chunk "
        "(the hidden activations). Which of the two grows faster when the width doubles?",
    )


@exercise("fragmentation.hand_trace", "Offset of d=600 B after a, b, c of 1000 B and free b?")
def _hand_trace(answer):
    a = BFCAllocator(4096)
    for name in "abc":
        a.allocate(name, 1000)
    a.free("b")
    if answer == a.allocate("d", 600).offset:
        return True, "Right: b's hole and the tail tie at 1024 B; best fit takes the lower address."
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


@exercise("fragmentation.fixed_shape", "The lowest-overhead workload that is no training loop.")
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
