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


if __name__ == "__main__":
    try:
        main(*sys.argv[1:])
    except BaseException:
        traceback.print_exc()  # unbuffered (PYTHONUNBUFFERED=1 from the launcher): nothing to flush
        os._exit(1)  # at once, not waiting (up to 5 min) in JAX's shutdown barrier for the others
