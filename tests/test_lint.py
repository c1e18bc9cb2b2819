"""ruff keeps the code as pyproject.toml says: lint everywhere, the package and notebooks formatted.

E501 is ignored in the lint (a formatted line may still carry a long string or comment); the
`line-length` case selects it alone on the package and the notebooks (notebooks/tpu excluded), so
no line there exceeds the 100 columns `ruff format` keeps: long strings are split into implicit
concatenations, long comments wrapped. ruff allows a line whose overlong end is one URL (the
install cell's `%pip install ... git+https://...`) or a pragma comment.
"""

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
        ["format", "--check", "batchlab", "tests", "benchmarks", "scripts", "notebooks"],
        ["check", "--select", "E501", "batchlab", "notebooks"],
    ],
    ids=["check", "format", "line-length"],
)
def test_ruff(args):
    if not Path(RUFF).exists():
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    done = subprocess.run([RUFF, *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
