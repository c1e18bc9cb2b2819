"""The one plan path: a function and its inputs -> a compiled XLA executable -> its memory plan.

XLA plans closed-over arrays apart from arguments, so :func:`compile_fn` hoists them into a
first argument: ``x -> tanh(x @ W)`` plans the same whether ``W`` is closed over or passed
(constants of a nested ``jax.jit`` or a ``lax.map`` body stay). Nothing runs (live: ``live.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import numpy as np

from batchlab._util.checks import check_argnums, check_array_tree, check_callable
from batchlab._util.format import Rows, format_bytes, format_count


@dataclass
class Compiled:
    """``fn`` compiled for one set of inputs; ``call()`` runs it through ``jax.jit``."""

    executable: Any  # jax.stages.Compiled
    jitted: Callable
    args: tuple
    kwargs: dict
    trace_lower_seconds: float
    compile_seconds: float
    name: str
    consts: tuple = ()  # closed-over arrays hoisted into the first argument (on the device)
    hoisted: bool = False

    def call(self) -> Any:
        return self.jitted(*self.args, **self.kwargs)

    @property
    def const_bytes(self) -> int:
        """Bytes of the closed-over arrays hoisted into arguments."""
        return _nbytes(self.consts)


def _nbytes(consts: Sequence[Any]) -> int:
    return int(sum(np.dtype(c.dtype).itemsize * int(np.prod(np.shape(c))) for c in consts))


def hoisted_const_bytes(fn: Callable, *specs: Any) -> int:
    """:attr:`Compiled.const_bytes` of ``compile_fn(fn, specs, {})`` from a trace alone: nothing
    compiles."""
    closed = _unwrap_jit((fn if is_jitted(fn) else jax.jit(fn)).trace(*specs).jaxpr)
    return _nbytes(closed.consts) if any(_is_const(c) for c in closed.consts) else 0


def is_jitted(fn: Any) -> bool:
    """True for functions wrapped by ``jax.jit`` (they have ``.lower``)."""
    return callable(fn) and hasattr(fn, "lower") and hasattr(fn, "trace")


def function_name(fn: Callable) -> str:
    """A readable name for tables and plots."""
    for obj in (fn, getattr(fn, "__wrapped__", None), getattr(fn, "func", None)):
        name = getattr(obj, "__name__", None)
        if name:
            return name
    return type(fn).__name__


def compile_fn(
    fn: Callable,
    args: tuple,
    kwargs: dict,
    *,
    static_argnums: int | Sequence[int] = (),
) -> Compiled:
    """Validates inputs, then lowers and compiles ``fn(*args, **kwargs)``."""
    check_callable(fn)
    nums = tuple(n % len(args) for n in check_argnums(static_argnums, len(args), "static_argnums"))
    dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
    if is_jitted(fn):
        if nums:
            raise ValueError(
                "`fn` is already jax.jit-wrapped; declare its static arguments on its own "
                "jax.jit(..., static_argnums=...) instead of passing them here."
            )
        jitted = fn
    else:
        check_array_tree(dyn_args, "args")
        check_array_tree(kwargs, "kwargs")
        jitted = jax.jit(fn, static_argnums=nums)
    name = function_name(fn)
    t0 = time.perf_counter()
    traced = jitted.trace(*args, **kwargs)
    closed = _unwrap_jit(traced.jaxpr)
    call, consts = (jitted, args, kwargs), ()
    if not any(_is_const(c) for c in closed.consts):
        lowered = traced.lower()
    else:
        hoisted = _hoist(closed, traced, name)
        consts = tuple(jax.device_put(c) if _is_const(c) else c for c in closed.consts)
        dynamic = jax.tree_util.tree_leaves((dyn_args, kwargs))
        if len(dynamic) != len(closed.jaxpr.invars):  # cannot tell them apart
            dynamic = None
        specs = dynamic or [
            jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars
        ]
        lowered = hoisted.lower(consts, *specs)
        # dynamic None: a jitted fn with static arguments of its own runs as the user wrote it
        if dynamic is not None:
            call = (hoisted, (consts, *dynamic), {})
    t1 = time.perf_counter()
    executable = lowered.compile()
    t2 = time.perf_counter()
    return Compiled(executable, *call, t1 - t0, t2 - t1, name, consts, bool(consts))


def _is_const(c: Any) -> bool:
    return hasattr(c, "shape") and hasattr(c, "dtype") and np.ndim(c) > 0


def _unwrap_jit(closed):
    """The body of a jaxpr that is one ``jit`` of all its inputs (a jitted function's trace)."""
    while not closed.consts and len(closed.jaxpr.eqns) == 1:
        eqn, outer = closed.jaxpr.eqns[0], closed.jaxpr
        inner = eqn.params.get("jaxpr")
        if eqn.primitive.name not in ("jit", "pjit") or not hasattr(inner, "consts"):
            break
        if list(eqn.invars) != list(outer.invars) or list(eqn.outvars) != list(outer.outvars):
            break
        closed = inner
    return closed


def _hoist(closed, traced, name: str) -> Callable:
    """``jax.jit`` of ``(consts, *flat_args) -> out``, the function's donations kept."""
    jaxpr, out_tree = closed.jaxpr, traced.out_tree
    donated = [a.donated for a in jax.tree_util.tree_leaves(traced.args_info)]

    def hoisted(consts, *flat):
        return jax.tree_util.tree_unflatten(
            out_tree, jax.core.eval_jaxpr(jaxpr, list(consts), *flat)
        )

    hoisted.__name__ = hoisted.__qualname__ = name
    return jax.jit(hoisted, donate_argnums=tuple(1 + i for i, d in enumerate(donated) if d))


PEAK_FROM_XLA = "XLA peak_memory_in_bytes"
PEAK_SUM_ABOVE_XLA = (
    "argument + output + temp - alias: XLA's peak_memory_in_bytes is lower, it leaves out "
    "the temp allocation on this backend (see xla_peak_bytes)"
)
PEAK_NO_XLA = "argument + output + temp - alias (this jax has no peak_memory_in_bytes)"


@dataclass(frozen=True)
class MemoryEstimate(Rows):
    """XLA's compiled memory plan for one function and one set of input shapes.

    Bytes on the device; ``alias_bytes`` are output bytes that reuse donated inputs.
    ``planned_bytes``, the figure a budget is compared with, is the larger of XLA's
    ``peak_memory_in_bytes`` (kept as ``xla_peak_bytes``; on XLA:CPU it leaves the temp
    block out) and ``argument + output + temp - alias`` (``planned_from`` says which). A
    lower bound: a GPU allocator rounds buffers up, XLA:CPU holds buffers of its own.
    """

    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int
    planned_bytes: int
    planned_from: str
    xla_peak_bytes: int | None
    flops: float | None
    backend: str
    name: str = "fn"
    source: str = "compiled memory analysis (XLA)"
    _inline = True

    def _rows(self) -> list[tuple[str, str]]:
        sizes = ("argument", "output", "temp", "alias", "planned")
        rows = [(k, format_bytes(getattr(self, f"{k}_bytes"))) for k in sizes]
        return [*rows, ("flops", format_count(self.flops)), ("planned from", self.planned_from)]

    def _title(self) -> str:
        return f"{self.name} on {self.backend}, {self.source}"


def estimate_from_compiled(executable, name: str) -> MemoryEstimate:
    """Builds a :class:`MemoryEstimate` from a ``jax.stages.Compiled``."""
    stats = executable.memory_analysis()
    if stats is None:
        raise RuntimeError(
            f"The {jax.default_backend()} backend returned no compiled memory analysis; "
            "memory_estimate needs XLA's CompiledMemoryStats."
        )
    sizes = (getattr(stats, f"{k}_size_in_bytes") for k in ("argument", "output", "temp", "alias"))
    arg, out, tmp, alias = map(int, sizes)
    xla_peak = stats.peak_memory_in_bytes  # None or 0: XLA gave no peak
    xla_peak = int(xla_peak) if xla_peak is not None and int(xla_peak) > 0 else None
    total = arg + out + tmp - alias
    if xla_peak is None:
        peak, source = total, PEAK_NO_XLA
    elif xla_peak >= total:
        peak, source = xla_peak, PEAK_FROM_XLA
    else:
        peak, source = total, PEAK_SUM_ABOVE_XLA
    try:  # the device the program was compiled for
        backend = next(iter(executable.input_shardings[0][0].device_set)).platform
    except Exception:  # no input, or a stand-in executable
        backend = jax.default_backend()
    try:
        cost = executable.cost_analysis() or {}
    except Exception:  # some backends do not implement it
        cost = {}
    flops = cost.get("flops")  # None where the cost analysis has none (or a negative figure)
    flops = float(flops) if flops is not None and flops >= 0 else None
    return MemoryEstimate(arg, out, tmp, alias, peak, source, xla_peak, flops, backend, name)


def memory_estimate(
    fn: Callable,
    *args: Any,
    static_argnums: int | Sequence[int] = (),
    **kwargs: Any,
) -> MemoryEstimate:
    """XLA's planned memory for ``fn(*args, **kwargs)`` (plain or jitted): compiles, runs nothing.

    Args:
      fn: the function, plain or ``jax.jit``-ed (arrays it closes over count as arguments).
      *args: arrays, ``jax.ShapeDtypeStruct``, numbers or pytrees of them.
      static_argnums: as in ``jax.jit``.
      **kwargs: keyword arguments of ``fn``, as ``args``.

    Returns:
      A :class:`MemoryEstimate`; compare budgets with its ``planned_bytes``.

    Raises:
      TypeError: ``fn`` is not callable, or an argument is not an array, a spec or a number.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> e = memory_estimate(lambda x: x * 2, jax.ShapeDtypeStruct((1024,), jnp.float32))
      >>> e.argument_bytes, e.output_bytes
      (4096, 4096)
    """
    compiled = compile_fn(fn, args, kwargs, static_argnums=static_argnums)
    return estimate_from_compiled(compiled.executable, compiled.name)


def planned_bytes(estimate: MemoryEstimate) -> int:
    """The figure a budget is compared with (a lower bound)."""
    return int(estimate.planned_bytes)


class Program(NamedTuple):
    """A compiled batch program (closed-over arrays hoisted) and its plan."""

    compiled: Compiled
    estimate: MemoryEstimate

    @property
    def planned(self) -> int:
        """The planned bytes of the estimate."""
        return int(self.estimate.planned_bytes)

    def __call__(self, *args):
        c = self.compiled
        return c.executable(c.consts, *args) if c.hoisted else c.executable(*args)


def unjit(fn: Callable) -> Callable:
    """The Python function under ``jax.jit`` wrappers (a jit inside a batch is inlined by XLA)."""
    while hasattr(fn, "lower") and callable(getattr(fn, "__wrapped__", None)):
        fn = fn.__wrapped__
    return fn


def compile_program(f: Callable, *specs: Any) -> Program:
    """``jax.jit(f)`` compiled for ``specs`` by :func:`compile_fn`."""
    c = compile_fn(f, specs, {})
    return Program(c, estimate_from_compiled(c.executable, c.name))


def batch_planner(f: Callable) -> Callable[..., int]:
    """``plan(*batch_args) -> planned bytes`` of a whole-batch function (host: its ``plan``)."""
    if getattr(f, "strategy", None) == "host" and hasattr(f, "plan"):
        return lambda *specs: int(f.plan(*specs).planned_bytes)
    return lambda *specs: compile_program(f, *specs).planned


def spec_of(leaf: Any, lead: tuple[int, ...] = ()) -> jax.ShapeDtypeStruct:
    """A leaf's shape (after ``lead``) and dtype (a Python number as numpy would hold it)."""
    leaf = leaf if hasattr(leaf, "shape") and hasattr(leaf, "dtype") else np.asarray(leaf)
    return jax.ShapeDtypeStruct((*lead, *leaf.shape), leaf.dtype)


def batch_spec(example_item: Any, batch_size: int) -> Any:
    """``ShapeDtypeStruct`` pytree of a batch of ``batch_size`` items like ``example_item``."""
    return jax.tree_util.tree_map(lambda leaf: spec_of(leaf, (batch_size,)), example_item)


def batch_args(example_item: Any, batch_size: int, in_axes: Any = 0) -> tuple:
    """A batched call's arguments: ``(batch,)``, or one per ``in_axes`` (None: passed whole)."""
    if not isinstance(in_axes, tuple):
        return (batch_spec(example_item, batch_size),)
    return tuple(
        batch_spec(a, batch_size) if ax == 0 else jax.tree_util.tree_map(spec_of, a)
        for a, ax in zip(example_item, in_axes, strict=True)
    )
