"""What went wrong in a batch: out of memory, an interrupt, or a bug in ``fn``, told apart.

:func:`is_out_of_memory` and :func:`is_interrupt` read JAX's own errors
(``JaxRuntimeError`` texts); :class:`OutOfMemory` and :class:`FnBug` carry a
classified failure from one batch attempt to the run loop.
"""

from __future__ import annotations

import re

import jax

OOM_XLA = "out of memory (XLA RESOURCE_EXHAUSTED)"
OOM_BUDGET = "over budget (planned bytes > budget_bytes)"


class OutOfMemory(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def is_out_of_memory(error: BaseException) -> bool:
    """True for XLA's ``RESOURCE_EXHAUSTED`` runtime error and for host ``MemoryError``.

    Example:
      >>> import jax
      >>> is_out_of_memory(jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory"))
      True
      >>> is_out_of_memory(ValueError("shape"))
      False
    """
    if isinstance(error, MemoryError):
        return True
    return isinstance(error, jax.errors.JaxRuntimeError) and "RESOURCE_EXHAUSTED" in str(error)


def is_interrupt(error: BaseException) -> bool:
    """True for ``KeyboardInterrupt``, also when raised inside the compiled program (a callback).

    A ``KeyboardInterrupt`` raised in a host callback reaches Python as a
    ``JaxRuntimeError`` whose text holds the callback's traceback.

    Example:
      >>> import jax
      >>> is_interrupt(jax.errors.JaxRuntimeError("INTERNAL: CpuCallback error: ...\\nKeyboardInterrupt"))
      True
    """
    if isinstance(error, KeyboardInterrupt):
        return True
    return isinstance(error, jax.errors.JaxRuntimeError) and bool(
        re.search(r"^KeyboardInterrupt\b", str(error), re.M)
    )


def short_message(error: BaseException) -> str:
    """One line naming the error: the last line of a multi-line message (e.g. a callback's)."""
    lines = [ln.strip() for ln in str(error).strip().splitlines() if ln.strip()]
    if not lines:
        return type(error).__name__
    text = lines[-1] if len(lines) > 1 else f"{type(error).__name__}: {lines[0]}"
    return text if len(text) <= 200 else text[:197] + "..."


class FnBug(Exception):
    pass
