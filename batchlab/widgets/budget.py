"""06's budget slider: the largest batch that fits, for vmap and for chunked lax.map."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from batchlab._util.checks import check_callable, check_positive_int, check_positive_ints
from batchlab._util.format import format_bytes
from batchlab.runs.budget import BatchSizeResult, max_batch_size
from batchlab.runs.budget_plot import plot_budget_curves
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
    ) -> None:
        check_callable(fn)
        check_positive_int(chunk_size, "chunk_size")
        budgets = check_positive_ints(budgets, "budgets")
        # planned bytes per batch size and strategy, shared: each batch size is compiled once
        self.known: dict[str, dict[int, int]] = {"vmap": {}, "chunked": {}}
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
            describe=_describe,
            title="Largest batch for a memory budget",
        )
        self.update()


def _describe(results: dict[str, BatchSizeResult]) -> str:
    v, c = results["vmap"], results["chunked"]
    planned = len(v.curve) + len(c.curve) - v.compilations - c.compilations
    return (
        f"budget {format_bytes(v.budget_bytes)}: vmap fits <b>{int(v)}</b> items, "
        f"chunked lax.map (chunk {c.chunk_size}) fits <b>{int(c)}</b> (compiled memory analysis, "
        f"nothing run; {planned} batch size(s) planned by an earlier budget)"
    )
