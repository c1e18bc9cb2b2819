"""Timed claims under load: every notebook's timed findings and checks, quiet and beside CPU hogs.

A timed verdict must not read the other way because the machine got busy:
load may make it *inconclusive here*, never definite and wrong. For every
notebook that keeps its verdicts in ``record = bl.claims.Record(...)`` and
times with ``bl.measuring.interleaved``, this runs the notebook ``--runs``
times on a quiet machine and ``--runs`` times beside ``--hogs`` CPU-bound
processes, each run a fresh kernel (nbclient, working directory notebooks/,
as ``scripts/run_notebooks.py``; the notebook is not written back) with one
appended cell that prints ``record``'s entries as JSON. Per timed claim it
records the quiet outcomes, the loaded outcomes, how many definite outcomes
read opposite to the quiet one (target 0) and the inconclusive rate under load.

    .venv/bin/python benchmarks/timed_claims.py                 # every such notebook, 5 + 5 runs
    .venv/bin/python benchmarks/timed_claims.py --notebooks 03 04 --runs 3

Writes benchmarks/results/timed_claims.json and timed_claims.md.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
MARK = "TIMED_CLAIMS_JSON "
DEFINITE = ("holds", "does not hold")
INCONCLUSIVE = "inconclusive here"
SPIN = "x = 0\nwhile True:\n    x = (x * 1103515245 + 12345) & 0xFFFFFFFF\n"
#: the appended cell: record's entries, one JSON line (getattr: a notebook may keep either kind)
PROBE = f"""
import json as _json

def _timed(entry):
    parts = (getattr(entry, "claim", None), getattr(entry, "contrast", None))
    return any(getattr(getattr(p, "decision", None), "timed", False) for p in parts)

print({MARK!r} + _json.dumps([
    {{"kind": kind, "statement": e.statement, "outcome": e.outcome, "timed": _timed(e)}}
    for kind, entries in (("finding", record.findings), ("check", record.checks))
    for e in entries
]))
"""


def timed_notebooks(folder: Path, selected: list[str] | None = None) -> list[Path]:
    """The notebooks of ``folder`` that keep a ``Record`` (and, unless named, use ``interleaved``).

    ``selected``: number prefixes (``["03", "04"]``); ``None``: all.
    """
    import nbformat

    found = []
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        if selected and path.name[:2] not in selected:
            continue
        nb = nbformat.read(path, as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        # by default the notebooks that time with the sampler; named ones need only a Record
        # (06 and 07 time their few wall-clock facts round-robin by hand)
        if "claims.Record(" in code and (selected or "interleaved" in code):
            found.append(path)
    return found


def parse_probe(outputs: list[dict]) -> list[dict]:
    """The entries the probe cell printed (its outputs as nbformat stores them)."""
    for out in outputs:
        text = out.get("text", "") if out.get("output_type") == "stream" else ""
        for line in text.splitlines():
            if line.startswith(MARK):
                return json.loads(line[len(MARK) :])
    raise ValueError("the probe cell printed no entries: is `record` defined by the notebook?")


def run_once(path: Path, timeout: int) -> list[dict]:
    """Executes ``path`` in a fresh kernel (cwd: its folder) with the probe appended."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=False,
    )
    client.execute()
    return parse_probe(nb.cells[-1].outputs)


class Hogs:
    """``n`` CPU-bound processes (a pure-Python busy loop each) while the block runs."""

    def __init__(self, n: int) -> None:
        self.n, self.procs = n, []

    def __enter__(self) -> Hogs:
        self.procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(10)


def aggregate(runs: dict[str, dict[str, list]]) -> list[dict]:
    """Per timed claim: its outcomes quiet and loaded, and what load did to them.

    ``runs[notebook]["quiet" | "loaded"]`` is a list of runs, each the probe's
    entries or an error string. The quiet outcome is the most common definite
    quiet outcome (``None`` when no quiet run was definite); ``opposite`` counts
    the definite loaded outcomes that read the other way (target 0), and
    ``quiet_opposite`` those among the quiet runs.
    """
    rows = []
    for notebook, by_load in runs.items():
        outcomes: dict[tuple, dict[str, list]] = {}
        for load in ("quiet", "loaded"):
            for run in by_load.get(load, []):
                if isinstance(run, str):
                    continue
                for e in run:
                    if e["timed"]:
                        key = (e["kind"], e["statement"])
                        outcomes.setdefault(key, {"quiet": [], "loaded": []})[load].append(
                            e["outcome"]
                        )
        for (kind, statement), seen in outcomes.items():
            quiet, loaded = seen["quiet"], seen["loaded"]
            definite = collections.Counter(o for o in quiet if o in DEFINITE)
            ref = definite.most_common(1)[0][0] if definite else None
            other = None if ref is None else DEFINITE[1 - DEFINITE.index(ref)]
            rows.append(
                {
                    "notebook": notebook,
                    "kind": kind,
                    "statement": statement,
                    "quiet": quiet,
                    "loaded": loaded,
                    "quiet_outcome": ref,
                    "opposite": loaded.count(other) if other else 0,
                    "quiet_opposite": quiet.count(other) if other else 0,
                    "inconclusive_rate_loaded": (
                        loaded.count(INCONCLUSIVE) / len(loaded) if loaded else None
                    ),
                }
            )
    return rows


def errors(runs: dict[str, dict[str, list]]) -> list[str]:
    return [
        f"{nb} ({load} run {i + 1}): {run}"
        for nb, by_load in runs.items()
        for load, rs in by_load.items()
        for i, run in enumerate(rs)
        if isinstance(run, str)
    ]


def markdown(rows: list[dict], meta: dict, errs: list[str]) -> str:
    def short(outcomes: list[str]) -> str:
        letters = {"holds": "H", "does not hold": "N", INCONCLUSIVE: "?"}
        return "".join(letters.get(o, "x") for o in outcomes) or "-"

    lines = [
        "# Timed claims, quiet and beside CPU hogs",
        "",
        f"{meta['date']}; jax {meta['jax']}, {meta['cores']} cores; {meta['runs']} quiet runs and "
        f"{meta['runs']} runs beside {meta['hogs']} CPU hogs per notebook, alternating.",
        "1-minute load average as each run began, quiet / loaded (before the hogs): "
        + "; ".join(
            f"{nb} {min(v['quiet'], default=0):.1f}-{max(v['quiet'], default=0):.1f} / "
            f"{min(v['loaded'], default=0):.1f}-{max(v['loaded'], default=0):.1f}"
            for nb, v in meta.get("loadavg", {}).items()
        ),
        "Outcomes per run: H holds, N does not hold, ? inconclusive here. Target: 0 definite "
        "outcomes under load opposite to the quiet one.",
        "",
        "| notebook | kind | claim | quiet | loaded | quiet reads | opposite under load "
        "| inconclusive under load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rate = r["inconclusive_rate_loaded"]
        lines.append(
            f"| {r['notebook']} | {r['kind']} | {r['statement']} | {short(r['quiet'])} "
            f"| {short(r['loaded'])} | {r['quiet_outcome'] or '-'} | {r['opposite']} "
            f"| {'-' if rate is None else f'{rate:.0%}'} |"
        )
    total = sum(r["opposite"] for r in rows)
    lines += ["", f"Definite outcomes under load opposite to the quiet one: **{total}**."]
    if errs:
        lines += ["", "Runs that failed:", *[f"- {e}" for e in errs]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", nargs="*", help="number prefixes, e.g. 03 04 (default: all)")
    parser.add_argument("--runs", type=int, default=5, help="runs quiet and runs loaded")
    parser.add_argument("--hogs", type=int, default=2, help="CPU-bound processes under load")
    parser.add_argument("--timeout", type=int, default=300, help="per-cell timeout (s)")
    parser.add_argument("--dir", type=Path, default=ROOT / "notebooks", help="notebook folder")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument("--resume", action="store_true", help="go on from the partial file")
    args = parser.parse_args(argv)
    os.environ.setdefault("BATCHLAB_PROFILE", "cpu")
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    paths = timed_notebooks(args.dir.resolve(), args.notebooks)
    if not paths:
        print("no notebook keeps a `record = bl.claims.Record(...)` and uses `interleaved`")
        return 1
    partial = args.out / "timed_claims.partial.json"
    # a stopped benchmark keeps what it finished: --resume goes on from the partial file
    saved = json.loads(partial.read_text()) if args.resume and partial.exists() else {}
    runs: dict[str, dict[str, list]] = saved.get("runs", {})
    loads: dict[str, dict[str, list]] = saved.get("loadavg", {})
    for path in paths:
        runs.setdefault(path.stem, {"quiet": [], "loaded": []})
        loads.setdefault(path.stem, {"quiet": [], "loaded": []})
        # quiet and loaded runs alternate, so a change in the machine's own load meets both
        for i in range(args.runs):
            for load in ("quiet", "loaded"):
                if len(runs[path.stem][load]) > i:
                    continue
                with Hogs(args.hogs if load == "loaded" else 0):
                    before = os.getloadavg()[0]
                    try:
                        result: list | str = run_once(path, args.timeout)
                    except Exception as e:  # a failing run is recorded, the others go on
                        result = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"
                runs[path.stem][load].append(result)
                loads[path.stem][load].append(round(before, 1))
                args.out.mkdir(parents=True, exist_ok=True)
                partial.write_text(json.dumps({"runs": runs, "loadavg": loads}))
                print(f"{path.stem}: {load} run {i + 1} of {args.runs} done", flush=True)
    import jax

    meta = {
        "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        "jax": jax.__version__,
        "cores": os.cpu_count(),
        "runs": args.runs,
        "hogs": args.hogs,
        "loadavg": loads,  # the 1-minute load average as each run began (hogs not yet counted)
    }
    rows, errs = aggregate(runs), errors(runs)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "timed_claims.json").write_text(
        json.dumps({"meta": meta, "claims": rows, "errors": errs, "runs": runs}, indent=1) + "\n"
    )
    text = markdown(rows, meta, errs)
    (args.out / "timed_claims.md").write_text(text)
    print(text)
    return 0 if not errs and all(r["opposite"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
