"""Measure one function over a range of batch sizes (the batch-size explorer's points)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from batchlab._util.checks import check_callable, check_positive_ints
from batchlab.measuring.measurement import Measurement
from batchlab.measuring.timing import measure


@dataclass
class SweepPoint:
    value: Any
    measurement: Measurement


@dataclass
class Sweep:
    """Measurements of one function at several batch sizes."""

    name: str
    parameter: str = "batch_size"
    points: list[SweepPoint] = field(default_factory=list)

    values = property(lambda self: [p.value for p in self.points])
    peak_bytes = property(lambda self: [p.measurement.memory.planned_bytes for p in self.points])


def sweep(
    fn: Callable,
    make_args: Callable[[Any], Sequence[Any]],
    values: Iterable[int],
    **measure_options: Any,
) -> Sweep:
    """Measures ``fn(*make_args(v))`` for each batch size ``v``; options go to ``measure``."""
    check_callable(fn)
    check_callable(make_args, "make_args")
    values = check_positive_ints(values, "values")
    result = Sweep(name=getattr(fn, "__name__", "fn"))
    for v in values:
        args = make_args(v)
        args = args if isinstance(args, (tuple, list)) else (args,)
        result.points.append(SweepPoint(v, measure(fn, *args, **measure_options)))
    return result
