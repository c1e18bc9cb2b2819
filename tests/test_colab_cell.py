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


def _run_install_branch(tmp_path, versions_before: dict, versions_after: dict) -> tuple[str, str]:
    """Runs the install cell's install branch in a real kernel, pip and versions faked.

    A setup cell makes ``find_spec("batchlab")`` answer None (the kit "missing"), replaces
    the ``%pip`` magic with one that records its command line, and serves package versions
    from ``versions_before`` until that fake pip ran, from ``versions_after`` after it.
    Returns (what the cell printed, the recorded pip command line).
    """
    from nbclient import NotebookClient

    setup = "\n".join(
        [
            "import importlib.metadata as md, importlib.util",
            "_find, _ran = importlib.util.find_spec, []",
            "importlib.util.find_spec = lambda name, *a: None if name == 'batchlab' else _find(name, *a)",
            f"_before, _after = {versions_before!r}, {versions_after!r}",
            "md.version = lambda p: (_after if _ran else _before)[p]",
            "get_ipython().register_magic_function(lambda line: _ran.append(line), 'line', 'pip')",
        ]
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(setup),
        colab_cell._install_cell(colab_cell.PLACEHOLDER_REPO, "main"),
        nbformat.v4.new_code_cell("print(_ran[0])"),
    ]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    said = "".join(o.get("text", "") for o in nb.cells[1].outputs).strip()
    command = "".join(o.get("text", "") for o in nb.cells[2].outputs).strip()
    return said, command


def test_the_install_keeps_a_preinstalled_jax_in_range_and_says_what_it_installed(tmp_path):
    kept = {"jax": "0.12.0.1", "jaxlib": "0.12.0.1", "batchlab": "0.1.0"}
    said, command = _run_install_branch(tmp_path, kept, kept)
    assert (
        said
        == "installed batchlab 0.1.0; jax 0.12.0.1, jaxlib 0.12.0.1 (kept the preinstalled one)"
    )
    # the pip line itself keeps what is in range: no jax pin, no upgrade of what satisfies
    assert (
        "--upgrade-strategy only-if-needed" in command
        and "batchlab[examples] @ git+https://" in command
    )
    args = command.split()
    assert not {"-U", "--upgrade", "--force-reinstall", "--ignore-installed"} & set(args)
    assert not any(a.strip('"').startswith(("jax", "jaxlib")) for a in args), command


def test_the_install_says_when_it_replaced_a_jax_outside_the_range(tmp_path):
    before = {"jax": "0.13.0", "jaxlib": "0.13.0"}
    after = {"jax": "0.12.0.1", "jaxlib": "0.12.0.1", "batchlab": "0.1.0"}
    said, _ = _run_install_branch(tmp_path, before, after)
    assert said.startswith(
        "installed batchlab 0.1.0; jax 0.12.0.1, jaxlib 0.12.0.1 (replaced jax 0.13.0"
    )
    assert "restart the runtime" in said


def test_the_cell_names_the_range_pyproject_declares_and_it_admits_the_newest_tested_jax():
    from packaging.specifiers import SpecifierSet

    declared = colab_cell.declared_jax_range()
    source = colab_cell.install_source(colab_cell.PLACEHOLDER_REPO, "main")
    assert f"jax{declared}" in source
    spec = SpecifierSet(declared)
    pins = [  # the pinned job's and the newest job's jax and jaxlib
        line.split("==")[1].strip()
        for name in ("constraints.txt", "constraints-newest.txt")
        for line in (ROOT / name).read_text().splitlines()
        if line.startswith(("jax==", "jaxlib=="))
    ]
    assert len(pins) == 4 and all(spec.contains(v) for v in pins), (declared, pins)
    assert "0.10.2" in spec and "0.10.1" not in spec  # the lowest: the pinned job's
