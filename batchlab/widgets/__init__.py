"""Interactive explorers for the notebooks (ipywidgets front ends).

Every explorer is an :class:`Explorer`: controls -> a measurement through
the kit's core -> a plot updated in place. Each has a plain-Python entry
point, ``explorer.update(**params)``, that tests and the notebook cell after
each widget call without a browser. See ``explorer.py`` for the pattern.
"""

from __future__ import annotations

# the pattern, shared controls and the memory gauge
from . import controls as controls
from .explorer import Explorer as Explorer
from .gauge import GaugeReading as GaugeReading
from .gauge import MemoryGauge as MemoryGauge

# one explorer per notebook, in teaching order
from .batch_size import BatchSizeExplorer as BatchSizeExplorer  # 00
from .axes import AxesExplorer as AxesExplorer  # 01
from .axes import BroadcastExplorer as BroadcastExplorer  # 02
from .strategies import StrategyExplorer as StrategyExplorer  # 03
from .ragged import PaddingExplorer as PaddingExplorer  # 04
from .buckets import BucketExplorer as BucketExplorer  # 05
from .budget import BudgetExplorer as BudgetExplorer  # 06
from .allocator import AllocatorExplorer as AllocatorExplorer  # 08
from .allocator import InPlaceExplorer as InPlaceExplorer  # 09
from .loading import LoadingExplorer as LoadingExplorer  # 10
from .loading import ScalingExplorer as ScalingExplorer  # 11
