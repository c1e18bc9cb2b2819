"""What a claim rests on: named figures, each naming its source, and the :class:`Scope`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from batchlab.measuring.samples import Samples, check_figure, format_value


@dataclass(frozen=True)
class Number:
    """One deterministic figure (a count, bytes, a shape, a flag; ``None``: not measurable on this
    backend) and the code that measured it."""

    name: str
    value: Any
    source: str
    unit: str = ""
    timed = False

    def __post_init__(self):
        check_figure(self.name, self.source, self.unit)

    def __repr__(self) -> str:
        return f"Number({self.name} = {format_value(self.value, self.unit)}; {self.source})"


Evidence = Number | Samples


@dataclass(frozen=True)
class Scope:
    """Where a claim's numbers hold: backend, device kind, JAX version, ``sizes`` and ``dtype``."""

    sizes: Mapping[str, Any] = field(default_factory=dict)
    dtype: str | None = None
    backend: str = field(default_factory=jax.default_backend)
    device_kind: str = field(default_factory=lambda: jax.devices()[0].device_kind)
    jax_version: str = jax.__version__

    def __post_init__(self):
        if not isinstance(self.sizes, Mapping):
            raise TypeError(
                f"`sizes` must be a mapping from a size's name to its value, e.g. "
                f"{{'B': 64}}, got {type(self.sizes).__name__}."
            )
        object.__setattr__(self, "sizes", dict(self.sizes))
        if self.dtype is not None:
            object.__setattr__(self, "dtype", str(np.dtype(self.dtype)))

    def __str__(self) -> str:
        sizes = ", ".join(f"{k}={_size_text(v)}" for k, v in self.sizes.items())
        parts = [f"{self.backend} ({self.device_kind})", f"jax {self.jax_version}"]
        return "; ".join(parts + [p for p in (sizes, self.dtype) if p])


def _size_text(v: Any) -> str:
    """A sorted sweep of three or more sizes prints as ``lo..hi``, another sequence as a tuple."""
    if isinstance(v, Sequence) and not isinstance(v, str):
        v = tuple(v)
        return f"{v[0]}..{v[-1]}" if len(v) > 2 and list(v) == sorted(v) else str(v)
    return str(v)
