"""Every public function and class says, in optax's shape, what it takes and what it gives back.

Google-style sections (issue 48): ``Args:`` when a function (a class: its constructor) takes
arguments, ``Returns:`` (or ``Yields:``) when a function returns something. Modules and
exception classes in ``batchlab.__all__`` need neither.
"""

from __future__ import annotations

import inspect
import re

import batchlab

#: public names known to lack a section (none now); the test fails when one gains it, so the
#: list only shrinks
KNOWN_MISSING: dict[str, str] = {}


def public_callables() -> list[tuple[str, object]]:
    found = []
    for name in batchlab.__all__:
        obj = getattr(batchlab, name)
        if inspect.ismodule(obj) or (inspect.isclass(obj) and issubclass(obj, BaseException)):
            continue
        found.append((name, obj))
    return found


def missing_sections(obj) -> list[str]:
    doc = inspect.getdoc(obj) or ""
    has = lambda section: re.search(rf"^{section}$", doc, re.MULTILINE) is not None  # noqa: E731
    sig = inspect.signature(obj)  # a class: its constructor's, without self
    missing = []
    if sig.parameters and not has("Args:"):
        missing.append("Args:")
    returns = sig.return_annotation
    gives = not inspect.isclass(obj) and returns not in (None, "None", inspect.Signature.empty)
    if gives and not (has("Returns:") or has("Yields:")):
        missing.append("Returns:")
    return missing


def test_the_check_sees_a_missing_section():
    def undocumented(x: int) -> int:
        """Doubles ``x``."""
        return 2 * x

    def documented(x: int) -> int:
        """Doubles ``x``.

        Args:
          x: a number.

        Returns:
          Twice ``x``.
        """
        return 2 * x

    assert missing_sections(undocumented) == ["Args:", "Returns:"]
    assert missing_sections(documented) == []


def test_public_names_document_args_and_returns():
    callables = public_callables()
    assert len(callables) >= 40, [n for n, _ in callables]  # every function and class checked
    missing = {}
    for name, obj in callables:
        sections = missing_sections(obj)
        if sections and KNOWN_MISSING.get(name) not in sections:
            missing[name] = sections
        elif not sections and name in KNOWN_MISSING:
            missing[name] = f"now has {KNOWN_MISSING[name]}: remove it from KNOWN_MISSING"
    assert not missing, f"public names without Args: / Returns: sections: {missing}"
