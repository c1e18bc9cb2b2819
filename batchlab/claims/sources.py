"""The eleven claims of the kit's two source texts (``seeds/``), by the names a learner reads."""

from __future__ import annotations

from typing import NamedTuple


class SourceClaim(NamedTuple):
    """A source claim: its name, what the text says, which text, the notebooks measuring it."""

    name: str
    says: str
    text: str
    notebooks: tuple[str, ...]


#: "# source text", then per claim "name | notebooks" and, indented, what the text says
_TABLE = """
# memory fragmentation
batching allocates once per batch | 08
  JAX allocates memory for the whole batch at once: fewer allocations and frees.
reused blocks keep memory whole | 08
  JAX manages array lifetimes and reuses blocks, so memory is not left in small unusable pieces.
batches wait for free memory | 06 07 08
  Batches can be scheduled to run when resources are available.
in-place updates reduce fragmentation | 09
  In-place updates instead of new arrays reduce fragmentation.
# pitfalls of batch processing
a batch needs one shape | 01 04
  Items of a batch must have the same shape and aligned axes under vmap; pad them to one.
big batches run out of memory | 06
  Large batches exhaust memory; dynamic batch sizes adapt to the limit.
different shapes conflict when combined | 02
  Combining arrays of different shapes causes broadcasting conflicts; align them.
loading can starve the batch | 10
  Inefficient data loading slows batch processing; load in bulk, mind the access pattern.
shape and memory errors can be caught | 07
  Shape errors and memory errors during batch processing can be caught and handled.
vmap versus hand batching depends on the case | 03
  vmap, manual batching and other strategies differ in speed; which is faster depends on the case.
padding wastes compute, masks exclude it | 04 05
  Padded values waste compute; masks exclude them from the result.
"""


def _read(table: str) -> tuple[SourceClaim, ...]:
    claims, lines = [], iter(table.strip().splitlines())
    for line in lines:
        if line.startswith("# "):
            text = line[2:]
        else:
            name, notebooks = line.split(" | ")
            claims.append(SourceClaim(name, next(lines).strip(), text, tuple(notebooks.split())))
    return tuple(claims)


SOURCE_CLAIMS: tuple[SourceClaim, ...] = _read(_TABLE)
NAMES = tuple(c.name for c in SOURCE_CLAIMS)


def source_claim(name: str) -> SourceClaim:
    """The source claim called ``name`` (``ValueError`` naming all eleven for another)."""
    if name not in NAMES:
        names = "; ".join(repr(n) for n in NAMES)
        raise ValueError(f"no source claim is called {name!r}; the eleven names are: {names}.")
    return SOURCE_CLAIMS[NAMES.index(name)]
