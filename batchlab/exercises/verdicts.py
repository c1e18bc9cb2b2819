"""Verdict text shared by notebooks 06, 07 and 08 (the source claim "batches wait for free memory")."""

from __future__ import annotations

from batchlab._util.format import format_seconds

SCHEDULING_HOLDS = (
    "holds only at compile time, and only where XLA's scheduler minimizes memory: XLA can pick the "
    "instruction order with the lowest peak (its memory-minimizing scheduler; XLA:CPU's default, "
    "tuned for concurrency, keeps the written order \u2014 notebook 08 measures both); at run time "
    "nothing in JAX waits for memory \u2014 a failing allocation raises RESOURCE_EXHAUSTED \u2014 so "
    "scheduling batches by memory is the caller's job (max_batch_size, run_batches)."
)


def scheduling_verdict(error: BaseException | None, seconds: float) -> tuple[str, str]:
    """The source claim "batches wait for free memory", from one measurement.

    ``error`` is what a call asking for more memory than the device has
    raised (``None`` if it ran), ``seconds`` how long the call took to
    fail. The verdict is the same text in notebooks 06, 07 and 08 when the
    measurement shows JAX raising ``RESOURCE_EXHAUSTED`` at once (under a
    second: nothing waited for memory); otherwise it says what was seen.

    Returns:
      ``(verdict, deciding number)``.

    Example:
      >>> import jax
      >>> v, n = scheduling_verdict(jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory"), 0.002)
      >>> v.startswith("holds only at compile time"), n
      (True, 'RESOURCE_EXHAUSTED raised after 2.00 ms (no wait for memory)')
    """
    raised = error is not None and "RESOURCE_EXHAUSTED" in str(error)
    if raised and seconds < 1.0:
        return SCHEDULING_HOLDS, (
            f"RESOURCE_EXHAUSTED raised after {format_seconds(seconds)} (no wait for memory)"
        )
    if error is None:
        return (
            "not measured in this run: the oversized call did not fail",
            f"ran in {format_seconds(seconds)}",
        )
    return (
        "not decided in this run: the call failed, but not at once with RESOURCE_EXHAUSTED",
        f"{type(error).__name__} after {format_seconds(seconds)}",
    )
