"""Execute every notebook on the accelerator at hand and store the executed copies.

Usage: python scripts/run_on_device.py [--out notebooks/tpu] [notebooks/NN_topic.ipynb ...]

Each notebook runs in a fresh process, one at a time (one process can hold a TPU), in that
process's own IPython shell: no kernel, no socket, so it runs where even loopback TCP is
refused (a Jupyter kernel's zmq dies there, ipc transport too). Errors do not stop the run: each cell's error is recorded and the next cell runs,
so one run lists every failure. A watchdog ends a process whose resident memory passes
``--max-rss-gib`` (a notebook must never fill the host). The executed copy goes to
``--out/NN_topic.ipynb`` and a row per notebook to ``--out/summary.json`` ("runs": wall time,
errors, backend, device kind, jax version, date, the hash of the notebook's code; JAX's start
before the first cell (unless that cell configures JAX: then in it), timed apart from the cells' own seconds (``after_jax_start_s``): importing
it and opening the device (``jax_start_s``), then the compiler's start, one jitted op compiled
and run (``first_compile_s``); the kit's import after them (``kit_import_s``) counts with the
cells, which would pay it in their first; "stale": each
notebook whose code changed since its stored run, with the reason), so that a CI test can tell
a current copy from a stale one (``tests/test_device_copies.py``). ``--stale REASON`` only
updates that list (for a change made when no accelerator is lent). Nothing here
imports JAX: the kernel is the only process that opens the device.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil

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


def watch_memory(pid: int, limit: int, stop: threading.Event, hit: list) -> None:
    """Kill process ``pid`` (and its children) if their resident memory passes ``limit`` bytes."""
    while not stop.wait(0.2):
        try:
            proc = psutil.Process(pid)
            procs = [proc, *proc.children(recursive=True)]
            rss = sum(p.memory_info().rss for p in procs)
        except psutil.Error:
            continue
        if rss > limit:
            hit.append(rss)
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    p.kill()
            return


class _Stream(io.TextIOBase):
    """sys.stdout / sys.stderr of a cell: text appended to the cell's outputs, in order."""

    def __init__(self, outputs: list, name: str):
        self.outputs, self.name = outputs, name

    def write(self, text: str) -> int:
        if not text:
            return 0
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last.output_type == "stream" and last.name == self.name:
            last.text += text
        else:
            self.outputs.append(nbformat.v4.new_output("stream", name=self.name, text=text))
        return len(text)


def _jsonable(data: dict) -> dict:
    """A display's mime bundle as a notebook stores it: binary (PNG) base64-encoded."""
    return {k: base64.b64encode(v).decode() if isinstance(v, bytes) else v for k, v in data.items()}


def execute_in_process(path: Path) -> None:
    """The child: run ``path`` cell by cell in this process's IPython shell, write it back."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    nb = nbformat.read(path, as_version=4)
    os.chdir(path.parent if path.parent.name != "tpu" else ROOT / "notebooks")
    shell = InteractiveShell.instance()
    outputs: list = []

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, *args, **kwargs):
            outputs.append(
                nbformat.v4.new_output(
                    "display_data", data=_jsonable(data), metadata=metadata or {}
                )
            )

        def clear_output(self, wait=False):
            pass

    class Hook(DisplayHook):
        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            outputs.append(
                nbformat.v4.new_output(
                    "execute_result",
                    data=_jsonable(format_dict),
                    metadata=md_dict or {},
                    execution_count=self.prompt_count,
                )
            )

    shell.display_pub = Publisher(shell=shell)
    shell.displayhook = Hook(shell=shell, cache_size=shell.cache_size)
    shell.display_trap.hook = shell.displayhook

    def show_error(etype, evalue, stb):
        outputs.append(
            nbformat.v4.new_output(
                "error",
                ename=getattr(etype, "__name__", str(etype)),
                evalue=str(evalue),
                traceback=list(stb),
            )
        )

    shell._showtraceback = show_error
    shell.InteractiveTB.set_mode("Plain")
    stdout, stderr = sys.stdout, sys.stderr
    shell.run_cell("%matplotlib inline", silent=True)
    first = next((c.source for c in nb.cells if c.cell_type == "code"), "")
    if "jax.config.update(" not in first:  # a first cell that configures JAX must run first
        t0 = time.perf_counter()  # JAX's start (the backend, the chip's runtime), timed apart
        shell.run_cell("import jax as _x; _x.devices()", silent=True)
        t1 = time.perf_counter()  # the compiler's own start: one jitted op, compiled and run
        shell.run_cell("_x.block_until_ready(_x.jit(lambda a: a + 1)(1.0))", silent=True)
        t2 = time.perf_counter()  # the kit's import: the notebook's first cell would pay it
        laps = (t1 - t0, t2 - t1, time.perf_counter() - t2)
        nb.metadata["jax_start_seconds"] = [round(t, 3) for t in laps]
    from batchlab import count_compiles  # here: the parent process never imports JAX

    for n, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        outputs.clear()
        sys.stdout, sys.stderr = _Stream(outputs, "stdout"), _Stream(outputs, "stderr")
        t0 = time.perf_counter()
        try:
            with count_compiles() as compiles:  # XLA backend compiles of this cell
                shell.run_cell(cell.source, store_history=True)
        finally:
            sys.stdout, sys.stderr = stdout, stderr
        cell.metadata["seconds"] = round(time.perf_counter() - t0, 3)
        cell.metadata["compiles"] = [compiles.count, round(compiles.seconds, 3)]  # count, seconds
        cell.outputs = list(outputs)
        cell.execution_count = n + 1
        print(f"cell {n + 1}: {len(outputs)} outputs", flush=True)
    nbformat.write(nb, path)


def cell_errors(nb) -> list[dict]:
    """Each cell's exception, and each "not yet" the kit's checker gave a reference solution (a
    solution that is wrong on this backend raises nothing)."""
    errors = []
    for i, c in enumerate(nb.cells):
        for o in c.get("outputs", []) if c.cell_type == "code" else []:
            if o.output_type == "error":
                errors.append(
                    {"cell": i, "id": c.get("id"), "error": f"{o.ename}: {o.evalue}"[:400]}
                )
            # a reference solution the kit's own checker grades "not yet" is wrong on this backend
            elif m := re.search(
                r"\[[\w.]+\] not yet:[^'\"\n]*", json.dumps(o.get("text", o.get("data", "")))
            ):
                errors.append({"cell": i, "id": c.get("id"), "error": m.group(0)[:400]})
    return errors


def run_one(path: Path, out: Path, timeout: int, max_rss: int) -> dict:
    """Run a copy of ``path`` in a fresh process (the only one holding the device) into ``out``."""
    nb = nbformat.read(path, as_version=4)
    digest = code_hash(nb)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    out.mkdir(parents=True, exist_ok=True)
    target = out / path.name
    nbformat.write(nb, target)
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, __file__, "--child", str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    stop, hit = threading.Event(), []
    watcher = threading.Thread(target=watch_memory, args=(child.pid, max_rss, stop, hit))
    watcher.start()
    try:
        log, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        log, _ = child.communicate()
    stop.set()
    wall = time.perf_counter() - t0
    fatal = None
    if child.returncode != 0:
        fatal = f"exit {child.returncode}: {log.strip().splitlines()[-1] if log.strip() else ''}"[
            :400
        ]
        if hit:
            fatal = f"host memory: RSS {hit[0] / 2**30:.1f} GiB > limit, killed"
        (out / f"{path.stem}.log").write_text(log)
    nb = nbformat.read(target, as_version=4)
    probe = nb.cells.pop()
    facts = {}
    for o in probe.get("outputs", []):
        for line in o.get("text", "").splitlines():
            if line.startswith("BATCHLAB-DEVICE-RUN "):
                facts = json.loads(line.split(" ", 1)[1])
    errors = cell_errors(nb)
    started, first_compile, kit = nb.metadata.pop("jax_start_seconds", [None, None, 0.0])
    nbformat.write(nb, target)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return {
        "notebook": path.name,
        "code_hash": digest,
        "wall_s": round(wall, 1),
        "jax_start_s": started,
        "first_compile_s": first_compile,
        "kit_import_s": kit,  # counted in after_jax_start_s, as the first cell would pay it
        "after_jax_start_s": round(kit + sum(c.metadata.get("seconds", 0) for c in code), 1),
        "errors": errors,
        "fatal": fatal,
        **facts,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def current_hashes() -> dict[str, str]:
    """Today's code hash of every notebook in notebooks/."""
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    return {p.name: code_hash(nbformat.read(p, as_version=4)) for p in paths}


#: a stale entry for a notebook whose code is unchanged: the package changed what it prints
PACKAGE_CHANGE = "package change: "


def mark_stale(summary: dict, reason: str, package: tuple[str, ...] = (), rerun=()) -> dict:
    """List every notebook whose stored run is missing or ran other code, with ``reason``; the
    ``package`` notebooks (code unchanged, output changed by the package) with ``PACKAGE_CHANGE +
    reason``; earlier package entries stay until their notebook is ``rerun``."""
    runs = summary.get("runs", {})
    stale = {
        name: reason
        for name, digest in current_hashes().items()
        if runs.get(name, {}).get("code_hash") != digest
    }
    earlier = {
        name: why
        for name, why in summary.get("stale", {}).items()
        if why.startswith(PACKAGE_CHANGE) and name not in rerun
    }
    earlier |= {name: PACKAGE_CHANGE + reason for name in package}
    return {"runs": runs, "stale": earlier | stale}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "notebooks" / "tpu")
    parser.add_argument("--timeout", type=int, default=300, help="per-notebook timeout (s)")
    parser.add_argument("--max-rss-gib", type=float, default=30.0)
    parser.add_argument(
        "--stale",
        metavar="REASON",
        help="run nothing: list every notebook whose stored copy ran other code, with REASON "
        "(e.g. 'no accelerator lent since the change')",
    )
    parser.add_argument(
        "--package",
        nargs="+",
        default=(),
        metavar="NOTEBOOK",
        help="with --stale: these notebooks (file names) print otherwise since a package change",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        execute_in_process(args.child.resolve())
        return 0
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.pop("BATCHLAB_PROFILE", None)  # the device's own profile
    summary_path = args.out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary.setdefault("runs", {})
    if args.stale:
        summary = mark_stale(summary, args.stale, tuple(args.package))
        summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
        print(f"stale: {sorted(summary['stale']) or 'none'}")
        return 0
    paths = args.paths or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for p in paths:
        p = p.resolve()
        print(f"{p.name} ...", end=" ", flush=True)
        row = run_one(p, args.out, args.timeout, int(args.max_rss_gib * 2**30))
        summary["runs"][p.name] = row
        summary = mark_stale(summary, "not run on an accelerator since this change", rerun=[p.name])
        summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
        fatal = f", {row['fatal']}" if row["fatal"] else ""
        print(f"{row['wall_s']} s, {len(row['errors'])} errors{fatal}", flush=True)
        for e in row["errors"]:
            print(f"   cell {e['cell']}: {e['error'][:300]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
