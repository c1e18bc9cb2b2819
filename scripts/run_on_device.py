"""Execute every notebook on the accelerator at hand and store the executed copies.

Usage: python scripts/run_on_device.py [--out notebooks/tpu] [notebooks/NN_topic.ipynb ...]

Each notebook runs in a fresh kernel, one at a time (one process can hold a TPU), on an
ipc-transport kernel: its channels are unix sockets, so it runs where even loopback TCP is
refused. Errors do not stop the run: each cell's error is recorded and the next cell runs,
so one run lists every failure. A watchdog ends a kernel whose resident memory passes
``--max-rss-gib`` (a notebook must never fill the host). The executed copy goes to
``--out/NN_topic.ipynb`` and a line per notebook to ``--out/summary.json``: wall time, errors,
backend, device kind, jax version, date, and the hash of the notebook's code, so that a CI test
can tell a stored copy from a stale one (``tests/test_device_copies.py``). Nothing here
imports JAX: the kernel is the only process that opens the device.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parent.parent
#: the last cell the runner adds (and removes from the stored copy): what ran, as JSON
PROBE = (
    "import json as _j, jax as _x\n"
    "print('BATCHLAB-DEVICE-RUN ' + _j.dumps({'backend': _x.default_backend(), "
    "'device_kind': _x.devices()[0].device_kind, 'device_count': _x.device_count(), "
    "'jax': _x.__version__}))"
)


def code_hash(nb) -> str:
    """sha256 of a notebook's code cells' sources, in order (outputs and markdown ignored)."""
    text = "\n\x00\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def watch_memory(km: KernelManager, limit: int, stop: threading.Event, hit: list) -> None:
    """Kill the kernel (and its children) if their resident memory passes ``limit`` bytes."""
    while not stop.wait(0.5):
        try:
            proc = psutil.Process(km.provisioner.process.pid)
            procs = [proc, *proc.children(recursive=True)]
            rss = sum(p.memory_info().rss for p in procs)
        except Exception:
            continue
        if rss > limit:
            hit.append(rss)
            for p in procs:
                try:
                    p.kill()
                except psutil.Error:
                    pass
            return


def run_one(path: Path, out: Path, timeout: int, max_rss: int) -> dict:
    nb = nbformat.read(path, as_version=4)
    digest = code_hash(nb)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    km = KernelManager(kernel_name="python3", transport="ipc")
    km.ip = str(Path("/tmp") / f"batchlab-kernel-{os.getpid()}-{path.stem}")
    client = NotebookClient(
        nb,
        km=km,
        timeout=timeout,
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    stop, hit = threading.Event(), []
    fatal = None
    t0 = time.perf_counter()
    try:
        with client.setup_kernel():
            watcher = threading.Thread(target=watch_memory, args=(km, max_rss, stop, hit))
            watcher.start()
            t0 = time.perf_counter()
            for i, cell in enumerate(nb.cells):
                client.execute_cell(cell, i)
    except (DeadKernelError, CellTimeoutError, RuntimeError) as e:
        fatal = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        if hit:
            fatal = f"host memory: kernel RSS {hit[0] / 2**30:.1f} GiB > limit; killed ({fatal})"
    finally:
        stop.set()
    wall = time.perf_counter() - t0
    probe = nb.cells.pop()
    facts = {}
    for o in probe.get("outputs", []):
        for line in o.get("text", "").splitlines():
            if line.startswith("BATCHLAB-DEVICE-RUN "):
                facts = json.loads(line.split(" ", 1)[1])
    errors = []
    for i, c in enumerate(nb.cells):
        for o in c.get("outputs", []) if c.cell_type == "code" else []:
            if o.output_type == "error":
                errors.append({"cell": i, "id": c.get("id"), "error": f"{o.ename}: {o.evalue}"[:400]})
    out.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out / path.name)
    return {
        "notebook": path.name,
        "code_hash": digest,
        "wall_s": round(wall, 1),
        "errors": errors,
        "fatal": fatal,
        **facts,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "notebooks" / "tpu")
    parser.add_argument("--timeout", type=int, default=240, help="per-cell timeout (s)")
    parser.add_argument("--max-rss-gib", type=float, default=30.0)
    args = parser.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.pop("BATCHLAB_PROFILE", None)  # the device's own profile
    paths = args.paths or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    summary_path = args.out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    for p in paths:
        p = p.resolve()
        print(f"{p.name} ...", end=" ", flush=True)
        row = run_one(p, args.out, args.timeout, int(args.max_rss_gib * 2**30))
        summary[p.name] = row
        args.out.mkdir(parents=True, exist_ok=True)
        summary_path.write_text(json.dumps(dict(sorted(summary.items())), indent=1) + "\n")
        print(f"{row['wall_s']} s, {len(row['errors'])} errors" + (f", {row['fatal']}" if row["fatal"] else ""))
        for e in row["errors"]:
            print(f"   cell {e['cell']}: {e['error'][:300]}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
