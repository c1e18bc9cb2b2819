"""Synthetic allocation event lists (rows of 1 MiB) and :func:`simulate`, one call from a
workload name to a replay (what the explorer and notebook 08 use)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from batchlab._util.checks import check_choice, check_int, check_positive_float, check_positive_int
from batchlab.allocator.plots import plot_replay
from batchlab.allocator.replayer import (
    Events,
    EventsBuilder,
    Replay,
    capacity_scan,
    make_allocator,
    replay,
)

MiB = 1 << 20
BUCKETS = (16, 32, 64)  # the bucketed workload's length bounds, in rows
WORKLOADS = ("per-item", "batched", "bucketed", "training", "training-donated")


def item_lengths(n_items: int, max_len: int = 64, len_step: int = 1) -> np.ndarray:
    """The items' lengths in rows: multiples of ``len_step`` up to ``max_len``, uniform (seed 0)."""
    check_positive_int(max_len, "max_len")
    check_positive_int(len_step, "len_step")
    check_int(n_items, "n_items")
    if max_len % len_step:
        raise ValueError(
            f"`max_len`={max_len} must be a multiple of `len_step`={len_step}; e.g. max_len="
            f"{max_len - max_len % len_step or len_step}."
        )
    rng = np.random.default_rng(0)
    return rng.integers(1, max_len // len_step + 1, size=int(n_items)) * len_step


def training(steps: int, *, donate: bool) -> Events:
    """A training loop: each step reads a batch (256 MiB), makes activations (768 MiB) and
    gradients, and without donation writes new parameters (1 GiB) before freeing the old.

    Example:
      >>> training(3, donate=False).n_allocs - training(3, donate=True).n_allocs
      3
    """
    check_positive_int(steps, "steps")
    params_bytes = 1 << 30
    b = EventsBuilder()
    b.alloc("params0", params_bytes, "params")
    current = "params0"
    for s in range(steps):
        b.alloc(f"batch{s}", 256 * MiB, "input")
        b.alloc(f"act{s}", 768 * MiB, "activations")
        b.alloc(f"grads{s}", params_bytes, "grads")
        b.free(f"act{s}")
        if not donate:
            b.alloc(f"params{s + 1}", params_bytes, "params")
            b.free(current)
            current = f"params{s + 1}"
        b.free(f"grads{s}", f"batch{s}")
    b.free(current)
    return b.build("training (donated)" if donate else "training")


def workload(name: str, n_items: int, *, batch_size: int = 8) -> Events:
    """One of :data:`WORKLOADS` by name (what the explorer's drop-down calls). Each group of
    items is an input, activations (2x) and a result (1 row per item); ``per-item``: one item
    at a time at its own length; ``batched``: groups padded to 64 rows, one fixed shape;
    ``bucketed``: groups padded to their length bucket (16, 32 or 64 rows) only."""
    check_choice(name, "name", WORKLOADS)
    check_positive_int(batch_size, "batch_size")
    if name.startswith("training"):
        return training(max(1, n_items // batch_size), donate=name.endswith("donated"))
    lengths = item_lengths(n_items)
    if name == "per-item":
        groups = [(1, int(n)) for n in lengths]
    elif name == "batched":
        groups = [(batch_size, 64)] * -(-len(lengths) // batch_size)
    else:
        counts = np.bincount(np.searchsorted(BUCKETS, lengths), minlength=len(BUCKETS))
        groups = [
            (batch_size, bound)
            for bound, n in zip(BUCKETS, counts, strict=True)
            for _ in range(-(-n // batch_size))
        ]
    b = EventsBuilder()
    for i, (items, length) in enumerate(groups):
        b.alloc(f"in{i}", items * length * MiB, "input")
        b.alloc(f"act{i}", 2 * items * length * MiB, "activations")
        b.alloc(f"out{i}", items * MiB, "result")
        b.free(f"act{i}", f"in{i}")
    b.free(*(f"out{i}" for i in range(len(groups))))
    return b.build(name if name == "per-item" else f"{name} (batch {batch_size})")


@dataclass(frozen=True, repr=False)
class Simulation:
    """A workload replayed on a device ``headroom`` times its live peak, and the device it needs."""

    events: Events
    replay: Replay
    capacity_needed: int  # the smallest device of a scan of 1.00x..2.00x the live peak

    @property
    def overhead(self) -> float:
        """``capacity_needed / peak live bytes``: 1.0 means fragmentation cost nothing."""
        return self.capacity_needed / max(self.events.peak_rounded_bytes(), 1)

    def plot(self):
        return plot_replay(self.replay)


def simulate(
    name: str,
    n_items: int = 48,
    *,
    batch_size: int = 8,
    policy: str = "bfc",
    preallocate: bool = True,
    headroom: float = 1.1,
) -> Simulation:
    """Workload ``name`` replayed on ``headroom`` x its live peak; the device it needs, scanned."""
    check_positive_float(headroom, "headroom")
    if headroom < 1:
        raise ValueError(
            f"`headroom` must be at least 1 (the device must hold the live peak), got {headroom}."
        )
    events = workload(name, n_items, batch_size=batch_size)
    capacity = int(events.peak_rounded_bytes() * headroom) // 256 * 256 + 256
    replayed = replay(events, make_allocator(policy, capacity, preallocate=preallocate))
    scan = capacity_scan(events, policy, preallocate=preallocate)
    if scan.smallest is None:
        raise ValueError(
            f"`events` {events.name!r} does not fit even on 2x its live peak with {policy}; "
            "use capacity_scan with larger headrooms."
        )
    return Simulation(events, replayed, scan.smallest)
