"""The eleven claims of the two source texts, by readable names, and where each is measured.

The kit's two source texts (``seeds/``: one on memory fragmentation, one on the
pitfalls of batch processing) make eleven claims. Each gets one name a
learner can read, used everywhere instead of a number: in notebook 00's list,
the README, and a :class:`~batchlab.claims.Claim`'s ``source=``.
"""

from __future__ import annotations

from typing import NamedTuple

from batchlab._util.format import html_table, text_table


class SourceClaim(NamedTuple):
    """One claim of a source text: its name, what the text says, and where it is measured."""

    name: str
    says: str
    text: str  # which source text
    notebooks: tuple[str, ...]


FRAGMENTATION = "memory fragmentation"
PITFALLS = "pitfalls of batch processing"

SOURCE_CLAIMS: tuple[SourceClaim, ...] = (
    SourceClaim(
        "batching allocates once per batch",
        "JAX allocates memory for the whole batch at once: fewer allocations and frees.",
        FRAGMENTATION,
        ("08",),
    ),
    SourceClaim(
        "reused blocks keep memory whole",
        "JAX manages array lifetimes and reuses blocks, so memory is not left in small unusable pieces.",
        FRAGMENTATION,
        ("08",),
    ),
    SourceClaim(
        "batches wait for free memory",
        "Batches can be scheduled to run when resources are available.",
        FRAGMENTATION,
        ("06", "07", "08"),
    ),
    SourceClaim(
        "in-place updates reduce fragmentation",
        "In-place updates instead of new arrays reduce fragmentation.",
        FRAGMENTATION,
        ("09",),
    ),
    SourceClaim(
        "a batch needs one shape",
        "Items of a batch must have the same shape and aligned axes under vmap; pad them to one.",
        PITFALLS,
        ("01", "04"),
    ),
    SourceClaim(
        "big batches run out of memory",
        "Large batches exhaust memory; dynamic batch sizes adapt to the limit.",
        PITFALLS,
        ("06",),
    ),
    SourceClaim(
        "different shapes conflict when combined",
        "Combining arrays of different shapes causes broadcasting conflicts; align them.",
        PITFALLS,
        ("02",),
    ),
    SourceClaim(
        "loading can starve the batch",
        "Inefficient data loading slows batch processing; load in bulk, mind the access pattern.",
        PITFALLS,
        ("10",),
    ),
    SourceClaim(
        "shape and memory errors can be caught",
        "Shape errors and memory errors during batch processing can be caught and handled.",
        PITFALLS,
        ("07",),
    ),
    SourceClaim(
        "vmap versus hand batching depends on the case",
        "vmap, manual batching and other strategies differ in speed; which is faster depends on the case.",
        PITFALLS,
        ("03",),
    ),
    SourceClaim(
        "padding wastes compute, masks exclude it",
        "Padded values waste compute; masks exclude them from the result.",
        PITFALLS,
        ("04", "05"),
    ),
)

NAMES = tuple(c.name for c in SOURCE_CLAIMS)


def source_claim(name: str) -> SourceClaim:
    """The source claim called ``name``.

    Raises:
      ValueError: no source claim has that name (the message lists them).

    Example:
      >>> source_claim("a batch needs one shape").notebooks
      ('01', '04')
    """
    for c in SOURCE_CLAIMS:
        if c.name == name:
            return c
    raise ValueError(
        f"no source claim is called {name!r}; the eleven names are: "
        + "; ".join(repr(n) for n in NAMES)
        + "."
    )


class SourceClaimsList(NamedTuple):
    """The eleven source claims as one table (text and HTML)."""

    claims: tuple[SourceClaim, ...]

    def rows(self) -> list[tuple]:
        return [(c.name, c.says, c.text, ", ".join(c.notebooks)) for c in self.claims]

    header = ("name", "what the source text says", "source text", "measured in notebook")

    def __repr__(self) -> str:
        return text_table(self.rows(), self.header)

    def _repr_html_(self) -> str:
        return html_table(self.rows(), self.header, caption="The source claims, by name")


def source_claims() -> SourceClaimsList:
    """All eleven source claims, for notebook 00 and the README.

    Example:
      >>> len(source_claims().claims)
      11
    """
    return SourceClaimsList(SOURCE_CLAIMS)
