"""A non-editable install works outside the repository: the wheel carries its data.

Builds the wheel from a clean copy of the sources (no stale ``build/``),
installs it with ``--no-deps`` into a fresh venv whose other packages come
from this venv (a ``.pth`` line: fast and offline), and runs the notebooks
that load the shipped dataset (04, 05) in a folder outside the repository,
with a kernel on the fresh venv's Python. A first probe cell records where
``batchlab`` and its data were imported from.
"""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA_NOTEBOOKS = ["04_padding_and_masking.ipynb", "05_bucketing_and_recompilation.ipynb"]
PROBE = (
    "import sys, batchlab, batchlab.ragged.datasets\n"
    "print(sys.executable, batchlab.__file__, batchlab.ragged.datasets.DATA_DIR, sep='\\n')"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "batchlab", src / "batchlab", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
        check=True,
        timeout=600,
        capture_output=True,
    )
    (whl,) = dist.glob("batchlab-*.whl")
    return whl


def test_the_wheel_carries_the_dataset_and_its_license(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "batchlab/ragged/data/stdlib_functions.npz" in names
    assert "batchlab/ragged/data/README.md" in names and "batchlab/py.typed" in names


@pytest.fixture(scope="module")
def fresh_python(wheel, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # jax, numpy, ipykernel, ... from this venv; a path line in a .pth adds no .pth of its own,
    # so this venv's editable batchlab stays invisible there
    ours = [sysconfig.get_path("purelib"), *site.getsitepackages()]
    (purelib / "_reuse_deps.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")
    install = ["install", "--no-deps", "-q", "--no-index", str(wheel)]
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *install],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return python


def test_installed_package_loads_its_data_outside_the_repository(fresh_python, tmp_path):
    code = PROBE + "\nprint(len(batchlab.load_stdlib_functions()))"
    out = subprocess.run(
        [str(fresh_python), "-c", code],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    venv = fresh_python.parent.parent
    assert Path(out[1]).is_relative_to(venv) and not Path(out[1]).is_relative_to(ROOT), out
    assert Path(out[2]).is_relative_to(venv) and out[3] == "6811", out


@pytest.mark.parametrize("name", DATA_NOTEBOOKS)
def test_data_notebooks_run_from_the_wheel(fresh_python, tmp_path, monkeypatch, name):
    from nbclient import NotebookClient

    kernels = tmp_path / "jupyter" / "kernels" / "batchlab-wheel"
    kernels.mkdir(parents=True)
    argv = [str(fresh_python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (kernels / "kernel.json").write_text(json.dumps({"argv": argv, "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    outside = tmp_path / "class"
    outside.mkdir()
    nb = nbformat.read(ROOT / "notebooks" / name, 4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(PROBE))
    NotebookClient(
        nb,
        timeout=300,
        kernel_name="batchlab-wheel",
        resources={"metadata": {"path": str(outside)}},
    ).execute()  # raises CellExecutionError on the first failing cell
    probe = nb.cells[0].outputs[0]["text"].split("\n")
    venv = fresh_python.parent.parent
    assert all(Path(p).is_relative_to(venv) for p in probe[:3]), probe
    assert not any(Path(p).is_relative_to(ROOT) for p in probe[1:3]), probe
