"""benchmarks/timed_claims.py: which notebooks it runs, what it reads back, how it counts flips."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest

PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "timed_claims.py"
spec = importlib.util.spec_from_file_location("timed_claims", PATH)
tc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tc)


def _nb(folder: Path, name: str, *sources: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, folder / name)


def test_selects_notebooks_that_keep_a_record_and_time_interleaved(tmp_path):
    rec = "record = bl.claims.Record(sizes={})"
    _nb(tmp_path, "03_a.ipynb", rec, "t = bl.measuring.interleaved({'a': f, 'b': g})")
    _nb(tmp_path, "04_b.ipynb", rec)  # no timing
    _nb(tmp_path, "05_c.ipynb", "t = bl.measuring.interleaved({'a': f, 'b': g})")  # no record
    _nb(tmp_path, "10_d.ipynb", rec, "interleaved")
    assert [p.name for p in tc.timed_notebooks(tmp_path)] == ["03_a.ipynb", "10_d.ipynb"]
    assert [p.name for p in tc.timed_notebooks(tmp_path, ["10"])] == ["10_d.ipynb"]
    # a notebook named on the command line needs only its Record (it may time by hand)
    assert [p.name for p in tc.timed_notebooks(tmp_path, ["04", "05"])] == ["04_b.ipynb"]


def test_parses_the_probe_line_among_other_output():
    entries = [{"kind": "finding", "statement": "s", "outcome": "holds", "timed": True}]
    outputs = [
        {"output_type": "stream", "name": "stderr", "text": "a warning\n"},
        {"output_type": "stream", "name": "stdout", "text": f"x\n{tc.MARK}{json.dumps(entries)}\n"},
    ]
    assert tc.parse_probe(outputs) == entries
    with pytest.raises(ValueError, match="printed no entries"):
        tc.parse_probe([{"output_type": "execute_result", "data": {}}])


def _run(*outcomes, timed=True):
    return [
        {"kind": "finding", "statement": f"claim {i}", "outcome": o, "timed": timed}
        for i, o in enumerate(outcomes)
    ]


def test_counts_opposite_definite_outcomes_and_the_inconclusive_rate():
    H, N, Q = "holds", "does not hold", "inconclusive here"
    runs = {
        "03_x": {
            "quiet": [_run(H, N, Q), _run(H, N, Q), _run(H, H, Q)],
            "loaded": [_run(H, Q, H), _run(N, N, Q), "RuntimeError: boom", _run(Q, N, N)],
        }
    }
    rows = {r["statement"]: r for r in tc.aggregate(runs)}
    assert rows["claim 0"]["quiet_outcome"] == H and rows["claim 0"]["opposite"] == 1
    assert rows["claim 0"]["inconclusive_rate_loaded"] == pytest.approx(1 / 3)
    assert rows["claim 1"]["quiet_outcome"] == N and rows["claim 1"]["quiet_opposite"] == 1
    assert rows["claim 1"]["opposite"] == 0
    # never definite when quiet: no reference, nothing counted as opposite
    assert rows["claim 2"]["quiet_outcome"] is None and rows["claim 2"]["opposite"] == 0
    assert tc.errors(runs) == ["03_x (loaded run 3): RuntimeError: boom"]
    text = tc.markdown(
        tc.aggregate(runs), {"date": "d", "jax": "j", "cores": 2, "runs": 3, "hogs": 2}, []
    )
    assert "| 03_x | finding | claim 0 | HHH | HN? | holds | 1 | 33% |" in text
    assert "opposite to the quiet one: **1**" in text


def test_untimed_entries_are_left_out():
    runs = {"03_x": {"quiet": [_run("holds", timed=False)], "loaded": [_run("holds", timed=False)]}}
    assert tc.aggregate(runs) == []
