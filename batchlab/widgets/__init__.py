"""Interactive explorers for the notebooks, each with a plain-Python
``explorer.update(**params)``."""

from __future__ import annotations

import contextlib

from batchlab.widgets.batching import AxesExplorer, BroadcastExplorer  # 01, 02
from batchlab.widgets.batching import BatchSizeExplorer, StrategyExplorer  # 00, 03
from batchlab.widgets.budget import AdvisorExplorer, BudgetExplorer  # 06, 12
from batchlab.widgets.budget import AllocatorExplorer, InPlaceExplorer  # 08, 09
from batchlab.widgets.explorer import Explorer  # the pattern
from batchlab.widgets.loading import LoadingExplorer, ScalingExplorer  # 10, 11
from batchlab.widgets.ragged import BucketExplorer, PaddingExplorer  # 04, 05

__all__ = [
    "AdvisorExplorer",
    "AllocatorExplorer",
    "AxesExplorer",
    "BatchSizeExplorer",
    "BroadcastExplorer",
    "BucketExplorer",
    "BudgetExplorer",
    "Explorer",
    "InPlaceExplorer",
    "LoadingExplorer",
    "PaddingExplorer",
    "ScalingExplorer",
    "StrategyExplorer",
]

with contextlib.suppress(ImportError):  # Colab draws ipywidgets 8 only through its widget manager
    from google.colab import output

    output.enable_custom_widget_manager()
