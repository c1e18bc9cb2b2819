"""Re-execute notebooks in place so their stored outputs are fresh.

Usage: python scripts/run_notebooks.py [notebooks/NN_topic.ipynb ...]
(no argument: every notebook in notebooks/). Runs each notebook in its own
kernel with the working directory set to notebooks/, exactly as nbval
does, with the CPU size profile so stored outputs match CI. Prints the
wall-clock time of each notebook; fails if any exceeds --budget seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def run(path: Path, timeout: int) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=False,
    )
    t0 = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - t0
    nbformat.write(nb, path)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--timeout", type=int, default=300, help="per-cell timeout (s)")
    parser.add_argument("--budget", type=float, default=60.0, help="warn above this many seconds")
    args = parser.parse_args()
    os.environ.setdefault("BATCHLAB_PROFILE", "cpu")
    os.environ.setdefault("TQDM_DISABLE", "1")
    paths = args.paths or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    slow = []
    for p in paths:
        p = p.resolve()
        print(f"executing {p.relative_to(ROOT)} ...", end=" ", flush=True)
        elapsed = run(p, args.timeout)
        print(f"{elapsed:.1f} s")
        if elapsed > args.budget:
            slow.append((p.name, elapsed))
    for name, elapsed in slow:
        print(f"WARNING: {name} took {elapsed:.1f} s (budget {args.budget:.0f} s on CI's 2 cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
