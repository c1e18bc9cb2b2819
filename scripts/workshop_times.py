"""Class time per notebook for docs/workshop.md: measured run time + reading + exercises.

Usage: python scripts/workshop_times.py [--run-times FILE]

For each notebook it counts what a learner does: the markdown words to read,
the code cells to run and read, the committed predictions (`exercises.reveal`)
and the checked exercises (`exercises.check`), and adds the notebook's
measured "Run All" time (from `scripts/run_notebooks.py` output, or measured
now). The per-item allowances are a model, stated here and printed with the
result; they were calibrated on the two notebooks whose class time was
measured in a learner run-through (00_tour: 25-30 min, 03: about 30 min, in
their earlier, shorter form): with these allowances the model gives 26 and 27
minutes for those two versions (`git show b3a9730:notebooks/...`).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
WORDS_PER_MINUTE = 90  # reading technical text with code beside it, in class
MINUTES_PER_CODE_CELL = 0.45  # read the code, run it, glance at the output
MINUTES_PER_PREDICTION = 3.0  # the room commits to a number, then the reveal
MINUTES_PER_EXERCISE = 5.0  # write, check, read the hint, retry


def counts(path: Path) -> dict:
    nb = nbformat.read(path, as_version=4)
    words = sum(len(re.findall(r"\w+", c.source)) for c in nb.cells if c.cell_type == "markdown")
    code = [c for c in nb.cells if c.cell_type == "code"]
    predictions = sum(c.source.count("exercises.reveal(") for c in code)
    exercises = sum(c.source.count("exercises.check(") for c in code)
    return dict(words=words, code_cells=len(code), predictions=predictions, exercises=exercises)


def minutes(c: dict, run_seconds: float) -> float:
    return (
        run_seconds / 60
        + c["words"] / WORDS_PER_MINUTE
        + c["code_cells"] * MINUTES_PER_CODE_CELL
        + c["predictions"] * MINUTES_PER_PREDICTION
        + c["exercises"] * MINUTES_PER_EXERCISE
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--run-times", type=Path, help="output of scripts/run_notebooks.py")
    args = parser.parse_args()
    run = {}
    if args.run_times:
        name = None
        for line in args.run_times.read_text().splitlines():
            m = re.search(r"(\d\d_\w+)\.ipynb", line)
            if m:
                name = m.group(1)
            t = re.search(r"([\d.]+) s$", line)
            if name and t:
                run[name] = float(t.group(1))
                name = None
    print(
        f"model: {WORDS_PER_MINUTE} words/min, {MINUTES_PER_CODE_CELL} min per code cell, "
        f"{MINUTES_PER_PREDICTION} min per prediction, {MINUTES_PER_EXERCISE} min per exercise"
    )
    print(
        "| notebook | Run All (s) | words | code cells | predictions | exercises | class minutes |"
    )
    print("|---|---|---|---|---|---|---|")
    total = 0.0
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        c = counts(path)
        r = run.get(path.stem, 0.0)
        m = minutes(c, r)
        total += m
        print(
            f"| `{path.stem}` | {r:.0f} | {c['words']} | {c['code_cells']} | {c['predictions']} "
            f"| {c['exercises']} | {m:.0f} |"
        )
    print(f"total: {total:.0f} min")


if __name__ == "__main__":
    main()
