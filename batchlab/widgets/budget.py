"""Memory explorers: 06's largest batch per strategy and 12's advice over a budget slider, 08's
allocator simulation and 09's in-place updates."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from batchlab._util.checks import check_callable, check_positive_int, check_positive_ints
from batchlab._util.format import format_bytes
from batchlab.advisor import Advice, decide, plot_candidates
from batchlab.allocator.replayer import POLICIES, differences_text
from batchlab.allocator.workloads import WORKLOADS, Simulation, simulate
from batchlab.measuring.inplace import compiled_update
from batchlab.runs.budget import BatchSizeResult, max_batch_size, plot_budget_curves
from batchlab.widgets.controls import choice, control, stops_slider
from batchlab.widgets.explorer import Explorer


class BudgetExplorer(Explorer):
    """Budget slider -> :func:`batchlab.max_batch_size` for each strategy -> memory curves.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> item = jax.ShapeDtypeStruct((64,), jnp.float32)
      >>> f = lambda x: jnp.outer(x, x) @ x
      >>> ex = BudgetExplorer(f, item, [2**16, 2**18], chunk_size=8, budget=2**16)
      >>> r = ex.update(budget=2**18)
      >>> int(r["chunked"]) > int(r["vmap"])
      True
    """

    def __init__(
        self,
        fn: Callable,
        example_item: Any,
        budgets: Sequence[int],
        *,
        chunk_size: int,
        budget: int,
        known: Sequence[BatchSizeResult] = (),
    ) -> None:
        """``known``: earlier :func:`batchlab.max_batch_size` results of the same ``fn`` and item
        (vmap, or chunked with this ``chunk_size``): their plans are not compiled again."""
        check_callable(fn)
        check_positive_int(chunk_size, "chunk_size")
        budgets = check_positive_ints(budgets, "budgets")
        # planned bytes per batch size and strategy, shared: each batch size is compiled once
        self.known: dict[str, dict[int, int]] = {"vmap": {}, "chunked": {}}
        for r in known:  # another chunk size plans another program
            key = (getattr(r, "strategy", None), getattr(r, "chunk_size", None))
            if key not in (("vmap", None), ("chunked", chunk_size)):
                raise ValueError(
                    f"`known` takes max_batch_size results of fn, strategy 'vmap' or 'chunked' "
                    f"with chunk_size={chunk_size}; got {key}. Leave it out to start afresh."
                )
            self.known[r.strategy].update(dict(r.curve))
        self.status_log: list[str] = []  # what the search said while it ran
        chunks = {"vmap": None, "chunked": chunk_size}

        def search(budget: int) -> dict[str, BatchSizeResult]:
            def busy(text: str) -> None:
                self.status_log.append(text)
                self._set_status(text, state="busy", params={**self.params, "budget": budget})

            results = {}
            for name, chunk in chunks.items():
                label = f"chunked lax.map, chunk {chunk}" if chunk else name
                results[name] = max_batch_size(
                    fn,
                    example_item,
                    budget_bytes=budget,
                    strategy=name,
                    chunk_size=chunk,
                    known=self.known[name],
                    on_compile=lambda b, label=label: busy(
                        f"compiling batch {b} ({label}) for budget {format_bytes(budget)}\u2026"
                    ),
                )
            busy("measuring\u2026 done: drawing the curves")
            return results

        super().__init__(
            search,
            {"budget": budget},
            controls={"budget": stops_slider(budgets, "budget", width="420px", label=format_bytes)},
            draw=lambda ex: plot_budget_curves(list(ex.result.values())),
            describe=_describe_budgets,
            title="Largest batch for a memory budget",
        )
        self.update()


def _describe_budgets(results: dict[str, BatchSizeResult]) -> str:
    v, c = results["vmap"], results["chunked"]
    planned = len(v.curve) + len(c.curve) - v.compilations - c.compilations
    return (
        f"budget {format_bytes(v.budget_bytes)}: vmap fits <b>{int(v)}</b> items, "
        f"chunked lax.map (chunk {c.chunk_size}) fits <b>{int(c)}</b> (compiled memory analysis, "
        f"nothing run; {planned} batch size(s) planned by an earlier budget)"
    )


class AdvisorSetting(NamedTuple):
    """The advice re-decided at one budget: what fits, the pick, whether the timings decided it."""

    budget: int
    fits: tuple[str, ...]
    recommended: str | None
    decided: bool
    tied: tuple[str, ...]
    batch_size: int | None  # only at the advice's own budget (it needs a fresh process)


def setting(advice: Advice, budget: int) -> AdvisorSetting:
    """The advice at ``budget``: fitting timed candidates, re-decided on their own run's samples."""
    m, own_budget = advice.margin or 1.0, advice.budget.bytes
    fits = [c for c in advice.candidates if c.samples is not None and c.planned_bytes * m <= budget]
    # left out: a fresh process found it cannot run all the items at the advice's budget, so it
    # cannot at a smaller one either; at its own budget the pool is the one advise decided in
    left = {c.label for c in advice.candidates if c.note.startswith("left out")}
    if budget == own_budget:
        timed = [c for c in advice.candidates if c.samples is not None and c.label not in left]
        pool = [c for c in timed if not c.note.startswith("screened")]
    else:
        keep = [c for c in fits if budget > own_budget or c.label not in left]
        pool = [c for c in keep if not c.note.startswith("screened")] or keep
    if not pool:
        return AdvisorSetting(int(budget), (), None, False, (), None)
    v = decide({c.label: c.samples for c in pool}, {c.label: c.planned_bytes for c in pool})
    own = budget == own_budget and v.pick == advice.recommended
    labels = tuple(c.label for c in fits)
    return AdvisorSetting(
        int(budget), labels, v.pick, v.decided, v.tied, advice.batch_size if own else None
    )


class AdvisorExplorer(Explorer):
    """A budget slider over one :func:`batchlab.advise` result; starts at the advice's budget."""

    def __init__(self, advice: Advice, budgets: Sequence[int]) -> None:
        if not isinstance(advice, Advice):
            raise TypeError(
                f"`advice` must be what bl.advise returned, got {type(advice).__name__}."
            )
        budget = advice.budget.bytes
        stops = sorted({budget, *(check_positive_int(b, "budgets") for b in budgets)})
        super().__init__(
            lambda budget: setting(advice, budget),
            {"budget": budget},
            controls={"budget": stops_slider(stops, "budget", width="420px", label=format_bytes)},
            draw=lambda ex: plot_candidates(advice, setting=ex.result),
            describe=_describe_advice,
            title="The advice over the budget",
        )
        self.update()


def _describe_advice(s: AdvisorSetting) -> str:
    fits = f"budget {format_bytes(s.budget)}: {len(s.fits)} timed candidates fit"
    head = f"{fits}; pick <b>{s.recommended}</b>"
    if not s.decided and s.tied:
        head += f" (not enough evidence among {', '.join(s.tied)}: the smallest plan)"
    return head + " (from the advice's measurements: nothing re-measured)"


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
            describe=_describe_simulation,
            title="Allocator explorer (simulation)",
        )
        self.update()


def _describe_simulation(sim: Simulation) -> str:
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
