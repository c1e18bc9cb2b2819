"""Regenerate batchlab/ragged/data/stdlib_functions.npz: real ragged sequences for batchlab.

Every function (and method) defined at the top level of a module or class in
the CPython standard library's top-level ``*.py`` files becomes one sequence
of token ids, produced by Python's own ``tokenize`` module. Function lengths
have a real long tail (most functions are short, a few are very long), which
is what makes padding and bucketing interesting.

Usage::

    .venv/bin/python scripts/make_ragged_dataset.py            # writes batchlab/ragged/data/
    .venv/bin/python scripts/make_ragged_dataset.py --check    # compare with the shipped file

The shipped file was made from CPython 3.11.7 (its ``Lib/*.py``, PSF License
2.0). Another interpreter version gives a similar but not identical file; the
script refuses it unless ``--any-version`` is given.

Token -> id rules (deterministic):
  * ``NAME`` and ``OP`` tokens map to their text (``def``, ``self``, ``(``);
  * every ``NUMBER`` is ``<NUMBER>``, every ``STRING`` (docstrings too) is
    ``<STRING>``; ``NEWLINE``/``INDENT``/``DEDENT`` are ``<NEWLINE>`` etc.;
  * a sequence starts at its ``def``/``async``/decorator-free first line,
    without the INDENT/DEDENT that closes the block before it;
  * comments and non-logical line breaks (``NL``) are dropped;
  * texts seen fewer than ``--min-count`` times in the whole corpus become
    ``<unk>``; id 0 is ``<pad>`` (never inside a sequence), id 1 ``<unk>``.
The vocabulary is ordered by descending corpus frequency, ties by text.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import platform
import sys
import sysconfig
import tokenize
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "batchlab" / "ragged" / "data" / "stdlib_functions.npz"
SOURCE_VERSION = "3.11.7"
SPECIALS = ["<pad>", "<unk>", "<NEWLINE>", "<INDENT>", "<DEDENT>", "<NUMBER>", "<STRING>"]
_KIND = {
    tokenize.NUMBER: "<NUMBER>",
    tokenize.STRING: "<STRING>",
    tokenize.NEWLINE: "<NEWLINE>",
    tokenize.INDENT: "<INDENT>",
    tokenize.DEDENT: "<DEDENT>",
}
_DROP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


def functions(tree: ast.AST) -> list[tuple[str, int, int]]:
    """(qualname, first line, last line) of functions not nested in another function."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child.lineno, child.end_lineno))
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            elif not isinstance(child, ast.expr):
                visit(child, prefix)  # if/try blocks at module level

    visit(tree, "")
    return found


def token_texts(source: str) -> list[tuple[int, str]]:
    """(line, text) of every kept token, with numbers/strings/layout replaced by their kind."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in _DROP:
            continue
        out.append((tok.start[0], _KIND.get(tok.type, tok.string)))
    return out


def build(stdlib: Path, min_count: int) -> dict[str, np.ndarray]:
    seqs: list[list[str]] = []
    names: list[str] = []
    for path in sorted(stdlib.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        toks = token_texts(source)
        lines = np.array([line for line, _ in toks])
        for qualname, first, last in functions(tree):
            lo, hi = np.searchsorted(lines, [first, last + 1])
            while toks[lo][1] in ("<INDENT>", "<DEDENT>"):  # the block change *before* the def
                lo += 1
            seqs.append([text for _, text in toks[lo:hi]])
            names.append(f"{path.stem}.{qualname}")
    counts = Counter(t for s in seqs for t in s)
    kept = sorted(
        (t for t, c in counts.items() if c >= min_count and t not in SPECIALS),
        key=lambda t: (-counts[t], t),
    )
    vocab = SPECIALS + kept
    index = {t: i for i, t in enumerate(vocab)}
    flat = np.array([index.get(t, 1) for s in seqs for t in s], dtype=np.uint16)
    assert len(vocab) < 2**16
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in seqs], out=offsets[1:])
    return {
        "tokens": flat,
        "offsets": offsets,
        "vocab": np.array(vocab),
        "names": np.array(names),
        "source": np.array(f"CPython {platform.python_version()} Lib/*.py (PSF License 2.0)"),
    }


def digest(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for key in sorted(arrays):
        h.update(key.encode())
        h.update(np.ascontiguousarray(arrays[key]).tobytes())
    return h.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--min-count", type=int, default=5)
    parser.add_argument(
        "--any-version", action="store_true", help="allow a Python other than 3.11.7"
    )
    parser.add_argument(
        "--check", action="store_true", help="rebuild and compare with --out; write nothing"
    )
    args = parser.parse_args()
    if platform.python_version() != SOURCE_VERSION and not args.any_version:
        print(
            f"This is Python {platform.python_version()}; the shipped data comes from {SOURCE_VERSION}. "
            f"Run with Python {SOURCE_VERSION}, or pass --any-version for a similar dataset.",
            file=sys.stderr,
        )
        return 2
    arrays = build(args.stdlib, args.min_count)
    lengths = np.diff(arrays["offsets"])
    print(
        f"{len(lengths)} sequences, {len(arrays['tokens'])} tokens, vocab {len(arrays['vocab'])}, "
        f"lengths min {lengths.min()} median {int(np.median(lengths))} max {lengths.max()}"
    )
    print(f"content sha256 {digest(arrays)}")
    if args.check:
        with np.load(args.out, allow_pickle=False) as shipped:
            same = digest({k: shipped[k] for k in shipped.files}) == digest(arrays)
        print("identical to the shipped file" if same else "DIFFERENT from the shipped file")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays)
    print(
        f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} "
        f"({args.out.stat().st_size / 2**20:.2f} MiB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
