"""Every finding and check of every notebook, its CPU and its TPU outcome side by side.

Usage: python scripts/findings_table.py [--check]

Reads the claims table each notebook prints last (``record``) from the stored outputs: the CPU
run in notebooks/ (validated by nbval in CI) and the accelerator run in notebooks/tpu/
(``make device-notebooks``), and writes docs/findings.md and the README's claims table (each
source claim's findings, counted by outcome on each backend). ``--check`` exits 1 when either is
not what the stored runs give (tests/test_findings_table.py). Nothing is re-measured here.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "findings.md"
README = ROOT / "README.md"
BEGIN = "<!-- claims table: written by scripts/findings_table.py from the stored runs -->"
END = "<!-- end of the claims table -->"
OUTCOMES = ("holds", "does not hold", "inconclusive here")


def claims(path: Path) -> tuple[str, dict[tuple[str, str], str]]:
    """(scope line, {(kind, claim): verdict}) from the last claims table ``path`` printed."""
    if not path.exists():
        return "", {}
    nb = nbformat.read(path, as_version=4)
    for cell in reversed([c for c in nb.cells if c.cell_type == "code"]):
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/plain", "")
            if text.startswith("Claims ("):
                head, *rows = text.splitlines()
                found = {}
                for row in rows:
                    kind, rest = row.removeprefix("- ").split(": ", 1)
                    claim, verdict = rest.rsplit(": ", 1)
                    found[(kind, claim)] = verdict
                return head.removeprefix("Claims (").rstrip("):"), found
    return "", {}


def same_claim(key: tuple[str, str]) -> tuple[str, str]:
    """A claim with its run's numbers and backend name masked: a claim that prints "(0.21)" on
    the CPU and "(0.31)" on the TPU, or names its backend, is one row."""
    kind, claim = key
    return kind, re.sub(r"\b(cpu|tpu|gpu)\b", "<backend>", re.sub(r"\d[\d,.]*", "#", claim))


def rows(cpu: dict, tpu: dict) -> list[tuple[str, str, str, str]]:
    """(kind, claim, CPU verdict, TPU verdict) per claim, in the CPU's order, then the TPU's own;
    claims equal up to numbers and backend name share a row where that match is one to one."""
    cpu_masked, tpu_masked = [same_claim(k) for k in cpu], [same_claim(k) for k in tpu]
    unique = {m for m in cpu_masked if cpu_masked.count(m) == 1 and tpu_masked.count(m) == 1}
    tpu_by = {same_claim(k): k for k in tpu if same_claim(k) in unique}
    out, used = [], set()
    for key, verdict in cpu.items():
        twin = key if key in tpu else tpu_by.get(same_claim(key))
        used.add(twin)
        figures = ", ".join(re.findall(r"\b(?:cpu|tpu|gpu)\b|\d[\d,.]*", twin[1])) if twin else ""
        claim = key[1] if twin in (None, key) else f"{key[1]} (TPU's figures: {figures})"
        out.append((key[0], claim, verdict, tpu.get(twin, "-")))
    out += [(k[0], k[1], "-", v) for k, v in tpu.items() if k not in used]
    return out


def tally(verdicts: list[str]) -> str:
    """``["holds", "holds (wall clock)", "does not hold"]`` -> "2 hold, 1 does not hold"."""
    counts = {o: sum(v.startswith(o) for v in verdicts) for o in OUTCOMES}
    words = {"holds": ("holds", "hold"), "does not hold": ("does not hold", "do not hold")}
    return ", ".join(f"{n} {words.get(o, (o, o))[n > 1]}" for o, n in counts.items() if n)


def source_rows(tables: dict[str, tuple[dict, dict]], sources) -> list[tuple[str, ...]]:
    """(name, notebooks, CPU tally, TPU tally) of each source claim: its findings (and checks)
    whose statement is tagged ``[name]``, in the notebooks the claim names."""
    out = []
    for source in sources:
        tag, cells = f"[{source.name}]", []
        for side in (0, 1):
            got = {"finding": [], "check": []}
            for nb in source.notebooks:
                for (kind, c), v in tables.get(nb, ({}, {}))[side].items():
                    if tag in c:
                        got[kind].append(v)
            text = tally(got["finding"]) if got["finding"] else "no finding"
            cells.append(text + (f" (checks: {tally(got['check'])})" if got["check"] else ""))
        out.append((source.name, ", ".join(source.notebooks), *cells))
    return out


def readme_table(tables: dict[str, tuple[dict, dict]], stale: dict) -> str:
    from batchlab.claims import SOURCE_CLAIMS  # the eleven names, defined once

    lines = [
        BEGIN,
        "| name | measured in | CPU: its findings | TPU v5e: its findings |",
        "|---|---|---|---|",
    ]
    for name, nbs, cpu, tpu in source_rows(tables, SOURCE_CLAIMS):
        old = [nb for nb in nbs.split(", ") if any(k.startswith(nb + "_") for k in stale)]
        tpu += f" (TPU copy of {', '.join(old)} stale)" if old else ""
        lines.append(f"| {name} | {nbs} | {cpu} | {tpu} |")
    return "\n".join([*lines, END])


def stored() -> tuple[dict, dict]:
    """``({notebook path: ((CPU scope, claims), (TPU scope, claims))}, {stale name: reason})``:
    each stored run read once."""
    runs = {
        path: (claims(path), claims(ROOT / "notebooks/tpu" / path.name))
        for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    }
    summary = json.loads((ROOT / "notebooks/tpu/summary.json").read_text())
    return runs, summary.get("stale", {})


def readme(runs_and_stale: tuple[dict, dict] | None = None) -> str:
    """README.md with its claims table rewritten from the stored runs."""
    runs, stale = runs_and_stale or stored()
    tables = {path.name[:2]: (cpu[1], tpu[1]) for path, (cpu, tpu) in runs.items()}
    head, rest = README.read_text().split(BEGIN, 1)
    return head + readme_table(tables, stale) + rest.split(END, 1)[1]


def table(runs_and_stale: tuple[dict, dict] | None = None) -> str:
    runs, stale_by_name = runs_and_stale or stored()
    lines = [
        "# Findings and checks: CPU and TPU side by side",
        "",
        "Generated by `python scripts/findings_table.py` from the stored runs: the CPU column from "
        "`notebooks/` (CI's machine class: 2 cores, validated by nbval), the TPU column from "
        "`notebooks/tpu/` (`make device-notebooks` on a lent TPU v5e). A notebook whose TPU copy "
        "ran older code says so; '-' means the claim was not recorded on that backend (the cell "
        "said why); a claim whose figures or backend name differ between the two runs shares one "
        "row, the TPU's figures in brackets. GPU: unrun, none was lent.",
        "",
    ]
    for path, ((cpu_scope, cpu), (tpu_scope, tpu)) in runs.items():
        stale = stale_by_name.get(path.name)
        lines += [f"## {path.stem}", ""]
        lines.append(
            f"CPU: {cpu_scope or 'no claims table'}. TPU: {tpu_scope or 'no claims table'}."
        )
        if stale:
            lines.append(f"The TPU copy is stale: {stale}.")
        lines += ["", "| kind | claim | CPU | TPU |", "|---|---|---|---|"]
        for kind, claim, cpu_verdict, tpu_verdict in rows(cpu, tpu):
            claim = claim.replace("|", "\\|")
            lines.append(f"| {kind} | {claim} | {cpu_verdict} | {tpu_verdict} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    runs_and_stale = stored()  # every stored notebook read once, for both files
    texts = {OUT: table(runs_and_stale), README: readme(runs_and_stale)}
    if args.check:
        old = [p.name for p, t in texts.items() if not p.exists() or p.read_text() != t]
        if old:
            print(f"{', '.join(old)} out of date: run python scripts/findings_table.py")
        return 1 if old else 0
    for path, text in texts.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
