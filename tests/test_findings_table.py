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


def test_claims_equal_up_to_figures_share_a_row_only_when_one_to_one():
    cpu = {
        ("finding", "slow on cpu: over 5x"): "holds",
        ("check", "a batch of 249 plans more than 256"): "holds",
        ("check", "8 devices"): "holds",
        ("check", "4 devices"): "holds",  # two CPU claims mask alike: no pairing for them
    }
    tpu = {
        ("finding", "slow on tpu: over 5x"): "inconclusive here",
        ("check", "a batch of 129 plans more than 136"): "does not hold",
        ("check", "2 devices"): "holds",
        ("check", "tpu only"): "holds",
    }
    got = findings.rows(cpu, tpu)
    assert got[0] == (
        "finding",
        "slow on cpu: over 5x (TPU's figures: tpu, 5)",
        "holds",
        "inconclusive here",
    )
    assert got[1][2:] == ("holds", "does not hold") and "(TPU's figures: 129, 136)" in got[1][1]
    assert got[2] == ("check", "8 devices", "holds", "-") and got[3] == (
        "check",
        "4 devices",
        "holds",
        "-",
    )
    assert ("check", "2 devices", "-", "holds") in got and (
        "check",
        "tpu only",
        "-",
        "holds",
    ) in got
    assert len(got) == 6


def test_readme_claims_table_is_current():
    assert findings.README.read_text() == findings.readme(), (
        "README.md's claims table is out of date: run python scripts/findings_table.py"
    )


def test_source_rows_count_tagged_findings_by_outcome_on_each_backend():
    from batchlab.claims import SOURCE_CLAIMS

    first, second = SOURCE_CLAIMS[0], SOURCE_CLAIMS[1]
    tag = f"[{first.name}]"
    cpu = {
        ("finding", f"a {tag}"): "holds (wall clock)",
        ("finding", f"b {tag}"): "holds",
        ("finding", "untagged"): "does not hold",
        ("check", f"c {tag}"): "does not hold",
    }
    tpu = {("finding", f"a {tag}"): "inconclusive here (wall clock)"}
    tables = {first.notebooks[0]: (cpu, tpu)}
    got = findings.source_rows(tables, [first, second])
    assert got[0] == (
        first.name,
        ", ".join(first.notebooks),
        "2 hold (checks: 1 does not hold)",
        "1 inconclusive here",
    )
    assert got[1][2:] == ("no finding", "no finding")
    assert findings.tally(["does not hold", "does not hold (wall clock)", "holds"]) == (
        "1 holds, 2 do not hold"
    )
