"""``python -m batchlab.distributed --processes 2 --devices-per-process 4 SCRIPT [ARGS...]``."""

import sys

from . import main

sys.exit(main())
