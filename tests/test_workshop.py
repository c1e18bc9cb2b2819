"""Workshop mode: student copies without solutions that still "Run All", instructor copies intact."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import workshop
from workshop import BEGIN, END, MESSAGE, strip_solutions

NOTEBOOKS = sorted(
    (Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb")
)


def solution(body: str, indent: str = "") -> str:
    return f"{indent}{BEGIN}\n{body}\n{indent}{END}"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("answer = 4 * 64", ["answer = ..."]),
        ("a, b = 1, 2\nc: int = 3", ["a, b = ..., ...", "c = ..."]),
        ("x = y = 5", ["x = ...", "y = ..."]),
        ("total = 0\nfor i in range(3):\n    total += i", ["total = ..."]),
    ],
)
def test_values_become_ellipsis(body, expected):
    out = strip_solutions("setup = 1\n" + solution(body) + "\ncheck(answer)")
    lines = out.splitlines()
    assert lines[0] == "setup = 1" and lines[-1] == "check(answer)"
    assert lines[2:-1] == expected
    assert "4 * 64" not in out


def test_function_keeps_signature_and_docstring_and_raises():
    body = 'def masked_mean(x, mask, *, axis: int = -1) -> float:\n    """Mean where mask."""\n    return (x * mask).sum() / mask.sum()'
    out = strip_solutions(solution(body))
    assert "def masked_mean(x, mask, *, axis: int=-1) -> float:" in out
    assert "'Mean where mask.'" in out and "mask.sum()" not in out
    namespace: dict = {}
    exec(out, namespace)
    with pytest.raises(NotImplementedError, match="Exercise: write your solution here"):
        namespace["masked_mean"](1, 1)


def test_indented_block_raises_at_its_indentation():
    src = "def f(x):\n    y = x + 1\n" + solution("    return y * 2", "    ") + "\n"
    out = strip_solutions(src)
    assert "y * 2" not in out
    namespace: dict = {}
    exec(out, namespace)
    with pytest.raises(NotImplementedError, match="see the task above"):
        namespace["f"](1)


def test_expression_only_block_raises():
    out = strip_solutions(solution("print(42)"))
    assert "42" not in out and f"raise NotImplementedError({MESSAGE!r})" in out


def test_several_blocks_and_no_markers():
    src = solution("a = 1") + "\nmid = 2\n" + solution("b = 3")
    assert strip_solutions(src).splitlines() == [
        "# TODO (exercise): your solution here",
        "a = ...",
        "mid = 2",
        "# TODO (exercise): your solution here",
        "b = ...",
    ]
    assert strip_solutions("x = 1\ny = 2") == "x = 1\ny = 2"


@pytest.mark.parametrize(
    ("src", "match"),
    [
        (f"{BEGIN}\na = 1", "is never closed"),
        (f"a = 1\n{END}", r"line 2: `# END SOLUTION` without"),
        (f"{BEGIN}\n{BEGIN}\na = 1\n{END}\n{END}", "inside another solution block"),
    ],
)
def test_unbalanced_markers(src, match):
    with pytest.raises(ValueError, match=match):
        strip_solutions(src, where="nb.ipynb, cell 3")


def synthetic_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Predict\nHow many bytes?"),
        nbformat.v4.new_code_cell("from batchlab import exercises\nimport jax, jax.numpy as jnp"),
        nbformat.v4.new_code_cell(
            "fn = jax.vmap(lambda x, w, v: jnp.tanh(x @ w) @ v, in_axes=(0, None, None))\n"
            "args = (jnp.ones((8, 16)), jnp.ones((16, 16)), jnp.ones(16))\n"
            + solution(
                'predicted = {"argument": 8 * 16 * 4 + 16 * 16 * 4 + 16 * 4, "output": 32, "temp": 512}'
            )
            + "\nresult = exercises.check('tour.predict_bytes', predicted, fn=fn, args=args)\nresult"
        ),
    ]
    for i, cell in enumerate(nb.cells[1:], 1):
        cell.execution_count = i
        cell.outputs = [nbformat.v4.new_output("stream", text="stored output\n")]
    return nb


def test_student_notebook_runs_all_and_checks_say_no_answer_yet():
    student = workshop.student_notebook(synthetic_notebook())
    assert "widgets" not in student.metadata
    code = [c for c in student.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert "8 * 16 * 4" not in code[1].source
    namespace: dict = {}
    for cell in code:  # "Run All", in this process
        exec(cell.source, namespace)
    assert not namespace["result"].ok and namespace["result"].message.startswith("No answer yet")


def test_instructor_notebook_keeps_everything():
    nb = synthetic_notebook()
    instructor = workshop.instructor_notebook(nb)
    assert instructor == nb and instructor is not nb
    namespace: dict = {}
    for cell in instructor.cells[1:]:
        exec(cell.source, namespace)
    assert namespace["result"].ok


def test_cli_writes_both_modes(tmp_path, capsys):
    src = tmp_path / "00_demo.ipynb"
    nbformat.write(synthetic_notebook(), src)
    assert workshop.main(["student", "--out", str(tmp_path / "student"), str(src)]) == 0
    assert workshop.main(["instructor", "--out", str(tmp_path / "instructor"), str(src)]) == 0
    assert "wrote 1 student notebook(s)" in capsys.readouterr().out
    student = nbformat.read(tmp_path / "student" / "00_demo.ipynb", as_version=4)
    instructor = nbformat.read(tmp_path / "instructor" / "00_demo.ipynb", as_version=4)
    assert BEGIN not in student.cells[2].source and BEGIN in instructor.cells[2].source
    assert instructor.cells[2].outputs


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["student", "--out", "{tmp}", "{tmp}/missing.ipynb"], "does not exist"),
        (["student", "--out", "{tmp}", "{tmp}/bad.ipynb"], "is never closed"),
    ],
)
def test_cli_errors(tmp_path, capsys, args, message):
    bad = nbformat.v4.new_notebook()
    bad.cells = [nbformat.v4.new_code_cell(f"{BEGIN}\nx = 1")]
    nbformat.write(bad, tmp_path / "bad.ipynb")
    assert workshop.main([a.format(tmp=tmp_path) for a in args]) == 2
    assert message in capsys.readouterr().err


def test_build_errors(tmp_path):
    with pytest.raises(ValueError, match="`mode` must be 'student' or 'instructor'"):
        workshop.build("teacher", tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        workshop.build("student", tmp_path, [tmp_path / "nope.ipynb"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_notebook_has_a_valid_student_copy(path):
    nb = nbformat.read(path, as_version=4)
    student = workshop.student_notebook(nb, name=path.name)
    for original, cell in zip(nb.cells, student.cells, strict=False):
        if cell.cell_type != "code":
            continue
        assert BEGIN not in cell.source and END not in cell.source
        code = "\n".join(  # IPython turns a magic line into one call: here, a `pass`
            line[: len(line) - len(line.lstrip())] + "pass"
            if line.lstrip().startswith(("%", "!"))
            else line
            for line in cell.source.splitlines()
        )
        ast.parse(code)  # the stubs are valid Python
        if BEGIN in original.source:
            assert "# TODO (exercise)" in cell.source
