"""Exercises of notebooks 08 and 09 (fragmentation, buffer reuse, donation)."""

from __future__ import annotations

from . import exercise


@exercise(
    "fragmentation.hand_trace",
    "On a BFCAllocator(4096) with 256-byte alignment: allocate a=1000 B, b=1000 B, c=1000 B, "
    "free b, then allocate d=600 B. At which offset does d land?",
)
def _hand_trace(answer, **context):
    from ..allocator import BFCAllocator

    a = BFCAllocator(4096)
    for name in "abc":
        a.allocate(name, 1000)
    a.free("b")
    expected = a.allocate("d", 600).offset
    if answer == expected:
        return True, "Right: best fit picks the 1024-byte hole b left, not the larger free tail."
    if answer == 3072:
        return False, "That is the free tail. Best fit takes the *smallest* free chunk that fits."
    return (
        False,
        "Round every request up to 256 bytes first, then list the free chunks after `free b`.",
    )


@exercise(
    "fragmentation.donation_alias",
    "Donate the parameters of `sgd_step(params, grads)` so that XLA reuses their buffer: "
    "give the donate_argnums that make alias_bytes equal the parameters' size.",
)
def _donation_alias(answer, *, step, params, grads, **context):
    import jax

    from ..memory import memory_estimate

    try:
        est = memory_estimate(jax.jit(step, donate_argnums=answer), params, grads)
    except Exception as e:  # bad argnums
        return (
            False,
            f"jax.jit rejected it: {type(e).__name__}. donate_argnums are positions, like (0,).",
        )
    if est.alias_bytes == params.nbytes:
        return (
            True,
            f"alias_bytes = {est.alias_bytes} = params.nbytes: the update is written in place.",
        )
    if est.alias_bytes:
        return (
            False,
            "Some bytes alias, but not the parameters'. Which argument is overwritten by the output?",
        )
    return False, "alias_bytes is 0: nothing was donated that the output can reuse."


@exercise(
    "fragmentation.fixed_shape",
    "Pick the workload of batchlab.allocator.WORKLOADS whose simulation needs no more memory than its "
    "live peak (overhead 1.0) on the BFC allocator, and is NOT a training loop.",
)
def _fixed_shape(answer, **context):
    if answer == "batched":
        return True, "One fixed shape: every freed block fits the next request exactly."
    if answer in ("per-item", "bucketed"):
        return (
            False,
            "Run allocator.simulate(...) for it and look at `overhead`: varying shapes leave holes.",
        )
    return False, "Choose among 'per-item', 'batched', 'bucketed'."
