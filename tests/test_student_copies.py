"""What a learner meets: solutions collapsed in notebooks/, and student copies that "Run All" to the end.

The student copies are executed for real (a fresh kernel per notebook, as a
learner's "Run All" does), from the notebooks' own folder so relative paths
resolve as in class.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import workshop
from workshop import BEGIN, END

NOTEBOOKS = sorted(
    (Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb")
)
IDS = [p.stem for p in NOTEBOOKS]


def _solution_lines(source: str) -> list[str]:
    """The distinctive code lines inside the solution blocks of one cell."""
    lines, inside = [], False
    for line in source.splitlines():
        marker = line.strip()
        if marker == BEGIN:
            inside = True
        elif marker == END:
            inside = False
        elif (
            inside
            and len(marker) > 12
            # the stub keeps a function's signature and docstring on purpose
            and not marker.startswith(("#", "def ", "async def ", '"', "'"))
        ):
            lines.append(marker)
    return lines


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_solutions_are_collapsed_in_the_notebooks_make_lab_opens(path):
    nb = nbformat.read(path, as_version=4)
    solution_cells = [c for c in nb.cells if workshop.has_solution(c)]
    assert solution_cells, f"{path.name} has no exercise with a solution"
    for cell in solution_cells:
        meta = cell.metadata.get("jupyter", {})
        assert meta.get("source_hidden") and meta.get("outputs_hidden"), (
            f"{path.name}: a solution cell is visible; run `python scripts/workshop.py collapse`"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_solution_text_survives_in_the_student_copy(path):
    nb = nbformat.read(path, as_version=4)
    student = workshop.student_notebook(nb, name=path.name)
    student_code = "\n".join(c.source for c in student.cells if c.cell_type == "code")
    leaked = [
        line
        for cell in nb.cells
        if workshop.has_solution(cell)
        for line in _solution_lines(cell.source)
        # a line that also appears outside every solution block is not a solution
        if line in student_code
        and not any(line in c.source.split(BEGIN)[0] for c in nb.cells if c.cell_type == "code")
    ]
    assert not leaked, f"{path.name}: solution text left in the student copy: {leaked[:3]}"
    assert all(not c.outputs for c in student.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_student_copy_runs_all_to_the_last_cell(path):
    from nbclient import NotebookClient

    nb = workshop.student_notebook(nbformat.read(path, as_version=4), name=path.name)
    os.environ.setdefault("BATCHLAB_PROFILE", "cpu")
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=False,
    )
    client.execute()  # raises CellExecutionError naming the cell that stopped "Run All"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[-1].execution_count is not None
    checks = [
        o.get("data", {}).get("text/plain", "")
        for c in code
        if "exercises.check(" in c.source
        for o in c.outputs
    ]
    text = "\n".join(map(str, checks))
    assert "correct:" not in text.replace("not yet", ""), (
        f"{path.name}: a check graded the stub correct"
    )
