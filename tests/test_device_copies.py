"""The notebooks' executed accelerator copies (notebooks/tpu/, `make device-notebooks`) are current.

CI has no accelerator: it checks the stored copies instead. Each notebook either has a stored run
of today's code (same code hash, run on an accelerator, no error, no fatal end) or is listed as
stale in the summary with the reason; a stale copy is re-run the next time a device is lent.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
COPIES = ROOT / "notebooks" / "tpu"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _runner():
    spec = importlib.util.spec_from_file_location(
        "run_on_device", ROOT / "scripts/run_on_device.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUNNER = _runner()
SUMMARY = json.loads((COPIES / "summary.json").read_text())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_has_a_current_accelerator_copy_or_a_reason(path):
    nb = nbformat.read(path, as_version=4)
    run = SUMMARY["runs"].get(path.name)
    if run is None or run["code_hash"] != RUNNER.code_hash(nb):
        reason = SUMMARY["stale"].get(path.name, "")
        assert reason.strip(), (
            f"{path.name} changed since its accelerator copy ran and is not listed as stale: run "
            "`make device-notebooks` on an accelerator, or `python scripts/run_on_device.py "
            "--stale 'REASON'`"
        )
        return
    # current code may be listed only for what the package changed in its output
    why = SUMMARY["stale"].get(path.name, RUNNER.PACKAGE_CHANGE)
    assert why.startswith(RUNNER.PACKAGE_CHANGE), f"{path.name} is current but listed as stale"
    if path.name in SUMMARY["stale"]:
        return
    assert run["backend"] in ("tpu", "gpu"), run
    assert run["device_kind"] and run["jax"], run
    assert run["errors"] == [] and run["fatal"] is None, run
    copy = nbformat.read(COPIES / path.name, as_version=4)
    assert RUNNER.code_hash(copy) == run["code_hash"], "the stored copy is not the code that ran"
    errors = [
        o.ename
        for c in copy.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert errors == [], f"{path.name}'s accelerator copy stores errors: {errors}"
    assert all("outputs" in c for c in copy.cells if c.cell_type == "code")


def test_code_hash_sees_code_and_only_code():
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell("words")]
    )
    before = RUNNER.code_hash(nb)
    nb.cells[1].source = "other words"
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="1")]
    assert RUNNER.code_hash(nb) == before
    nb.cells[0].source = "x = 2"
    assert RUNNER.code_hash(nb) != before


def test_mark_stale_lists_changed_and_missing_notebooks_only():
    hashes = RUNNER.current_hashes()
    first, *rest = sorted(hashes)
    runs = {name: {"code_hash": hashes[name]} for name in rest}
    runs[rest[0]] = {"code_hash": "0" * 16}  # ran other code
    marked = RUNNER.mark_stale({"runs": runs}, "why")
    assert marked["stale"] == {first: "why", rest[0]: "why"}
    # a package change stales current code too, until that notebook runs again
    marked = RUNNER.mark_stale(marked, "pkg", package=(rest[1],))
    assert marked["stale"][rest[1]] == RUNNER.PACKAGE_CHANGE + "pkg"
    assert RUNNER.mark_stale(marked, "why")["stale"][rest[1]] == RUNNER.PACKAGE_CHANGE + "pkg"
    assert rest[1] not in RUNNER.mark_stale(marked, "why", rerun=[rest[1]])["stale"]


def test_a_reference_solution_graded_not_yet_counts_as_an_error():
    """A solution that is wrong on the device raises nothing: the checker's "not yet" is the sign."""
    nb = nbformat.v4.new_notebook()
    ok, wrong = (nbformat.v4.new_code_cell("check()") for _ in range(2))
    ok.outputs = [nbformat.v4.new_output("stream", name="stdout", text="[a.b] right: ok\n")]
    plain = {"text/plain": "['[budget.chunk_effect] not yet: More fit']"}
    wrong.outputs = [nbformat.v4.new_output("execute_result", data=plain, execution_count=1)]
    nb.cells = [ok, wrong]
    errors = RUNNER.cell_errors(nb)
    assert [e["cell"] for e in errors] == [1], errors
    assert errors[0]["error"].startswith("[budget.chunk_effect] not yet: More fit"), errors


@pytest.mark.parametrize("path", sorted(COPIES.glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem)
def test_stored_copies_list_every_error_they_show(path):
    """The summary's errors are what the stored copy shows (a "not yet" included)."""
    run = SUMMARY["runs"][path.name]
    if path.name in SUMMARY["stale"]:
        pytest.skip("stale: re-run pending")
    shown = RUNNER.cell_errors(nbformat.read(path, as_version=4))
    assert shown == run["errors"], (shown, run["errors"])
