"""The child side of :func:`batchlab.scaling.distributed.launch`: runs the pickled job."""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from pathlib import Path


def main(payload: str, result: str) -> None:
    from batchlab.scaling.distributed import initialize

    initialize()  # before the job is unpickled: its arrays may need the backend
    job, args = pickle.loads(Path(payload).read_bytes())  # plain pickle reads cloudpickle's
    Path(result).write_bytes(pickle.dumps(job(*args)))


def _exit_now(code: int) -> None:
    """Leaves at once, not waiting (up to 5 min) in JAX's shutdown barrier for the others."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        main(*sys.argv[1:])
    except SystemExit as e:
        if e.code not in (None, 0):
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
            _exit_now(e.code if isinstance(e.code, int) else 1)
    except BaseException:
        traceback.print_exc()
        _exit_now(1)
