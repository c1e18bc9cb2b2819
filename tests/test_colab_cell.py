"""scripts/colab_cell.py on copies of real notebooks: placement, badge, idempotence, stable output."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import colab_cell  # noqa: E402


@pytest.fixture
def copies(tmp_path):
    names = ["00_tour.ipynb", "11_scaling_out.ipynb"]
    for name in names:
        shutil.copy(ROOT / "notebooks" / name, tmp_path / name)
    return [tmp_path / n for n in names]


def test_inserts_once_after_the_before_jax_cells(copies):
    assert colab_cell.main([str(p) for p in copies]) == 0
    assert colab_cell.main(["--check", *map(str, copies)]) == 0  # a second run changes nothing
    for path in copies:
        nb = nbformat.read(path, 4)
        ids = [c.id for c in nb.cells]
        assert ids.count(colab_cell.CELL_ID) == 1
        first_code = next(
            c
            for c in nb.cells
            if c.cell_type == "code" and colab_cell.BEFORE_JAX not in c.metadata.get("tags", [])
        )
        assert first_code.id == colab_cell.CELL_ID  # the first code cell JAX may start in
        before = nb.cells[: ids.index(colab_cell.CELL_ID)]
        assert all(
            c.cell_type == "markdown" or colab_cell.BEFORE_JAX in c.metadata.get("tags", [])
            for c in before
        )
        title = next(c for c in nb.cells if c.cell_type == "markdown")
        assert (
            title.source.count(colab_cell.BADGE_IMAGE) == 1
            and f"notebooks/{path.name})" in title.source
        )
        cell = nb.cells[ids.index(colab_cell.CELL_ID)]
        assert cell.outputs == [] and cell.metadata.jupyter.source_hidden
    assert nbformat.read(copies[1], 4).cells[0].id == "595ad789"  # 11: the device count stays first


def test_repo_change_updates_in_place_and_check_reports(copies, capsys):
    colab_cell.main([str(copies[0])])
    assert colab_cell.main(["--check", "--repo", "someone/batchlab", str(copies[0])]) == 1
    assert "would change" in capsys.readouterr().out
    colab_cell.main(["--repo", "someone/batchlab", str(copies[0])])
    nb = nbformat.read(copies[0], 4)
    text = "".join(c.source for c in nb.cells)
    assert "OWNER/" not in text and text.count("/someone/batchlab") == 2
    assert [c.id for c in nb.cells].count(colab_cell.CELL_ID) == 1


def test_rejects_a_non_notebook(tmp_path, capsys):
    with pytest.raises(SystemExit):
        colab_cell.main([str(tmp_path / "x.py")])
    assert "is not a notebook" in capsys.readouterr().err


def test_the_cell_runs_and_prints_its_stored_output(tmp_path):
    """Executed by a real kernel where the kit is installed: it prints nothing (the stored output)."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [colab_cell._install_cell(colab_cell.PLACEHOLDER_REPO, "main")]
    nb.cells[0].outputs = []
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = nb.cells[0].outputs
    assert outputs == []
