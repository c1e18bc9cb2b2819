"""ruff keeps the code as pyproject.toml says: lint everywhere, the package formatted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUFF = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")


@pytest.mark.parametrize(
    "args",
    [
        ["check", "batchlab", "tests", "benchmarks", "scripts", "notebooks"],
        ["format", "--check", "batchlab", "tests", "benchmarks", "scripts"],
    ],
    ids=["check", "format"],
)
def test_ruff(args):
    if not Path(RUFF).exists():
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    done = subprocess.run([RUFF, *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
