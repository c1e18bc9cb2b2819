"""``python -m batchlab.scaling.distributed --processes 2 --devices-per-process 4 SCRIPT [ARGS...]``."""

import sys

from batchlab.scaling.distributed import main

sys.exit(main())
