"""The eleven claims of the two source texts, by readable names, and where each is measured.

The kit's two source texts (``seeds/``: one on memory fragmentation, one on the pitfalls of
batch processing) make eleven claims. Each gets one name a learner can read, used everywhere
instead of a number: in notebook 00's list, the README, and a claim's ``source=``.
"""

from __future__ import annotations

from typing import NamedTuple


class SourceClaim(NamedTuple):
    """One claim of a source text: its name, what the text says, and where it is measured."""

    name: str
    says: str
    text: str  # which source text
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
    names = "; ".join(repr(n) for n in NAMES)
    raise ValueError(f"no source claim is called {name!r}; the eleven names are: {names}.")
