"""Interactive explorers for the notebooks (ipywidgets front ends).

Every explorer is an :class:`Explorer`: controls -> a measurement through
the kit's core -> a plot updated in place. Each has a plain-Python entry
point, ``explorer.update(**params)``, that tests and the notebook cell after
each widget call without a browser. See ``explorer.py`` for the pattern.
"""

from __future__ import annotations

from . import controls as controls

# fragmentation and in-place updates (issue 6)
from .allocator import AllocatorExplorer as AllocatorExplorer
from .allocator import InPlaceExplorer as InPlaceExplorer

# strategies, axes and broadcasting (issue 3)
from .axes import AxesExplorer as AxesExplorer
from .axes import BroadcastExplorer as BroadcastExplorer
from .batch_size import BatchSizeExplorer as BatchSizeExplorer

# memory limits and faults (issue 5)
from .budget import BudgetExplorer as BudgetExplorer
from .explorer import Explorer as Explorer
from .gauge import GaugeReading as GaugeReading
from .gauge import MemoryGauge as MemoryGauge

# loading and scaling (issue 7)
from .loading import LoadingExplorer as LoadingExplorer
from .loading import ScalingExplorer as ScalingExplorer

# ragged data (issue 4)
from .ragged import BucketExplorer as BucketExplorer
from .ragged import PaddingExplorer as PaddingExplorer
from .strategies import StrategyExplorer as StrategyExplorer
