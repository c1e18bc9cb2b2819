"""Interactive explorers for the notebooks (ipywidgets front ends).

Every explorer is an :class:`Explorer`: controls -> a measurement through
the kit's core -> a plot updated in place. Each has a plain-Python entry
point, ``explorer.update(**params)``, that tests and the notebook cell after
each widget call without a browser. See ``explorer.py`` for the pattern.
"""

from __future__ import annotations

# the pattern, shared controls and the memory gauge
from batchlab.widgets import controls as controls
from batchlab.widgets.explorer import Explorer as Explorer
from batchlab.widgets.gauge import GaugeReading as GaugeReading
from batchlab.widgets.gauge import MemoryGauge as MemoryGauge

# one explorer per notebook, in teaching order
from batchlab.widgets.batch_size import BatchSizeExplorer as BatchSizeExplorer  # 00
from batchlab.widgets.axes import AxesExplorer as AxesExplorer  # 01
from batchlab.widgets.axes import BroadcastExplorer as BroadcastExplorer  # 02
from batchlab.widgets.strategies import StrategyExplorer as StrategyExplorer  # 03
from batchlab.widgets.ragged import PaddingExplorer as PaddingExplorer  # 04
from batchlab.widgets.buckets import BucketExplorer as BucketExplorer  # 05
from batchlab.widgets.budget import BudgetExplorer as BudgetExplorer  # 06
from batchlab.widgets.allocator import AllocatorExplorer as AllocatorExplorer  # 08
from batchlab.widgets.allocator import InPlaceExplorer as InPlaceExplorer  # 09
from batchlab.widgets.loading import LoadingExplorer as LoadingExplorer  # 10
from batchlab.widgets.loading import ScalingExplorer as ScalingExplorer  # 11
from batchlab.widgets.advisor import AdvisorExplorer as AdvisorExplorer  # 12


def _enable_colab_widgets() -> None:
    """Colab draws ipywidgets 8 widgets only through its custom widget manager."""
    try:
        from google.colab import output  # only on Colab
    except ImportError:
        return
    output.enable_custom_widget_manager()


_enable_colab_widgets()
