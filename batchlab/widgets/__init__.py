"""Interactive explorers for the notebooks: controls -> the kit's core -> a plot in place.

Each has a plain-Python entry point, ``explorer.update(**params)``, that tests and the cell
after each widget call without a browser (the pattern: ``explorer.py``).
"""

from __future__ import annotations

import contextlib

# the pattern and the memory gauge
from batchlab.widgets.explorer import Explorer
from batchlab.widgets.gauge import MemoryGauge

# one explorer per notebook, in teaching order
from batchlab.widgets.batching import BatchSizeExplorer  # 00
from batchlab.widgets.axes import AxesExplorer  # 01
from batchlab.widgets.axes import BroadcastExplorer  # 02
from batchlab.widgets.batching import StrategyExplorer  # 03
from batchlab.widgets.ragged import PaddingExplorer  # 04
from batchlab.widgets.ragged import BucketExplorer  # 05
from batchlab.widgets.budget import BudgetExplorer  # 06
from batchlab.widgets.allocator import AllocatorExplorer  # 08
from batchlab.widgets.allocator import InPlaceExplorer  # 09
from batchlab.widgets.loading import LoadingExplorer  # 10
from batchlab.widgets.loading import ScalingExplorer  # 11
from batchlab.widgets.advisor import AdvisorExplorer  # 12


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
    "MemoryGauge",
    "PaddingExplorer",
    "ScalingExplorer",
    "StrategyExplorer",
]

with contextlib.suppress(ImportError):  # Colab draws ipywidgets 8 only through its widget manager
    from google.colab import output

    output.enable_custom_widget_manager()
