"""docs/findings.md is what the stored CPU and TPU runs give (scripts/findings_table.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("findings", ROOT / "scripts/findings_table.py")
findings = importlib.util.module_from_spec(spec)
spec.loader.exec_module(findings)


def test_findings_doc_is_current():
    assert findings.OUT.read_text() == findings.table(), (
        "docs/findings.md is out of date: run python scripts/findings_table.py"
    )


def test_claims_reads_kind_claim_and_verdict_with_colons_inside(tmp_path):
    import nbformat

    text = (
        "Claims (cpu; jax 0.10.2):\n- finding: a: b: holds (wall clock)\n- check: c: does not hold"
    )
    cell = nbformat.v4.new_code_cell("record")
    cell.outputs = [
        nbformat.v4.new_output("execute_result", data={"text/plain": text}, execution_count=1)
    ]
    path = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    scope, rows = findings.claims(path)
    assert scope == "cpu; jax 0.10.2"
    assert rows == {("finding", "a: b"): "holds (wall clock)", ("check", "c"): "does not hold"}
