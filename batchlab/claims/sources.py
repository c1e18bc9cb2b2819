"""The eleven claims of the kit's two source texts, by the names a learner reads."""

from __future__ import annotations

from typing import NamedTuple


class SourceClaim(NamedTuple):
    """A source claim's name and the notebooks measuring it."""

    name: str
    notebooks: tuple[str, ...]


#: the first four from the text on memory fragmentation, the rest from the pitfalls of batching
SOURCE_CLAIMS = (
    SourceClaim("batching allocates once per batch", ("08",)),
    SourceClaim("reused blocks keep memory whole", ("08",)),
    SourceClaim("batches wait for free memory", ("07",)),  # decided where the device keeps counters
    SourceClaim("in-place updates reduce fragmentation", ("09",)),
    SourceClaim("a batch needs one shape", ("01",)),
    SourceClaim("big batches run out of memory", ("06",)),
    SourceClaim("different shapes conflict when combined", ("02",)),
    SourceClaim("loading can starve the batch", ("10",)),
    SourceClaim("shape and memory errors can be caught", ("07",)),
    SourceClaim("vmap versus hand batching depends on the case", ("03",)),
    SourceClaim("padding wastes compute, masks exclude it", ("04", "05")),
)
NAMES = tuple(c.name for c in SOURCE_CLAIMS)


def source_claim(name: str) -> SourceClaim:
    """The source claim called ``name`` (``ValueError`` naming all eleven for another)."""
    if name not in NAMES:
        names = "; ".join(repr(n) for n in NAMES)
        raise ValueError(f"no source claim is called {name!r}; the eleven names are: {names}.")
    return SOURCE_CLAIMS[NAMES.index(name)]
