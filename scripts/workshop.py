"""Workshop mode: student copies (solutions out, outputs cleared) and instructor copies.

Usage::

    python scripts/workshop.py student --out student        # every notebook
    python scripts/workshop.py instructor --out instructor notebooks/00_tour.ipynb

In a notebook, a solution sits between a ``# BEGIN SOLUTION`` line and an
``# END SOLUTION`` line. A student copy replaces each such block with a stub
that keeps "Run All" working, so every explorer and check in the class runs:

* a value the learner must predict (``predicted = {...}``) becomes
  ``predicted = ...``; the next ``exercises.check`` cell then answers
  "No answer yet" instead of failing;
* a function the learner must write keeps its signature (and docstring)
  and raises ``NotImplementedError`` with a friendly message; the check turns
  that into a hint too;
* any other block (or one indented inside a function) becomes a
  ``raise NotImplementedError(...)`` at its indentation.

Outputs, execution counts and saved widget state are cleared in student
copies. Instructor copies keep solutions and stored outputs, shown open.

The notebooks under ``notebooks/`` (the ones ``make lab`` opens) keep their
solutions, but collapsed: every cell holding a solution carries JupyterLab's
``jupyter.source_hidden`` and ``jupyter.outputs_hidden`` metadata, so a learner
sees the question and opens the solution on purpose. ``python -m
batchlab.workshop collapse`` sets that metadata (a test keeps it set)::

    python scripts/workshop.py collapse                      # every notebook, in place
"""

from __future__ import annotations

import argparse
import ast
import copy
import sys
import textwrap
from pathlib import Path
from typing import Any

BEGIN = "# BEGIN SOLUTION"
END = "# END SOLUTION"
MESSAGE = "Exercise: write your solution here (see the task above), then run this cell again."
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _stub_for(block: list[str], indent: str) -> list[str]:
    """The student's stub for one solution block (``block`` without the marker lines)."""
    raise_line = f"{indent}raise NotImplementedError({MESSAGE!r})"
    todo = f"{indent}# TODO (exercise): your solution here"
    if indent:
        return [todo, raise_line]
    try:
        tree = ast.parse(textwrap.dedent("\n".join(block)))
    except SyntaxError:
        return [todo, raise_line]
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    out.append(f"{target.id} = ...")
                elif isinstance(target, ast.Tuple) and all(
                    isinstance(e, ast.Name) for e in target.elts
                ):
                    out.append(
                        ", ".join(e.id for e in target.elts)
                        + " = "
                        + ", ".join("..." for _ in target.elts)
                    )
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            header = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            out.append(f"{header} {node.name}({ast.unparse(node.args)}){returns}:")
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                out.append(f"    {ast.unparse(ast.Constant(doc))}")
            out.append(f"    raise NotImplementedError({MESSAGE!r})")
    return [todo, *out] if out else [todo, raise_line]


def strip_solutions(source: str, *, where: str = "cell") -> str:
    """Replaces every ``# BEGIN SOLUTION`` ... ``# END SOLUTION`` block of ``source`` with a stub.

    Args:
      source: the code of one cell.
      where: names the cell in error messages.

    Returns:
      The student's code; ``source`` unchanged when it has no markers.

    Raises:
      ValueError: a block is not closed, is closed without being opened, or is nested.

    Example:
      >>> print(strip_solutions("B = 4\\n# BEGIN SOLUTION\\nanswer = B * 4\\n# END SOLUTION\\ncheck(answer)"))
      B = 4
      # TODO (exercise): your solution here
      answer = ...
      check(answer)
    """
    out: list[str] = []
    block: list[str] | None = None
    indent = ""
    for number, line in enumerate(source.splitlines(), 1):
        marker = line.strip()
        if marker == BEGIN:
            if block is not None:
                raise ValueError(
                    f"{where}, line {number}: `{BEGIN}` inside another solution block; "
                    f"close the first one with `{END}`."
                )
            block, indent = [], line[: len(line) - len(line.lstrip())]
        elif marker == END:
            if block is None:
                raise ValueError(f"{where}, line {number}: `{END}` without a `{BEGIN}` before it.")
            out.extend(_stub_for(block, indent))
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(line)
    if block is not None:
        raise ValueError(
            f"{where}: `{BEGIN}` is never closed; add a `{END}` line after the solution."
        )
    return "\n".join(out)


def has_solution(cell: Any) -> bool:
    """Whether a notebook cell holds a ``# BEGIN SOLUTION`` block."""
    return cell.cell_type == "code" and any(
        line.strip() == BEGIN for line in cell.source.splitlines()
    )


def _set_collapsed(cell: Any, collapsed: bool) -> None:
    meta = cell.metadata.get("jupyter", {})
    if collapsed:
        meta.update(source_hidden=True, outputs_hidden=True)
        cell.metadata["jupyter"] = meta
    else:
        meta.pop("source_hidden", None)
        meta.pop("outputs_hidden", None)
        if meta:
            cell.metadata["jupyter"] = meta
        else:
            cell.metadata.pop("jupyter", None)


def collapse_solutions(nb: Any) -> int:
    """Collapses every solution cell of ``nb`` in place (JupyterLab's hidden source and outputs).

    Returns:
      The number of solution cells (each now collapsed).

    Example:
      >>> import nbformat
      >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
      ...     "# BEGIN SOLUTION\\nanswer = 4\\n# END SOLUTION")])
      >>> collapse_solutions(nb), dict(nb.cells[0].metadata["jupyter"])
      (1, {'source_hidden': True, 'outputs_hidden': True})
    """
    count = 0
    for cell in nb.cells:
        if has_solution(cell):
            _set_collapsed(cell, True)
            count += 1
    return count


def student_notebook(nb: Any, *, name: str = "notebook") -> Any:
    """A student copy of an nbformat notebook: solutions stubbed, outputs and widget state cleared."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    for index, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        if has_solution(cell):  # the stub is the learner's to write: show it
            _set_collapsed(cell, False)
        cell.source = strip_solutions(cell.source, where=f"{name}, cell {index}")
        cell.outputs = []
        cell.execution_count = None
    return nb


def instructor_notebook(nb: Any, *, name: str = "notebook") -> Any:
    """An instructor copy: solutions and stored outputs kept and shown open (markers checked)."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            strip_solutions(cell.source, where=f"{name}, cell {index}")
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if has_solution(cell):
            _set_collapsed(cell, False)
    return nb


def collapse(notebooks: list[str | Path] | None = None) -> list[tuple[Path, int]]:
    """Collapses the solution cells of ``notebooks`` (default: all of ``notebooks/``) in place.

    Returns:
      ``(path, solution cells)`` for every notebook; a file is rewritten only
      when its metadata changed.
    """
    import nbformat

    paths = _paths(notebooks)
    done = []
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        before = copy.deepcopy(nb)
        count = collapse_solutions(nb)
        if nb != before:
            nbformat.write(nb, p)
        done.append((p, count))
    return done


def _paths(notebooks: list[str | Path] | None) -> list[Path]:
    paths = (
        [Path(p) for p in notebooks] if notebooks else sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    )
    if not paths:
        raise ValueError(f"No notebooks to copy: none given and none found in {NOTEBOOKS.name}/.")
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(
                f"Notebook {str(p)!r} does not exist; pass paths like notebooks/00_tour.ipynb."
            )
    return paths


def build(mode: str, out: str | Path, notebooks: list[str | Path] | None = None) -> list[Path]:
    """Writes ``mode`` ("student" or "instructor") copies of ``notebooks`` into ``out``.

    Args:
      mode: "student" (solutions removed, outputs cleared) or "instructor" (solutions kept).
      out: the folder to write to (created). Put it directly under the repo
        root, as ``notebooks/`` is, so relative paths such as ``../data`` keep working.
      notebooks: notebook paths (default: every ``notebooks/NN_*.ipynb``).

    Returns:
      The paths written.

    Raises:
      ValueError: unknown ``mode``; no notebooks; unbalanced solution markers.
      FileNotFoundError: a notebook path does not exist.
    """
    import nbformat

    if mode not in ("student", "instructor"):
        raise ValueError(f"`mode` must be 'student' or 'instructor', got {mode!r}.")
    paths = _paths(notebooks)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    make = student_notebook if mode == "student" else instructor_notebook
    written = []
    for p in paths:
        nb = make(nbformat.read(p, as_version=4), name=p.name)
        target = out / p.name
        nbformat.write(nb, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python scripts/workshop.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("mode", choices=["student", "instructor", "collapse"])
    parser.add_argument(
        "--out", help="folder for the copies (e.g. student/ at the repo root); not for collapse"
    )
    parser.add_argument(
        "notebooks", nargs="*", help="notebooks to copy (default: all of notebooks/)"
    )
    args = parser.parse_intermixed_args(argv)
    if args.mode == "collapse":
        try:
            done = collapse(args.notebooks or None)
        except (ValueError, FileNotFoundError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        for p, count in done:
            print(f"  {p.name}: {count} solution cell(s) collapsed")
        return 0
    if not args.out:
        print(
            f"error: `--out` is required for {args.mode} copies, e.g. --out {args.mode}",
            file=sys.stderr,
        )
        return 2
    try:
        written = build(args.mode, args.out, args.notebooks or None)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    what = (
        "solutions replaced by stubs, outputs cleared"
        if args.mode == "student"
        else "solutions kept"
    )
    print(f"wrote {len(written)} {args.mode} notebook(s) to {args.out} ({what})")
    for p in written:
        print(f"  {p.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
