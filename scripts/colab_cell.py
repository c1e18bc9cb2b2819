"""Make notebooks ready for Colab and other hosted notebooks (idempotent).

For every notebook given, this inserts (or updates) two things:

* a first code cell (id ``colab-install``, after the title, its source collapsed) that
  installs the kit (with its ``examples`` extra: equinox and optax, which notebook 12
  runs) only when it is not installed (``%pip install
  --upgrade-strategy only-if-needed`` from the repository, no JAX pin: pip keeps a JAX
  the runtime already has when it is inside the kit's declared range, read here from
  pyproject.toml, and replaces one outside it), then prints the versions of batchlab,
  jax and jaxlib it ended with and whether it kept the preinstalled JAX. Colab's widget
  manager is turned on by ``batchlab.widgets``.
  A notebook whose first cells must run before JAX starts (tagged
  ``before-jax-starts``, e.g. notebook 11's device count) keeps them first:
  the install cell comes before the first code cell without that tag.
* an "Open in Colab" badge line under the title of the first markdown cell.

The repository URL is a placeholder until one exists: pass ``--repo
OWNER/NAME`` (and ``--branch``) then, and run this again on every notebook.

Where the kit is installed (CI, ``make lab``) the cell prints nothing, so
its stored output is empty and nbval compares nothing.

Usage::

    python scripts/colab_cell.py notebooks/*.ipynb            # insert or update
    python scripts/colab_cell.py --check notebooks/*.ipynb    # exit 1 if any would change
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

PLACEHOLDER_REPO = "OWNER/batchlab"  # replace with the real repository when it exists
CELL_ID = "colab-install"
TAG = "colab-install"
BEFORE_JAX = "before-jax-starts"
BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
ROOT = Path(__file__).resolve().parent.parent


def declared_jax_range(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The kit's declared jax range, as pyproject.toml's dependencies write it (e.g. ``>=0.10.2,<0.13``)."""
    m = re.search(r'^\s*"jax([<>=!~][^"]*)",?\s*$', pyproject.read_text(), re.MULTILINE)
    if m is None:
        raise SystemExit(f"{pyproject}: no 'jax' dependency with a version range found")
    return m.group(1)


def install_source(repo: str, branch: str, jax_range: str | None = None) -> str:
    """The cell: pip keeps a preinstalled JAX inside the range (only-if-needed, no jax pin)."""
    url = f"git+https://github.com/{repo}.git@{branch}"
    jax_range = jax_range or declared_jax_range()
    return "\n".join(
        [
            "# Hosted notebooks (Colab): install the kit when it is missing. Where it is installed: nothing.",
            "import importlib.metadata as md",
            "import importlib.util",
            "",
            'if importlib.util.find_spec("batchlab") is None:',
            '    had = md.version("jax") if importlib.util.find_spec("jax") else None',
            f"    # the kit declares jax{jax_range}: pip keeps a preinstalled JAX inside it,",
            "    # replaces one outside",
            f'    %pip install -q --upgrade-strategy only-if-needed "batchlab[examples] @ {url}"',
            '    now = md.version("jax")',
            "    how = (",
            '        "kept the preinstalled one"',
            "        if had == now",
            '        else f"replaced jax {had}, outside the range: restart the runtime if asked"',
            "        if had",
            '        else "newly installed"',
            "    )",
            "    print(",
            "        f\"installed batchlab {md.version('batchlab')}; jax {now}, \"",
            "        f\"jaxlib {md.version('jaxlib')} ({how})\"",
            "    )",
        ]
    )


def badge(repo: str, branch: str, notebook: Path) -> str:
    url = f"https://colab.research.google.com/github/{repo}/blob/{branch}/notebooks/{notebook.name}"
    return f"[![Open In Colab]({BADGE_IMAGE})]({url})"


def _install_cell(repo: str, branch: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(install_source(repo, branch))
    cell.id = CELL_ID
    cell.metadata["tags"] = [TAG]
    cell.metadata["jupyter"] = {"source_hidden": True}  # a learner sees one collapsed line
    cell.outputs = []  # where the kit is installed (CI, a local lab) it prints nothing
    return cell


def update(nb: nbformat.NotebookNode, path: Path, repo: str, branch: str) -> bool:
    """Inserts or updates the install cell and the badge in ``nb``; returns whether it changed."""
    before = nbformat.writes(nb)
    source = install_source(repo, branch)
    existing = [c for c in nb.cells if c.get("id") == CELL_ID or TAG in c.metadata.get("tags", [])]
    if existing:
        cell = existing[0]
        if cell.source != source:
            cell.source = source
            cell.outputs = []
        cell.metadata["jupyter"] = {"source_hidden": True}
    else:
        # before the first code cell, unless that one must run before JAX starts
        position = next(
            (
                i
                for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and BEFORE_JAX not in c.metadata.get("tags", [])
            ),
            len(nb.cells),
        )
        nb.cells.insert(position, _install_cell(repo, branch))
    title = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if title is not None:
        lines = title.source.split("\n")
        line = badge(repo, branch, path)
        at = next((i for i, text in enumerate(lines) if BADGE_IMAGE in text), None)
        if at is not None:
            lines[at] = line
        else:
            head = next((i for i, text in enumerate(lines) if text.startswith("# ")), 0)
            lines[head + 1 : head + 1] = ["", line]
        title.source = "\n".join(lines)
    return nbformat.writes(nb) != before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--repo", default=PLACEHOLDER_REPO, help="OWNER/NAME on GitHub")
    parser.add_argument("--branch", default="main")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    ns = parser.parse_args(argv)
    stale = []
    for path in ns.notebooks:
        if path.suffix != ".ipynb" or not path.is_file():
            parser.error(f"{path} is not a notebook (.ipynb) file")
        nb = nbformat.read(path, as_version=4)
        if update(nb, path, ns.repo, ns.branch):
            stale.append(path)
            if not ns.check:
                nbformat.write(nb, path)
    verb = "would change" if ns.check else "updated"
    for path in stale:
        print(f"{verb}: {path}")
    return 1 if ns.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
