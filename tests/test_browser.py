"""The notebooks and their explorers in a real browser: JupyterLab + headless Chromium.

Starts JupyterLab from the repo on a free localhost port (temporary Jupyter
config, data and runtime folders; autosave off, so the repo's notebooks are
never rewritten), drives Debian's Chromium headless through Playwright's
Python package (the system browser, launched by path: nothing is
downloaded), and for every notebook in ``NOTEBOOKS``:

1. (``SHOWCASE`` notebooks) opens a copy of it as ``make lab`` shows it
   (stored outputs, no Run All) and checks what a learner sees first:
   solutions collapsed, a prediction's reveal shown (that every notebook
   carries the collapsing metadata is tests/test_student_copies.py's);
2. opens its **student copy** (``scripts/workshop.py``: solutions stubbed,
   outputs cleared, written under ``artifacts/browser/student/``), runs all
   cells as a learner in class does, and checks that every code cell ran, none
   shows an error and no exercise check graded a stub correct (so this test
   is also the student copies' "Run All": CI runs that once, here);
3. moves the slider of its explorers (at most ``MAX_EXPLORERS`` each) one
   step, as a learner would, and checks that the explorer shows the new
   setting (``data-params`` matches the slider's readout), a new status line
   and a new plot; a batch-size explorer must show a larger planned peak for
   a larger batch;
4. saves screenshots under ``artifacts/screenshots/``.

JupyterLab only ever opens copies under ``artifacts/browser/``, never a file in
``notebooks/`` (the work tree may be shared with someone editing them).

Every wait is on the page's state (execution counts, the explorer's
``data-state``, its controls), never on time, so a busy machine only makes it
slower.

A throwaway notebook (written under ``artifacts/``) adds two more explorers
and an explorer whose last setting fails, to check that the kit's message
appears inside the widget.

Where Chromium or Playwright is missing the test skips with a loud reason;
with ``BATCHLAB_REQUIRE_BROWSER=1`` (CI) it fails instead. ``BATCHLAB_CHROMIUM``
overrides the browser path.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Notebooks to run in the browser (paths relative to the repo root); extend freely.
NOTEBOOKS = sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
)
#: At most this many explorers are moved per notebook (keeps the test short).
MAX_EXPLORERS = 2
THROWAWAY = "artifacts/browser/explorers_demo.ipynb"
STUDENT_DIR = "artifacts/browser/student"
LAB_DIR = "artifacts/browser/lab"  # copies of the notebooks as `make lab` opens them
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
# notebooks whose collapsed solution and prediction reveal are also photographed
SHOWCASE = ("00_tour", "05_bucketing_and_recompilation")
CHROMIUM = os.environ.get("BATCHLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RUN_TIMEOUT_S = 600  # a safety net against a hang, not a speed target: a busy machine is slow
MOVE_TIMEOUT_S = 180


def _require_browser():
    """Returns playwright's sync_playwright, or skips (fails under BATCHLAB_REQUIRE_BROWSER=1) loudly."""
    problem = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright, problem = (
            None,
            "the `playwright` Python package is not installed (pip install playwright)",
        )
    if problem is None and not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        problem = (
            f"no Chromium at {CHROMIUM} (run scripts/install_browser.sh, i.e. "
            "`apt-get install -y chromium`, or set BATCHLAB_CHROMIUM)"
        )
    if problem:
        message = f"REAL-BROWSER TEST NOT RUN: {problem}."
        if os.environ.get("BATCHLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " BATCHLAB_REQUIRE_BROWSER=1 forbids skipping it.", pytrace=False)
        print("\n" + "!" * 80 + f"\n{message}\n" + "!" * 80, file=sys.stderr)
        pytest.skip(message)
    return sync_playwright


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a free localhost port, serving the repo; yields (base_url, token)."""
    _require_browser()
    tmp = tmp_path_factory.mktemp("jupyter")
    settings = tmp / "settings" / "@jupyterlab" / "docmanager-extension"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
    news = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "BATCHLAB_PROFILE": "cpu",
        "TQDM_DISABLE": "1",
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    jupyter = Path(sys.executable).parent / "jupyter"
    cmd = [
        str(jupyter),
        "lab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={ROOT}",
        "--ServerApp.port_retries=0",
        "--LabApp.expose_app_in_browser=True",
        f"--LabApp.user_settings_dir={tmp / 'settings'}",
        f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # CI containers run as root
    log = open(tmp / "lab.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(
                        f"JupyterLab did not start:\n{(tmp / 'lab.log').read_text()[-3000:]}"
                    )
                time.sleep(0.5)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def page(lab):
    sync_playwright = _require_browser()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(180_000)
        yield page
        browser.close()


def _throwaway_notebook() -> Path:
    """Two explorers and an explorer whose last setting fails."""
    cells = [
        "import jax, jax.numpy as jnp\nfrom batchlab.widgets import BatchSizeExplorer, Explorer, controls",
        "def make_batch(b):\n    return (jax.random.normal(jax.random.key(0), (b, 64)),)\n\n"
        "def mlp(x):\n    return jnp.tanh(x @ jnp.ones((64, 64))).sum(1)\n\n"
        "ex = BatchSizeExplorer(mlp, make_batch, [1, 4, 16, 64], max_time=0.05, title='demo: batch size')\nex",
        "from matplotlib.figure import Figure\n\n"
        "def bars(m):\n"
        "    fig = Figure(figsize=(4, 2.5), layout='constrained')\n"
        "    ax = fig.subplots()\n"
        "    ax.bar(['argument', 'temp', 'peak'], [m.argument_bytes, m.temp_bytes, m.planned_bytes])\n"
        "    ax.set_ylabel('bytes (compiled plan)')\n"
        "    return fig\n\n"
        "def pad_cost(length, padding):\n"
        "    import batchlab as bl\n"
        "    m = bl.memory_estimate(lambda x: jnp.cumsum(x, 1), jax.ShapeDtypeStruct((8, length), jnp.float32))\n"
        "    return m\n\n"
        "ex2 = Explorer(pad_cost, {'length': 16, 'padding': 'pad to max'},\n"
        "    controls={'length': controls.stops_slider(range(16, 129, 16), 'length'), 'padding': controls.choice(['pad to max', 'pad to multiple'], description='padding')},\n"
        "    describe=lambda m: f'length {ex2.params[\"length\"]}: planned temp <b>{m.temp_bytes} B</b>, peak <b>{m.planned_bytes} B</b>',\n"
        "    draw=lambda e: bars(e.result),\n"
        "    title='demo: padded length')\nex2.update()\nex2",
        "def strict(n):\n"
        "    if n > 2:\n"
        "        raise ValueError(f'`n`={n} is too large for this demo; pick n <= 2.')\n"
        "    return n\n\n"
        "ex3 = Explorer(strict, {'n': 1}, controls={'n': controls.stops_slider([1, 2, 3], 'n')},\n"
        "    describe=lambda r: f'n = <b>{r}</b>', title='demo: a setting that fails')\nex3.update()\nex3",
    ]
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    path = ROOT / THROWAWAY
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _lab_copy(path: str) -> str:
    """A byte-for-byte copy of ``path`` under LAB_DIR; returns its path from the repo root."""
    out = ROOT / LAB_DIR / Path(path).name
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / path, out)
    return str(out.relative_to(ROOT))


def _student_copy(path: str) -> str:
    """Writes the student copy of ``path`` under STUDENT_DIR; returns its path from the repo root."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import workshop

    src = ROOT / path
    nb = workshop.student_notebook(nbformat.read(src, as_version=4), name=src.name)
    out = ROOT / STUDENT_DIR / src.name
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    return str(out.relative_to(ROOT))


_GRADES = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  return panel.content.widgets
    .filter(c => c.model.type === 'code' && c.model.sharedModel.getSource().includes('exercises.check('))
    .map(c => JSON.stringify(c.model.outputs.toJSON()));
}"""


def _open_notebook(page, lab, path: str) -> None:
    base, token = lab
    page.goto(f"{base}/lab/workspaces/{Path(path).stem}/tree/{path}?token={token}&reset")
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget && "
        "window.jupyterapp.shell.currentWidget.sessionContext && "
        "window.jupyterapp.shell.currentWidget.sessionContext.session && "
        "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel && "
        "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
        timeout=300_000,  # kernel start on a busy machine
    )


_WAIT_DONE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext.session) return null;
  const kernel = panel.sessionContext.session.kernel;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  const errors = [];
  cells.forEach((c, i) => c.model.outputs.toJSON().forEach(o => {
    if (o.output_type === 'error') errors.push(`code cell ${i}: ${o.ename}: ${o.evalue}`);
  }));
  const pending = cells.filter(c => c.model.executionCount === null && c.model.sharedModel.getSource().trim()).length;
  const running = panel.content.node.querySelectorAll('.jp-InputArea-prompt').length &&
    [...panel.content.node.querySelectorAll('.jp-InputArea-prompt')].some(p => p.textContent.includes('*'));
  return {status: kernel ? kernel.status : 'none', pending, running, errors, cells: cells.length};
}"""


_RUN_ALL = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  panel.content.widgets.forEach(c => { if (c.model.type === 'code') c.model.executionCount = null; });
  window.jupyterapp.commands.execute('notebook:run-all-cells');
}"""


def _run_notebook(page, lab, path: str) -> dict:
    name = Path(path).stem
    _open_notebook(page, lab, path)
    # Wait on state, never on time: the stored execution counts are cleared first, so a cell
    # counts as pending until this run has executed it (a stored count would look finished
    # before the kernel even started, the busier the machine the likelier).
    page.evaluate(_RUN_ALL)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    state = None
    while time.monotonic() < deadline:
        state = page.evaluate(_WAIT_DONE)
        if state and state["errors"]:
            break
        if state and state["status"] == "idle" and state["pending"] == 0 and not state["running"]:
            break
        time.sleep(0.5)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)
    assert state is not None, f"{path}: the notebook never opened"
    assert not state["errors"], f"{path}: cells show errors: {state['errors']}"
    assert state["pending"] == 0 and state["status"] == "idle", (
        f"{path}: did not finish in {RUN_TIMEOUT_S} s: {state}"
    )
    return state


_STATUS = """(box) => {
  const s = box.querySelector('.batchlab-status');
  const img = box.querySelector('.batchlab-plot');
  const readouts = [...box.querySelectorAll('.widget-readout')].map(r => r.textContent.trim());
  return {state: s ? s.dataset.state : null, params: s ? s.dataset.params : null, text: s ? s.textContent : '',
          image: img && img.offsetParent !== null ? img.getAttribute('src') : null, readouts};
}"""


def _move_slider(
    page, box, *, key: str | None = None, busy_shot: str | None = None
) -> tuple[dict, dict]:
    """Moves the first slider of an explorer one step (right, or left at the end); returns the state before/after.

    Waits on the explorer's state, never on time: "done" with the new setting, or "error"
    once its controls are back on the last setting that worked (the explorer shows the error
    first and moves the controls back after it, so a read between the two sees the failed
    value on the slider).
    """
    box.scroll_into_view_if_needed()
    before = box.evaluate(_STATUS)
    handle = box.locator(".noUi-handle").first
    if key is None:
        now, top = (float(handle.get_attribute(a) or 0) for a in ("aria-valuenow", "aria-valuemax"))
        key = "ArrowLeft" if now >= top else "ArrowRight"
    handle.focus()
    handle.press(key)
    deadline = time.monotonic() + MOVE_TIMEOUT_S
    after, busy_text, preview_seen, shot = before, "", False, False
    while time.monotonic() < deadline:
        after = box.evaluate(_STATUS)
        if after["state"] == "busy":
            busy_text = busy_text or after["text"]
            # an explorer with a preview redraws while still busy: its plan, before the measurement
            new_plot = after["image"] is not None and after["image"] != before["image"]
            if busy_shot and (not shot or (new_plot and not preview_seen)):
                # the visible "measuring..." state (again once the plan is drawn)
                box.screenshot(path=str(SCREENSHOTS / busy_shot))
                shot = True
            preview_seen = preview_seen or new_plot
        if after["state"] == "done" and after["params"] != before["params"]:
            break
        if (
            after["state"] == "error"
            and after["params"] != before["params"]
            and after["readouts"][:1] == before["readouts"][:1]
        ):
            break  # the error is shown and the controls are back where they were
        time.sleep(0.05)
    return before, {**after, "busy_text": busy_text, "preview_seen": preview_seen}


def _readout_matches(after: dict) -> bool:
    from batchlab import format_bytes

    params = json.loads(after["params"])
    shown = {str(v) for v in params.values()}
    # sliders over sizes in bytes show them in human units (a budget of 1048576 reads "1.00 MiB")
    shown |= {
        format_bytes(v) for v in params.values() if isinstance(v, int) and not isinstance(v, bool)
    }
    return bool(after["readouts"]) and after["readouts"][0] in shown


def _peak(text: str) -> float:
    m = re.search(r"planned peak ([\d.]+)\s*(B|KiB|MiB|GiB)", text)
    assert m, f"no planned peak in {text!r}"
    return float(m.group(1)) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[m.group(2)]


def _shutdown_kernel(page) -> None:
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")


def _check_explorers(page, name: str, limit: int) -> int:
    boxes = page.locator(
        ".jp-mod-active .batchlab-explorer, .jp-NotebookPanel:visible .batchlab-explorer"
    )
    count = min(boxes.count(), limit)
    for i in range(count):
        box = boxes.nth(i)
        if box.locator(".noUi-handle").count() == 0:  # no slider: photograph it as it is
            box.scroll_into_view_if_needed()
            box.screenshot(path=str(SCREENSHOTS / f"{name}_explorer{i}.png"))
            continue
        before, after = _move_slider(page, box, busy_shot=f"{name}_explorer{i}_measuring.png")
        box.screenshot(path=str(SCREENSHOTS / f"{name}_explorer{i}.png"))
        assert after["state"] == "done", f"{name} explorer {i}: {after}"
        assert after["params"] != before["params"], (
            f"{name} explorer {i}: the setting did not change"
        )
        assert _readout_matches(after), (
            f"{name} explorer {i}: shows {after['params']} but slider says {after['readouts']}"
        )
        assert after["text"] != before["text"], (
            f"{name} explorer {i}: the status line did not change"
        )
        assert after["image"] == before["image"] is None or after["image"] != before["image"], (
            "the plot did not change"
        )
        if "shapes to compile" in after["busy_text"]:  # 05: the plan is drawn before it is measured
            assert after["preview_seen"], f"{name} explorer {i}: no plan drawn while measuring"
        if "planned peak" in after["text"] and "batch size" in after["text"]:
            grew = (
                json.loads(after["params"])["batch_size"]
                > json.loads(before["params"])["batch_size"]
            )
            assert (_peak(after["text"]) > _peak(before["text"])) == grew, (
                before["text"],
                after["text"],
            )
    return count


_LEARNER_VIEW = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const solutions = [], reveals = [];
  panel.content.widgets.forEach((c, i) => {
    const meta = c.model.getMetadata ? c.model.getMetadata('jupyter') : null;
    if (meta && meta.source_hidden) {
      let inside = false;
      const body = [];
      for (const line of c.model.sharedModel.getSource().split('\\n').map(l => l.trim())) {
        if (line === '# BEGIN SOLUTION') inside = true;
        else if (line === '# END SOLUTION') inside = false;
        else if (inside && line.length > 3 && !line.startsWith('#')) body.push(line);
      }
      solutions.push({i, body});
    }
    if (c.model.type === 'code' &&
        JSON.stringify(c.model.outputs.toJSON()).includes('your prediction')) reveals.push(i);
  });
  return {solutions, reveals};
}"""

# what is on screen for one cell, once scrolled to (JupyterLab renders only visible cells)
_CELL_ON_SCREEN = """(i) => {
  const c = window.jupyterapp.shell.currentWidget.content.widgets[i];
  return {inputHidden: !!c.inputHidden, text: c.node.innerText || ''};
}"""


def _scroll_to(page, index: int) -> None:
    page.evaluate(
        "(i) => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'center')", index
    )
    time.sleep(0.4)


def _shoot_cell(page, index: int, path: Path) -> None:
    _scroll_to(page, index)
    node = page.evaluate_handle(
        "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].node", index
    ).as_element()
    node.screenshot(path=str(path))


def _check_learner_view(page, name: str) -> None:
    """Solutions are collapsed (no line of a solution on screen); a prediction's reveal is shown."""
    view = page.evaluate(_LEARNER_VIEW)
    assert view["solutions"], f"{name}: no collapsed solution cell"
    for cell in view["solutions"]:
        _scroll_to(page, cell["i"])
        shown = page.evaluate(_CELL_ON_SCREEN, cell["i"])
        # the collapsed placeholder may preview the first line ("# BEGIN SOLUTION"): fine
        leaked = [line for line in cell["body"] if line in shown["text"]]
        assert shown["inputHidden"] and not leaked, f"{name}: cell {cell['i']} shows {leaked}"
    assert view["reveals"], f"{name}: no prediction reveal in the notebook"
    if name in SHOWCASE:
        _shoot_cell(page, view["solutions"][0]["i"], SCREENSHOTS / f"{name}_solution_collapsed.png")
        _shoot_cell(page, view["reveals"][0], SCREENSHOTS / f"{name}_prediction.png")


def test_notebooks_and_explorers_in_chromium(page, lab):
    t0 = time.monotonic()
    fingerprints = {p: (ROOT / p).read_bytes() for p in NOTEBOOKS}
    moved = 0
    try:
        for path in NOTEBOOKS:
            assert (ROOT / path).is_file(), f"{path} is listed in NOTEBOOKS but does not exist"
            name = Path(path).stem
            if name in SHOWCASE:  # as `make lab` opens it: stored outputs, solutions collapsed
                _open_notebook(page, lab, _lab_copy(path))
                _check_learner_view(page, name)
                _shutdown_kernel(page)
            student = _student_copy(path)
            _run_notebook(page, lab, student)  # Run All, as a learner in class
            graded = [g for g in page.evaluate(_GRADES) if "correct:" in g.replace("not yet", "")]
            assert not graded, (
                f"{name} (student copy): a check graded the stub correct: {graded[:1]}"
            )
            moved += _check_explorers(page, name, MAX_EXPLORERS)
            _shutdown_kernel(page)  # free the 2 CI cores for the next notebook

        _throwaway_notebook()
        _run_notebook(page, lab, THROWAWAY)
        boxes = page.locator(".batchlab-explorer")
        assert boxes.count() == 3
        moved += _check_explorers(page, "demo", 2)
        t = time.monotonic()
        before, after = _move_slider(
            page, boxes.nth(0), key="ArrowLeft"
        )  # back to a measured setting
        revisit = time.monotonic() - t
        assert after["state"] == "done" and "from cache" in after["text"], after
        assert after["image"] != before["image"]

        failing = boxes.nth(2)
        failing.scroll_into_view_if_needed()
        _move_slider(page, failing)  # n: 1 -> 2 works
        before, after = _move_slider(page, failing)  # n: 2 -> 3 fails inside the callback
        failing.screenshot(path=str(SCREENSHOTS / "demo_error.png"))
        assert after["state"] == "error", after
        assert "ValueError: `n`=3 is too large for this demo" in after["text"]
        assert (
            json.loads(after["params"])["n"] == 3 and after["readouts"][0] == "2"
        )  # control back to 2
        page.screenshot(path=str(SCREENSHOTS / "demo.png"), full_page=False)
        assert moved >= 2, f"moved sliders in only {moved} explorer(s)"
    finally:
        # JupyterLab opened copies only, so nothing here may change the repo's notebooks; never
        # write them back: in a shared work tree a change is someone's edit, not the browser's
        changed = [p for p, data in fingerprints.items() if (ROOT / p).read_bytes() != data]
        if changed and os.environ.get("CI"):
            pytest.fail(f"notebooks changed while the browser test ran: {changed}")
        shutil.rmtree(ROOT / "notebooks" / ".ipynb_checkpoints", ignore_errors=True)
        shutil.rmtree(ROOT / STUDENT_DIR, ignore_errors=True)
        shutil.rmtree(ROOT / LAB_DIR, ignore_errors=True)
    print(
        f"\nbrowser test: {len(NOTEBOOKS)} student copies run, {len(SHOWCASE)} notebooks opened as "
        f"`make lab` shows them, and a demo; "
        f"{moved} explorers moved, "
        f"revisit of a measured setting shown {revisit * 1000:.0f} ms after the key press (incl. polling), "
        f"{time.monotonic() - t0:.0f} s; screenshots in {SCREENSHOTS.relative_to(ROOT)}/"
    )
