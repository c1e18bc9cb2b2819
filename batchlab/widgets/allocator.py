"""Explorers of 08 (workload, batch size, allocator policy -> memory map) and 09 (in place)."""

from __future__ import annotations

import html

import jax
import jax.numpy as jnp

from batchlab._util.checks import check_positive_int, check_positive_ints
from batchlab.allocator.replayer import POLICIES, differences_text
from batchlab.allocator.workloads import WORKLOADS, Simulation, simulate
from batchlab.measuring.inplace import compiled_update
from batchlab.widgets.controls import choice, control, stops_slider
from batchlab.widgets.explorer import Explorer


class AllocatorExplorer(Explorer):
    """Workload, batch size and allocator -> :func:`batchlab.allocator.simulate`'s memory map."""

    def __init__(self, n_items: int = 48, *, batch_sizes=(1, 2, 4, 8, 16), headroom: float = 1.1):
        check_positive_int(n_items, "n_items")
        batch_sizes = tuple(check_positive_ints(batch_sizes, "batch_sizes"))

        def compute(workload: str, batch_size: int, policy: str, preallocate: bool) -> Simulation:
            pool = preallocate and policy != "platform"  # the platform allocator has no pool
            kw = dict(batch_size=batch_size, policy=policy, preallocate=pool, headroom=headroom)
            return simulate(workload, n_items, **kw)

        super().__init__(
            compute,
            dict(workload="per-item", batch_size=batch_sizes[0], policy="bfc", preallocate=True),
            controls={
                "workload": choice(WORKLOADS, description="workload", width="230px"),
                "batch_size": stops_slider(batch_sizes, "batch size", width="300px"),
                "policy": choice(sorted(POLICIES), description="policy", width="230px"),
                "preallocate": control("Checkbox", description="preallocate pool", indent=False),
            },
            draw=lambda ex: ex.result.plot(),
            describe=_describe,
            title="Allocator explorer (simulation)",
        )
        self.update()


def _describe(sim: Simulation) -> str:
    tl, name = sim.replay, sim.events.name
    if name == "per-item":
        name += " (one item per call: the batch size does not change this workload)"
    return (
        f"<b>{html.escape(name)}</b>: {tl.allocations} allocations, {tl.device_calls} device "
        f"calls; <b>{len(tl.failures)}</b> failed ({tl.failures_despite_free} despite enough free "
        f"memory); max fragmentation <b>{tl.max_fragmentation:.0%}</b>; needs a device "
        f"<b>{sim.overhead:.2f}x</b> its live peak [simulation, synthetic events]; differs from "
        f"XLA: {html.escape(differences_text(tl.differences))}"
    )


UPDATES = ("argument", "argument, donated", "intermediate")


def _compiled_update(update: str, size: int):
    x = jax.ShapeDtypeStruct((size,), jnp.float32)
    if update == "intermediate":
        return compiled_update(lambda x: jnp.sin(x).at[0].set(1.0), x)
    donate = 0 if update.endswith("donated") else ()
    return compiled_update(lambda x: x.at[0].set(1.0), x, donate_argnums=donate)


class InPlaceExplorer(Explorer):
    """Where does ``x.at[0].set(1)`` write? Pick the case and the size; see XLA's plan (its table).

    Example:
      >>> ex = InPlaceExplorer(sizes=(256, 1024))
      >>> r = ex.update(update="argument, donated", size=1024)
      >>> r.copies, r.memory.alias_bytes
      (0, 4096)
    """

    def __init__(self, sizes=(1 << 10, 1 << 14, 1 << 16)) -> None:
        sizes = tuple(check_positive_ints(sizes, "sizes"))
        super().__init__(
            _compiled_update,
            {"update": UPDATES[0], "size": sizes[0]},
            controls={
                "update": choice(UPDATES, description="x is"),
                "size": stops_slider(sizes, "size"),
            },
            title="In-place update explorer",
        )
        self.update()
