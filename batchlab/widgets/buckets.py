"""The bucket explorer (05): bucket count and boundaries -> padding, compilations, run time.

The widget only picks the setting and draws: :func:`batchlab.ragged.plan_buckets`
says what a setting will cost before anything is compiled (drawn at once),
:func:`batchlab.ragged.measure_buckets` then compiles every bucket shape once
and times the epoch. With 16 buckets that second step is mostly JAX tracing
and XLA compiling 16 programs: that cost is what 05 teaches.
"""

from __future__ import annotations

from typing import Any

from batchlab._util.checks import check_positive_ints
from batchlab.ragged.timing import (
    BOUNDARY_RULES,
    RUN_OPTIONS,
    BucketPlan,
    BucketPoint,
    measure_buckets,
    plan_buckets,
    token_workload,
)
from batchlab.widgets.bucket_plot import draw_buckets
from batchlab.widgets.controls import labelled_dropdown, stops_slider
from batchlab.widgets.explorer import Explorer


class BucketExplorer(Explorer):
    """Bucket-count slider (+ boundary rule) -> padding, compilations, run time of the whole dataset.

    Example:
      >>> import numpy as np
      >>> from batchlab import Ragged
      >>> data = Ragged.from_lengths(np.arange(40) % 5, [3, 9, 1, 12, 15])
      >>> ex = BucketExplorer(data, vocab=5, features=4, bucket_counts=(1, 2), repeat=3)
      >>> pt = ex.update(n_buckets=2)
      >>> pt.shapes, pt.compiles, pt.compile_seconds > 0
      (2, 2, True)
    """

    def __init__(
        self,
        data: Any,
        *,
        vocab: int,
        features: int = 16,
        bucket_counts: tuple[int, ...] = (1, 2, 4, 8),
        rule: str = "optimal",
        seed: int = 0,
        title: str = "Bucket explorer",
        **measure_options: Any,
    ):
        """``measure_options``: ``max_time``, ``repeat`` or ``tolerance`` for each setting's run."""
        self.data, self.table = token_workload(data, vocab, features, seed)
        self.bucket_counts = tuple(check_positive_ints(bucket_counts, "bucket_counts"))
        self.choices = {"n_buckets": self.bucket_counts}
        self.features = features
        unknown = sorted(set(measure_options) - set(RUN_OPTIONS))
        if unknown:
            raise TypeError(
                f"BucketExplorer got unexpected option(s) {unknown}: a setting's run accepts "
                f"{', '.join(RUN_OPTIONS)} (as in batchlab.measure)."
            )
        self.run_options = measure_options
        self._last_planned: tuple = (None,)  # (setting, plan, buckets): the preview's, reused
        super().__init__(
            self._compute_point,
            {"rule": rule, "n_buckets": self.bucket_counts[0]},
            controls={
                "rule": labelled_dropdown(BOUNDARY_RULES, "boundaries"),
                "n_buckets": stops_slider(self.bucket_counts, "buckets"),
            },
            draw=draw_buckets,
            describe=repr,
            title=title,
            preview=self._plan,
            describe_preview=repr,
        )
        self.update()

    def _planned(self, rule: str, n_buckets: int):
        key = (rule, n_buckets)
        if self._last_planned[0] != key:
            self._last_planned = (key, *plan_buckets(self.data, rule, n_buckets, self.features))
        return self._last_planned[1:]

    def _plan(self, rule: str, n_buckets: int) -> BucketPlan:
        return self._planned(rule, n_buckets)[0]

    def _compute_point(self, rule: str, n_buckets: int) -> BucketPoint:
        plan, buckets = self._planned(rule, n_buckets)
        return measure_buckets(plan, buckets, self.table, **self.run_options)

    @property
    def measured(self) -> list[BucketPoint]:
        return list(self.cache.values())
