"""Run a command while N CPU-bound processes run beside it (a busy machine, on purpose).

    python scripts/with_cpu_hogs.py 2 -- python -m pytest notebooks/...

CI runs every notebook on the newest jax this way (``make test-jax-new NOTEBOOK_HOGS=2``):
a notebook whose Run All breaks when the machine is busy (a timing assert, a race, a
timeout sized for a quiet machine) fails CI instead of a workshop. Each hog is a pure-Python
busy loop in a process of its own (no I/O, no sleep). They are stopped when the command ends,
fails or is interrupted; the exit status is the command's. At the end it prints the CPU
seconds each hog used, so a log shows they really competed for the cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

SPIN = "x = 0\nwhile True:\n    x = (x * 1103515245 + 12345) & 0xFFFFFFFF\n"


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str]) -> int:
    usage = "usage: with_cpu_hogs.py N -- command [args...]"
    if len(argv) < 3 or argv[1] != "--":
        print(usage, file=sys.stderr)
        return 2
    try:
        n = int(argv[0])
    except ValueError:
        print(
            f"{usage}\n`N` must be a whole number of hog processes, got {argv[0]!r}.",
            file=sys.stderr,
        )
        return 2
    if n < 0:
        print(f"{usage}\n`N` must be 0 or more, got {n}.", file=sys.stderr)
        return 2
    command = argv[2:]
    hogs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(n)]
    print(
        f"with_cpu_hogs: {n} CPU-bound process(es) running beside the command "
        f"(pids {[h.pid for h in hogs]}; {os.cpu_count()} cores): {' '.join(command)}",
        flush=True,
    )
    t0 = time.monotonic()
    try:
        rc = subprocess.call(command)
    except KeyboardInterrupt:
        rc = 130
    finally:
        used = [_cpu_seconds(h.pid) for h in hogs]
        for h in hogs:
            h.terminate()
        for h in hogs:
            h.wait(5)
    wall = time.monotonic() - t0
    shown = ", ".join("?" if u is None else f"{u:.1f} s" for u in used)
    print(
        f"with_cpu_hogs: command exited {rc} after {wall:.0f} s; CPU used by the hogs: {shown}",
        flush=True,
    )
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
