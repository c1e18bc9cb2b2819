"""Memory-budget sliders: 06's largest batch per strategy, and 12's advice re-decided."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from batchlab._util.checks import check_callable, check_positive_int, check_positive_ints
from batchlab._util.format import format_bytes
from batchlab.advisor import Advice, decide, plot_candidates
from batchlab.runs.budget import BatchSizeResult, max_batch_size, plot_budget_curves
from batchlab.widgets.controls import stops_slider
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
