"""What "in place" means in JAX, measured: a copy outside jit, none inside, and donation."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.checks import check_argnums, check_array_tree, check_callable
from batchlab._util.format import Rows, format_bytes
from batchlab.measuring.plan import MemoryEstimate, estimate_from_compiled, function_name

_COPY = re.compile(r"=\s*[^=]*?\s(?:copy|copy-start)\(")  # a copy, or an async copy-start


@dataclass(frozen=True)
class EagerUpdate(Rows):
    """``y = x.at[index].set(value)`` run outside ``jit``."""

    nbytes: int
    new_buffer: bool  # y lives in a different buffer than x
    original_unchanged: bool  # x still holds its old value
    source: str = "jax.Array buffers after the call (buffer pointers compared, not shown)"
    _inline = True

    def _rows(self):
        return [
            ("bytes of x", format_bytes(self.nbytes)),
            ("result in a new buffer", str(self.new_buffer)),
            ("x unchanged", str(self.original_unchanged)),
        ]

    def _title(self) -> str:
        return f"x.at[...].set(...) outside jit, {self.source}"


def _check_array(x: Any, name: str) -> jax.Array:
    if not isinstance(x, jax.Array):
        raise TypeError(
            f"`{name}` must be a jax.Array (it is run, not only compiled), got "
            f"{type(x).__name__}; convert it with jnp.asarray(...)."
        )
    return x


def eager_update(x: jax.Array, index: Any = 0, value: Any = 1) -> EagerUpdate:
    """Runs ``x.at[index].set(value)`` outside ``jit`` and reports whether it copied.

    Args:
      x: the array to update; index, value: as in ``x.at[index].set(value)``.

    Returns:
      An :class:`EagerUpdate`: ``x``'s bytes, whether the result is a new buffer and whether
      ``x`` kept its old value.

    Raises:
      TypeError: ``x`` is not a ``jax.Array``.
      ValueError: an int ``index`` outside ``x``'s axis 0 (JAX would drop the update silently).
    """
    x = _check_array(x, "x")
    whole = isinstance(index, (int, np.integer)) and not isinstance(index, bool)
    if whole and x.ndim and not -x.shape[0] <= index < x.shape[0]:
        raise ValueError(
            f"`index`={index} is outside `x`'s axis 0 (size {x.shape[0]}); JAX would drop "
            f"the update silently (x.at[i].set ignores out-of-range i). Pass 0..{x.shape[0] - 1}."
        )
    before = jnp.array(x, copy=True)
    y = x.at[index].set(value).block_until_ready()
    try:
        new = x.unsafe_buffer_pointer() != y.unsafe_buffer_pointer()
    except Exception:  # sharded arrays have no single pointer
        new = True
    return EagerUpdate(int(x.nbytes), bool(new), bool(jnp.array_equal(x, before)))


@dataclass(frozen=True)
class CompiledUpdate(Rows):
    """XLA's compiled program for one function: its memory plan and how many copies it makes."""

    name: str
    copies: int
    memory: MemoryEstimate
    source: str = "optimized HLO (copy instructions) and compiled memory analysis (XLA)"
    _inline = True

    def _rows(self):
        m = self.memory
        sizes = [m.argument_bytes, m.output_bytes, m.temp_bytes, m.alias_bytes, m.planned_bytes]
        names = ["argument", "output", "temp", "alias (output reusing a donated input)", "peak"]
        rows = [(k, format_bytes(v)) for k, v in zip(names, sizes, strict=True)]
        return [("copy instructions", str(self.copies)), *rows]

    def _title(self) -> str:
        return f"{self.name} compiled, {self.source}"


def compiled_update(
    fn: Callable, *args: Any, donate_argnums: int | Sequence[int] = ()
) -> CompiledUpdate:
    """Compiles ``fn(*args)`` (nothing runs) and counts XLA's copies (``copy``, ``copy-start``).

    Args:
      fn: the function; *args: its arguments (arrays or ``ShapeDtypeStruct``).
      donate_argnums: positional arguments whose buffers the program may reuse.

    Returns:
      A :class:`CompiledUpdate`: the count of ``copy`` instructions and the memory plan.

    Raises:
      TypeError: ``fn`` is not callable, ``args`` holds a leaf that is not an array or a
        number, or ``donate_argnums`` a non-int.
      ValueError: ``donate_argnums`` names an argument not given.
    """
    check_callable(fn)
    check_array_tree(args, "args")
    check_argnums(donate_argnums, len(args), "donate_argnums")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unusable donation is reported by donate()
        compiled = jax.jit(fn, donate_argnums=donate_argnums).lower(*args).compile()
    copies = sum(1 for line in compiled.as_text().splitlines() if _COPY.search(line))
    name = function_name(fn)
    return CompiledUpdate(name, copies, estimate_from_compiled(compiled, name))


@dataclass(frozen=True)
class Donation(Rows):
    """One call of a function with donated arguments, and what became of them."""

    name: str
    alias_bytes: int  # output bytes XLA placed in donated buffers (compiled memory analysis)
    deleted: tuple[tuple[str, bool], ...]  # (argument, deleted after the call) for every argument
    donated_bytes: int  # bytes of the arguments that were deleted (their buffers were taken)
    warning: str | None  # JAX's warning when a donation could not be used
    source: str = "compiled memory analysis (alias bytes), jax.Array.is_deleted() after a call"
    _inline = True

    @property
    def any_deleted(self) -> bool:
        """Whether any argument was deleted after the call (its buffer taken)."""
        return any(d for _, d in self.deleted)

    def _rows(self):
        return [
            ("alias bytes", format_bytes(self.alias_bytes)),
            ("arguments deleted", ", ".join(f"{k}: {d}" for k, d in self.deleted)),
            ("bytes of deleted arguments", format_bytes(self.donated_bytes)),
            ("warning", (self.warning or "none").splitlines()[0]),
        ]

    def _title(self) -> str:
        return f"donating to {self.name}, {self.source}"


def donate(
    fn: Callable, *args: Any, donate_argnums: int | Sequence[int] = 0, **kwargs: Any
) -> Donation:
    """Calls ``jax.jit(fn, donate_argnums=...)`` on copies of the arrays; reports the donation.

    Args:
      fn: the function; *args, **kwargs: its arguments, each a ``jax.Array`` (copied first).
      donate_argnums: as in ``jax.jit``: the arguments whose buffers the call may take.

    Returns:
      A :class:`Donation`: alias bytes, which arguments were deleted, their bytes, and JAX's
      warning when a donation could not be used.

    Raises:
      TypeError: ``fn`` is not callable, an argument is not a ``jax.Array``, or
        ``donate_argnums`` holds a non-int.
      ValueError: ``donate_argnums`` names an argument not given.
    """
    check_callable(fn)
    nums = check_argnums(donate_argnums, len(args) + len(kwargs), "donate_argnums")
    named = [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
    copies = [jnp.array(_check_array(value, name), copy=True) for name, value in named]
    args, kwargs = copies[: len(args)], dict(zip(kwargs, copies[len(args) :], strict=True))
    jitted = jax.jit(fn, donate_argnums=nums)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jitted.lower(*args, **kwargs).compile()
        jax.block_until_ready(jitted(*args, **kwargs))
    unusable = [m for w in caught if "donated buffers were not usable" in (m := str(w.message))]
    return Donation(
        function_name(fn),
        int(compiled.memory_analysis().alias_size_in_bytes),
        tuple((name, bool(c.is_deleted())) for (name, _), c in zip(named, copies, strict=True)),
        sum(int(c.nbytes) for c in copies if c.is_deleted()),
        unusable[0] if unusable else None,
    )
