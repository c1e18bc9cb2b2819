"""Allocation event lists built from XLA's own buffer assignment of real programs."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from batchlab._util.backend import backend_facts
from batchlab._util.checks import check_positive_int, check_positive_ints
from batchlab._util.child import run_child
from batchlab.allocator.replayer import Event, Events, EventsBuilder
from batchlab.allocator.workloads import item_lengths
from batchlab.measuring.buffers import BufferAssignment, XlaAllocation, XlaValue, buffer_assignment

SOURCE = "XLA buffer assignment of the real programs (launch order: outputs + temp), caller's order"


def block(x, w1, w2):
    """The per-item function: one MLP block on a sequence ``x`` of shape (length, d_model)."""
    h = jax.nn.gelu(x @ w1)
    return (x + h @ w2).mean(0)


def compiler_options() -> dict:
    """Where the plan holds the temporaries (XLA:CPU, ``fuses_temporaries`` False), XLA's library
    ("YNN") fusions off, so a matmul chain's intermediates are XLA buffers, not library scratch."""
    return {} if backend_facts().fuses_temporaries else {"xla_cpu_experimental_ynn_fusion_type": ""}


def _cpu_plan(payload) -> dict:  # in the CPU-only child: the plan's fields as JSON
    fn, specs = payload
    return dataclasses.asdict(buffer_assignment(fn, *specs))


def cpu_buffer_assignment(fn, *specs, xla_flags: str | None = None) -> BufferAssignment:
    """XLA:CPU's buffer assignment of ``jax.jit(fn)(*specs)`` on any host, an accelerator's too.

    Without ``xla_flags`` it compiles in this process for ``jax.devices("cpu")[0]``. XLA reads
    ``XLA_FLAGS`` once per process, so with ``xla_flags`` (a CPU flag such as
    ``--xla_cpu_enable_concurrency_optimized_scheduler=false``) it compiles in a fresh process
    that opens only the CPU (``JAX_PLATFORMS=cpu``): never the accelerator this process holds.

    Example:
      >>> spec = jax.ShapeDtypeStruct((1024,), jnp.float32)
      >>> cpu_buffer_assignment(lambda x: jnp.sort(x) * 2, spec).backend
      'cpu'
    """
    if xla_flags is None:
        cpu = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0])
        on_cpu = [jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=cpu) for s in specs]
        return dataclasses.replace(buffer_assignment(fn, *on_cpu), backend="cpu")
    if not isinstance(xla_flags, str):
        raise TypeError(f"`xla_flags` must be a string like '--xla_foo=false', got {xla_flags!r}.")
    flags = f"{os.environ.get('XLA_FLAGS', '')} {xla_flags}".strip()
    specs = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs]  # the child's CPU device
    child = run_child(_cpu_plan, (fn, specs), env={"JAX_PLATFORMS": "cpu", "XLA_FLAGS": flags})
    got = child.reply
    if got is None or "error" in got:
        why = child.why if got is None else "{type}: {message}".format(**got["error"])
        raise RuntimeError(f"compiling for the CPU with XLA_FLAGS={xla_flags!r} failed: {why}")
    allocations = tuple(
        XlaAllocation(*a[:4], tuple(XlaValue(*v) for v in a[4]), *a[5:]) for a in got["allocations"]
    )
    fields = {"sequence": tuple(got["sequence"]), "op_names": tuple(map(tuple, got["op_names"]))}
    return BufferAssignment(got["name"], allocations, backend="cpu", **fields)


@functools.cache  # an event list built twice compiles once
def _plan(fn, *specs, donate_argnums=()):
    options = compiler_options()
    return buffer_assignment(fn, *specs, donate_argnums=donate_argnums, compiler_options=options)


@dataclass(frozen=True)
class XlaWorkload:
    """An event list and the XLA plans it came from (for the page: counts and sizes)."""

    events: Events
    plans: dict
    calls: int
    call_allocations: int  # allocations made by calls (outputs + temp)


class CallEventsBuilder(EventsBuilder):
    """An :class:`EventsBuilder` that also knows how a jitted call allocates."""

    calls = call_allocations = 0  # counted by call(), per builder

    def call(self, plan, tag: Hashable, owner: str) -> dict[Hashable, int]:
        """One launch of ``plan``: outputs and temp allocated, temp freed; {output id: bytes}."""
        made = {(tag, kind, i): n for i, (_, kind, n) in enumerate(plan.launch_allocations()) if n}
        for id_, n in made.items():
            self.alloc(id_, n, "temp (one block per call)" if id_[1] == "temp" else owner)
        self.free(*(id_ for id_ in made if id_[1] == "temp"))
        self.calls += 1
        self.call_allocations += len(made)
        return {id_: n for id_, n in made.items() if id_[1] == "output"}

    def alloc_all(self, specs: dict, owner: str) -> None:  # {id: ShapeDtypeStruct}
        for id_, spec in specs.items():
            self.alloc(id_, spec.size * spec.dtype.itemsize, owner)

    def workload(self, name: str, plans: dict) -> XlaWorkload:
        return XlaWorkload(self.build(name, SOURCE), plans, self.calls, self.call_allocations)


def weight_specs(d_model, d_hidden, dtype):
    return (
        jax.ShapeDtypeStruct((d_model, d_hidden), dtype),
        jax.ShapeDtypeStruct((d_hidden, d_model), dtype),
    )


def _block_calls(name, calls, weights, plans, keep_results=True) -> XlaWorkload:
    """The weights, then one call per ``(input spec, plan, owner)``, each dropping its input."""
    b = CallEventsBuilder()
    b.alloc_all({"w1": weights[0], "w2": weights[1]}, "weights")
    results = []
    for i, (x, plan, owner) in enumerate(calls):
        b.alloc_all({("x", i): x}, owner)
        outs = b.call(plan, ("call", i), "result output")
        b.free(("x", i))  # the Python loop drops the input
        if keep_results:
            results += outs
        else:  # jax.device_get(out): the result lives on the host, its device buffer is freed
            b.free(*outs)
    b.free(*results, "w1", "w2")
    return b.workload(name, plans)


def per_item_workload(
    n_items: int,
    *,
    d_model: int = 4096,
    d_hidden: int = 16384,
    max_len: int = 4096,
    len_step: int = 512,
    keep_results: bool = True,
) -> XlaWorkload:
    """One call of :func:`block` per item, at the item's own length (float32)."""
    weights = weight_specs(d_model, d_hidden, jnp.float32)
    xs = [
        jax.ShapeDtypeStruct((int(n), d_model), jnp.float32)
        for n in item_lengths(n_items, max_len, len_step)
    ]
    plans = {x.shape[0]: _plan(block, x, *weights) for x in xs}
    calls = [(x, plans[x.shape[0]], "input (one item)") for x in xs]
    name = "per-item" if keep_results else "per-item, results to host"
    return _block_calls(name, calls, weights, plans, keep_results)


def batched_workload(
    n_items: int,
    *,
    batch_size: int,
    d_model: int = 4096,
    d_hidden: int = 16384,
    max_len: int = 4096,
    len_step: int = 512,
) -> XlaWorkload:
    """``jax.vmap(block)`` on batches of ``batch_size`` items padded to ``max_len`` (float32)."""
    check_positive_int(batch_size, "batch_size")
    item_lengths(n_items, max_len, len_step)  # same checks as per_item_workload
    weights = weight_specs(d_model, d_hidden, jnp.float32)
    x = jax.ShapeDtypeStruct((batch_size, max_len, d_model), jnp.float32)
    plan = _plan(jax.vmap(block, in_axes=(0, None, None)), x, *weights)
    calls = [(x, plan, "input (padded batch)")] * -(-n_items // batch_size)
    return _block_calls(f"batched (batch {batch_size})", calls, weights, {max_len: plan})


def train_step(params, x):
    """SGD on the squared output of one MLP block: returns new parameters and the loss."""

    def loss_fn(params):
        w1, w2 = params
        return jnp.mean((x + jax.nn.gelu(x @ w1) @ w2) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss


def training_workload(
    batch_tokens: Sequence[int], *, donate: bool, d_model: int = 4096, d_hidden: int = 16384
) -> XlaWorkload:
    """``params, loss = step(params, batch)`` in a Python loop, one step per entry of
    ``batch_tokens`` (its batch size), with or without ``donate_argnums=0``."""
    tokens = check_positive_ints(batch_tokens, "batch_tokens")
    w1, w2 = weight_specs(d_model, d_hidden, jnp.float32)
    xs = {t: jax.ShapeDtypeStruct((t, d_model), jnp.float32) for t in tokens}
    donate_argnums = (0,) if donate else ()
    plans = {
        t: _plan(train_step, (w1, w2), x, donate_argnums=donate_argnums) for t, x in xs.items()
    }
    b = CallEventsBuilder()
    params = ["w1.0", "w2.0"]
    b.alloc_all({"w1.0": w1, "w2.0": w2}, "params")
    for s, t in enumerate(tokens):
        b.alloc_all({("x", s): xs[t]}, "input (batch)")
        outs = b.call(plans[t], ("step", s), "new params / loss output")
        b.free(("x", s))
        big = [o for o, n in outs.items() if n > 1024]
        if big:  # not donated: the old parameters die when params is rebound
            b.free(*params)
            params = big
        b.free(*(o for o in outs if o not in big))  # the loss scalar, dropped after printing
    b.free(*params)
    return b.workload("training (donated)" if donate else "training", plans)


def events_from_buffers(
    assignment: BufferAssignment, kinds: Sequence[str] = ("parameter", "output", "temp")
) -> Events:
    """Each value of the given allocation kinds as an alloc/free pair at its live range."""
    values = [(a, v) for a in assignment.allocations_of(*kinds) for v in a.values]
    values = [(a, v) for a, v in values if v.start is not None and v.size > 0]
    allocs = [(v.start, 0, Event(v.start, "alloc", v.name, v.size, a.kind)) for a, v in values]
    frees = [(v.end, 1, Event(v.end, "free", v.name)) for _, v in values]
    return Events(
        tuple(e[2] for e in sorted(allocs + frees, key=lambda e: e[:2])),
        f"XLA values of {assignment.name}",
        "XLA live ranges (xla_dump_to), replayed by the kit's simulation",
    )
