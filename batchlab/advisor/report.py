"""What :func:`batchlab.advise` found: every candidate measured here, the choice, and why.

:class:`CandidateResult` is one way to batch, measured on this machine: time per
item (repeated samples), XLA's planned peak and the observed peak (a fresh
process; the source says which figure). :class:`Advice` holds them all, the
recommended candidate (or the candidates within noise of each other), the batch
size that fits the budget with the measured plan-to-real ratio applied, the
code to paste, and the claims that back the choice (``batchlab.claims``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from batchlab._util.format import format_bytes, format_seconds, html_table, text_table
from batchlab.advisor.plot import plot_candidates
from batchlab.claims.claim import Claim, ClaimsTable, table
from batchlab.claims.evidence import Samples, Scope
from batchlab.runs.budget import Budget


@dataclass(frozen=True)
class CandidateResult:
    """One candidate measured at ``items`` items (one batch, or the whole ragged workload).

    ``per_item``: wall-clock samples of one call divided by ``items`` (``None``
    when it was not measured, ``error`` says why). ``planned_bytes``: XLA's
    compiled memory analysis (closed-over arrays counted as arguments).
    ``observed_bytes``: the call's peak in a fresh process, ``observed_source``
    says how it was read (``None`` where this machine cannot give it).
    """

    label: str
    strategy: str
    chunk_size: int | None
    items: int
    per_item: Samples | None
    planned_bytes: int
    observed_bytes: int | None
    observed_source: str
    code: str
    error: str | None = None

    @property
    def ratio(self) -> float | None:
        """Observed / planned peak: how far the plan is below what the call really took."""
        if self.observed_bytes is None or not self.planned_bytes:
            return None
        return self.observed_bytes / self.planned_bytes

    @property
    def peak_bytes(self) -> int:
        """The peak compared with the budget: observed where measured, else planned."""
        return self.planned_bytes if self.observed_bytes is None else self.observed_bytes

    @property
    def peak_source(self) -> str:
        return "planned (XLA)" if self.observed_bytes is None else "observed"

    def cells(self) -> tuple:
        t = self.per_item
        time = (
            self.error or "not measured"
            if t is None
            else f"{format_seconds(t.fastest)} .. {format_seconds(t.slowest)}"
        )
        return (
            self.label,
            time,
            format_bytes(self.planned_bytes),
            format_bytes(self.observed_bytes) if self.observed_bytes is not None else "absent",
            "-" if self.ratio is None else f"{self.ratio:.2f}x",
        )


HEADER = (
    "candidate",
    "time per item (fastest .. slowest)",
    "planned peak",
    "observed peak",
    "observed / planned",
)


@dataclass(frozen=True)
class Advice:
    """The advisor's answer for one function on this machine (see :func:`batchlab.advise`).

    ``recommended``: the label of the chosen candidate; ``within_noise``: the
    labels whose time per item cannot be told apart from the fastest's (their
    spreads overlap), the choice among them made on peak memory. ``batch_size``:
    the largest batch of the recommended candidate whose plan fits
    ``budget_bytes_used = budget / ratio_used`` (XLA's plan scaled by the
    observed / planned ratio measured here); ``budget_note`` says which figure.
    """

    name: str
    mode: str
    items: int
    candidates: tuple[CandidateResult, ...]
    recommended: str | None
    within_noise: tuple[str, ...]
    budget: Budget
    ratio_used: float | None
    budget_bytes_used: int | None
    batch_size: int | None
    budget_note: str
    claims: tuple[Claim, ...]
    scope: Scope
    seconds: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __getitem__(self, label: str) -> CandidateResult:
        for c in self.candidates:
            if c.label == label:
                return c
        raise KeyError(
            f"no candidate {label!r}; this advice has {[c.label for c in self.candidates]}."
        )

    @property
    def best(self) -> CandidateResult | None:
        """The recommended candidate's result."""
        return None if self.recommended is None else self[self.recommended]

    @property
    def strategy(self) -> str | None:
        return None if self.best is None else self.best.strategy

    @property
    def chunk_size(self) -> int | None:
        return None if self.best is None else self.best.chunk_size

    @property
    def code(self) -> str:
        """Plain JAX for the recommendation, with the batch size that fits the budget."""
        if self.best is None:
            return "# nothing measured: see the notes"
        head = (
            f"batch_size = {self.batch_size}  # {self.budget_note}\n"
            if self.batch_size is not None
            else ""
        )
        return head + self.best.code

    @property
    def why(self) -> ClaimsTable:
        """The claims behind the choice, as one table (``bl.claims.table``)."""
        return table(self.claims, title=f"Why {self.recommended}")  # probed: each can fail

    def summary(self) -> str:
        if self.best is None:
            return "No candidate could be measured: " + "; ".join(self.notes)
        b = self.best
        chunk = f", chunk_size={b.chunk_size}" if b.chunk_size and self.mode == "dense" else ""
        head = f"recommended: {b.label} ({b.strategy}{chunk})"
        if len(self.within_noise) > 1:
            head += (
                f"; {', '.join(self.within_noise)} are within noise of each other in time per item "
                f"(their spreads overlap), so the choice among them is the smallest peak memory"
            )
        if self.batch_size is not None:
            head += f"; batch_size={self.batch_size} ({self.budget_note})"
        return head

    def plot(self, *, axes=None):
        """Time per item against peak memory, one mark per candidate, spread drawn."""
        return plot_candidates(self, axes=axes)

    def _rows(self) -> list[tuple]:
        return [c.cells() for c in self.candidates]

    def _caption(self) -> str:
        return (
            f"advise({self.name}): {len(self.candidates)} candidates at {self.items} items, "
            f"measured here in {self.seconds:.1f} s"
        )

    def __repr__(self) -> str:
        sources = sorted({c.observed_source for c in self.candidates})
        lines = [
            f"Advice ({self._caption()})",
            self.summary(),
            f"budget: {format_bytes(self.budget.bytes)} ({self.budget.source})",
            text_table(self._rows(), HEADER),
            "time: wall clock around jax.block_until_ready, per item; planned: XLA compiled "
            "memory analysis; observed: " + "; ".join(sources),
            "code:",
            *("  " + line for line in self.code.splitlines()),
            *(f"note: {n}" for n in self.notes),
        ]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        sources = sorted({c.observed_source for c in self.candidates})
        parts = [
            html_table(self._rows(), HEADER, caption=self._caption()),
            html_table(
                [
                    ("choice", self.summary()),
                    ("budget", f"{format_bytes(self.budget.bytes)} ({self.budget.source})"),
                    ("observed peak from", "; ".join(sources)),
                    ("code", self.code),
                    *(("note", n) for n in self.notes),
                ]
            ),
        ]
        return "".join(parts)


__all__ = ["HEADER", "Advice", "CandidateResult"]
