"""Allocation event lists built from XLA's own buffer assignment of real programs.

Example:
  >>> import jax.numpy as jnp
  >>> t = per_item_workload(4, d_model=64, d_hidden=128, max_len=64, len_step=32)
  >>> t.n_allocs > 4, t.source.startswith("XLA buffer assignment")
  (True, True)
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.checks import check_positive_int
from batchlab.allocator.events import Event, Events, EventsBuilder
from batchlab.measuring.buffers import BufferAssignment, buffer_assignment

SOURCE = "XLA buffer assignment of the real programs (launch order: outputs + temp), caller's order"


def block(x, w1, w2):
    """The per-item function: one MLP block on a sequence ``x`` of shape (length, d_model)."""
    h = jax.nn.gelu(x @ w1)
    return (x + h @ w2).mean(0)


# On XLA:CPU, library ("YNN") fusions swallow whole matmul chains and keep their
# intermediates in the library's own scratch, invisible to the buffer assignment.
# Turned off here so intermediates are XLA buffers, as on a GPU (printed on the page).
CPU_COMPILER_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}


def compiler_options() -> dict:
    """The per-compilation options the event lists use on this backend (empty off CPU)."""
    return dict(CPU_COMPILER_OPTIONS) if jax.default_backend() == "cpu" else {}


_PLANS: dict = {}  # (fn, specs, donate_argnums, backend) -> plan: an event list built twice compiles once


def _plan(fn, *specs, donate_argnums=()):
    key = (fn, specs, tuple(donate_argnums), jax.default_backend())
    if key not in _PLANS:
        _PLANS[key] = buffer_assignment(
            fn, *specs, donate_argnums=donate_argnums, compiler_options=compiler_options()
        )
    return _PLANS[key]


class CallEventsBuilder(EventsBuilder):
    """A :class:`EventsBuilder` that also knows how a jitted call allocates."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.call_allocations = 0  # allocations made by calls (outputs + temp)

    def call(self, plan, tag: Hashable, *, owner_prefix: str = "") -> list[Hashable]:
        """Launches one call of ``plan``: allocates outputs and temp, frees temp; returns output ids."""
        outputs = []
        for i, (_name, kind, size) in enumerate(plan.launch_allocations()):
            if size == 0:
                continue
            id_ = (tag, kind, i)
            owner = "temp (one block per call)" if kind == "temp" else f"{owner_prefix}output"
            self.alloc(id_, size, owner)
            self.call_allocations += 1
            if kind == "output":
                outputs.append(id_)
        for i, (_name, kind, size) in enumerate(plan.launch_allocations()):
            if kind == "temp" and size:
                self.free((tag, kind, i))
        self.calls += 1
        return outputs

    def alloc_all(self, specs: dict, owner: str) -> None:
        """Allocates every ``{id: ShapeDtypeStruct}`` at its size."""
        for id_, spec in specs.items():
            self.alloc(id_, spec.size * spec.dtype.itemsize, owner)

    def free_all(self, ids) -> None:
        for id_ in ids:
            self.free(id_)


@dataclass(frozen=True)
class XlaWorkload:
    """A events and the XLA plans it came from (for the page: counts and sizes)."""

    events: Events
    plans: dict
    calls: int
    call_allocations: int

    def __getattr__(self, name):  # behave like the Events for replays
        return getattr(self.events, name)


def item_lengths(n_items: int, max_len: int, len_step: int, seed: int = 0) -> np.ndarray:
    """Item lengths in ``len_step, 2*len_step, ..., max_len`` (fixed seed)."""
    check_positive_int(max_len, "max_len")
    check_positive_int(len_step, "len_step")
    if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)) or n_items < 0:
        raise ValueError(f"`n_items` must be an int >= 0, got {n_items!r}.")
    if max_len % len_step:
        raise ValueError(
            f"`max_len`={max_len} must be a multiple of `len_step`={len_step}; e.g. max_len="
            f"{max_len - max_len % len_step or len_step}."
        )
    rng = np.random.default_rng(seed)
    return rng.integers(1, max_len // len_step + 1, size=int(n_items)) * len_step


def weight_specs(d_model, d_hidden, dtype):
    return (
        jax.ShapeDtypeStruct((d_model, d_hidden), dtype),
        jax.ShapeDtypeStruct((d_hidden, d_model), dtype),
    )


def per_item_workload(
    n_items: int,
    *,
    d_model: int = 4096,
    d_hidden: int = 16384,
    max_len: int = 4096,
    len_step: int = 512,
    dtype=jnp.float32,
    seed: int = 0,
    keep_results: bool = True,
) -> XlaWorkload:
    """One call of :func:`block` per item, at the item's own length."""
    lengths = item_lengths(n_items, max_len, len_step, seed)
    w1, w2 = weight_specs(d_model, d_hidden, dtype)
    plans = {}
    b = CallEventsBuilder()
    b.alloc_all({"w1": w1, "w2": w2}, "weights")
    results = []
    for i, n in enumerate(int(n) for n in lengths):
        x = jax.ShapeDtypeStruct((n, d_model), dtype)
        if n not in plans:
            plans[n] = _plan(block, x, w1, w2)
        b.alloc(("x", i), x.size * x.dtype.itemsize, "input (one item)")
        outs = b.call(plans[n], ("call", i), owner_prefix="result ")
        b.free(("x", i))  # the Python loop drops the item
        if keep_results:
            results += outs
        else:  # jax.device_get(out): the result lives on the host, its device buffer is freed
            b.free_all(outs)
    b.free_all([*results, "w1", "w2"])
    name = "per-item" if keep_results else "per-item, results to host"
    return XlaWorkload(b.build(name, SOURCE), plans, b.calls, b.call_allocations)


def batched_workload(
    n_items: int,
    *,
    batch_size: int,
    d_model: int = 4096,
    d_hidden: int = 16384,
    max_len: int = 4096,
    len_step: int = 512,
    dtype=jnp.float32,
    seed: int = 0,
) -> XlaWorkload:
    """``jax.vmap(block)`` on batches of ``batch_size`` items padded to ``max_len``."""
    check_positive_int(batch_size, "batch_size")
    item_lengths(n_items, max_len, len_step, seed)  # same checks as per_item_workload
    w1, w2 = weight_specs(d_model, d_hidden, dtype)
    x = jax.ShapeDtypeStruct((batch_size, max_len, d_model), dtype)
    plan = _plan(jax.vmap(block, in_axes=(0, None, None)), x, w1, w2)
    b = CallEventsBuilder()
    b.alloc_all({"w1": w1, "w2": w2}, "weights")
    results = []
    for i in range(-(-n_items // batch_size)):
        b.alloc(("x", i), x.size * x.dtype.itemsize, "input (padded batch)")
        results += b.call(plan, ("call", i), owner_prefix="result ")
        b.free(("x", i))
    b.free_all([*results, "w1", "w2"])
    return XlaWorkload(
        b.build(f"batched (batch {batch_size})", SOURCE),
        {max_len: plan},
        b.calls,
        b.call_allocations,
    )


def loss_fn(params, x):
    w1, w2 = params
    return jnp.mean((x + jax.nn.gelu(x @ w1) @ w2) ** 2)


def train_step(params, x):
    """SGD on :func:`loss_fn`: returns new parameters and the loss."""
    loss, grads = jax.value_and_grad(loss_fn)(params, x)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss


def training_workload(
    steps: int,
    *,
    donate: bool,
    batch_tokens: int | Sequence[int] = 4096,
    d_model: int = 4096,
    d_hidden: int = 16384,
    dtype=jnp.float32,
) -> XlaWorkload:
    """``params, loss = step(params, batch)`` in a Python loop, with or without ``donate_argnums=0``."""
    check_positive_int(steps, "steps")
    if isinstance(batch_tokens, Sequence):
        tokens = [int(t) for t in batch_tokens]
        if len(tokens) != steps:
            raise ValueError(
                f"`batch_tokens` gives {len(tokens)} sizes for {steps} steps; give one per step."
            )
    else:
        tokens = [batch_tokens] * steps
    for t in tokens:
        check_positive_int(t, "batch_tokens")
    w1, w2 = weight_specs(d_model, d_hidden, dtype)
    plans = {}
    for t in dict.fromkeys(tokens):
        x = jax.ShapeDtypeStruct((t, d_model), dtype)
        plans[t] = _plan(train_step, (w1, w2), x, donate_argnums=(0,) if donate else ())
    b = CallEventsBuilder()
    params = ["w1.0", "w2.0"]
    b.alloc_all({"w1.0": w1, "w2.0": w2}, "params")
    for s, t in enumerate(tokens):
        plan = plans[t]
        b.alloc(("x", s), t * d_model * jnp.dtype(dtype).itemsize, "input (batch)")
        outs = b.call(plan, ("step", s), owner_prefix="new params / loss ")
        b.free(("x", s))
        big = [o for o in outs if plan.launch_allocations()[o[2]][2] > 1024]
        small = [o for o in outs if o not in big]
        if big:  # not donated: the old parameters die when params is rebound
            b.free_all(params)
            params = big
        b.free_all(small)  # the loss scalar, dropped after printing
    b.free_all(params)
    name = "training (donated)" if donate else "training"
    if len(plans) > 1:
        name = name.replace("training", "training, varying batches")
    keyed = {"step": plans[tokens[0]]} if len(plans) == 1 else plans
    return XlaWorkload(b.build(name, SOURCE), keyed, b.calls, b.call_allocations)


def events_from_buffers(
    assignment: BufferAssignment, kinds: Sequence[str] = ("parameter", "output", "temp")
) -> Events:
    """Each value of the given allocation kinds as an alloc/free pair at its live range."""
    events = []
    for a in assignment.allocations_of(*kinds):
        for v in a.values:
            if v.start is not None and v.size > 0:
                events.append((v.start, 0, Event(v.start, "alloc", v.name, v.size, a.kind)))
                events.append((v.end, 1, Event(v.end, "free", v.name)))
    events.sort(key=lambda e: (e[0], e[1]))
    return Events(
        tuple(e[2] for e in events),
        f"XLA values of {assignment.name}",
        "XLA live ranges (xla_dump_to), replayed by the kit's simulation",
    )
