"""scripts/with_cpu_hogs.py: CI's busy machine on purpose (the notebooks of job 2 run beside it)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "with_cpu_hogs.py"


def run(*args, timeout=120):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout
    )


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_command_runs_beside_busy_hogs_and_its_exit_status_is_kept(tmp_path):
    # the command lists the script's children from /proc while it runs (the two hogs and
    # itself), then exits 7
    probe = (
        "import time, pathlib\n"
        "time.sleep(1.5)\n"
        "me = pathlib.Path('/proc/self/stat').read_text().split()[3]\n"  # the script's pid
        "kids = [p.name for p in pathlib.Path('/proc').iterdir() if p.name.isdigit()\n"
        "        and (p / 'stat').exists() and (p / 'stat').read_text().rsplit(')', 1)[1].split()[1] == me]\n"
        f"pathlib.Path({str(tmp_path / 'kids')!r}).write_text(' '.join(kids))\n"
        "raise SystemExit(7)\n"
    )
    r = run("2", "--", sys.executable, "-c", probe)
    assert r.returncode == 7, r.stderr
    assert "2 CPU-bound process(es) running beside the command" in r.stdout
    siblings = [int(p) for p in (tmp_path / "kids").read_text().split() if int(p) != os.getpid()]
    assert len(siblings) >= 3  # two hogs and the command itself, children of the script
    used = r.stdout.rsplit("CPU used by the hogs:", 1)[1].split(",")
    assert len(used) == 2 and all(float(u.strip().split()[0]) > 0 for u in used), r.stdout
    assert not any(alive(p) for p in siblings)  # every hog stopped when the command ended


@pytest.mark.parametrize(
    "args, match",
    [
        (("x", "--", "true"), "`N` must be a whole number"),
        (("-1", "--", "true"), "`N` must be 0"),
        (("2", "true"), "usage"),
    ],
)
def test_bad_arguments_are_refused_before_any_hog_starts(args, match):
    r = run(*args)
    assert r.returncode == 2 and match in r.stderr and "running beside" not in r.stdout
