"""A notebook's Record: a finding stands only when its contrast reads the other way; one line each."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from nbval.plugin import get_sanitize_patterns

from batchlab import claims as cl
from batchlab.claims import FAILS, HOLDS, INCONCLUSIVE, Number, Samples


def paired(token, num, den, n=15):
    """Two paired timings whose per-round ratio is ``num / den`` with a small spread."""
    wobble = 1 + 0.01 * np.sin(np.arange(n))
    return {
        "layout": Samples("layout", num * wobble, "interleaved", "s", token),
        "compact": Samples("compact", np.full(n, den), "interleaved", "s", token),
    }


def counts(n):
    return [Number("allocations", n, "allocation log")]


RULE = cl.relation("allocations", "<", 2)


@pytest.mark.parametrize(
    ("case", "contrast", "want", "stands"),
    [
        (1, 8, HOLDS, True),  # case holds, the rival's case does not: evidence
        (8, 1, FAILS, True),  # the claim reads the other way, and so does the rival's case
        (1, 1, INCONCLUSIVE, False),  # both hold: the experiment did not discriminate
        (8, 8, FAILS, False),  # the case itself does not hold: the claim is false here
    ],
)
def test_a_finding_stands_only_when_the_contrast_reads_the_other_way(case, contrast, want, stands):
    rec = cl.Record(sizes={"B": 8})
    f = rec.finding("one allocation", RULE, case=counts(case), contrast=counts(contrast), rival="r")
    assert f.outcome == want and f.discriminates is stands
    assert ("(no contrast: not evidence here)" in repr(f)) is (want == INCONCLUSIVE)
    assert rec.findings == [f] and rec.checks == []


def test_a_timed_finding_is_one_short_line_marked_wall_clock_once():
    rec = cl.Record(sizes={"B": 8})
    f = rec.finding(
        "a mask does not skip the pads",
        cl.ratio_above("layout", "compact", 3),
        case=paired("a", 9e-3, 1e-3),
        contrast=paired("b", 1e-3, 1e-3),
        rival="the mask skips the pads",
    )
    line = repr(f)
    assert f.outcome == HOLDS and line.count("(wall clock)") == 1, line
    assert len(line.split()) <= 25, line
    assert "median 9." in line and "15 rounds" in line and "rival's case: does not hold" in line


def test_a_check_is_listed_apart_and_the_table_is_short():
    rec = cl.Record(sizes={"B": 8})
    rec.check("XLA plans one temp block", cl.equals("blocks", 1), [Number("blocks", 1, "plan")])
    rec.finding("one allocation", RULE, case=counts(1), contrast=counts(8), rival="r", source=None)
    assert repr(rec).splitlines() == [
        f"Claims ({rec.scope}):",
        "- finding: one allocation: holds",
        "- check: XLA plans one temp block: holds",
    ]
    assert str(rec.scope).endswith("; B=8") and "<table" in rec._repr_html_()


def test_record_refuses_a_missing_rival_and_an_unknown_source():
    rec = cl.Record(sizes={"B": 8})
    with pytest.raises(TypeError, match=r"`rival` must say"):
        rec.finding("x", RULE, case=counts(1), contrast=counts(8), rival="")
    with pytest.raises(ValueError, match=r"no source claim is called"):
        rec.finding("x", RULE, case=counts(1), contrast=counts(8), rival="r", source="nope")


@pytest.mark.parametrize("n", [1, 5])
def test_the_programmatic_form_has_one_of_three_outcomes(n):
    c = cl.Claim("one allocation", counts(n), RULE)
    assert c.outcome in cl.OUTCOMES and c.outcome == (HOLDS if n < 2 else FAILS)


def sanitized(text: str) -> str:
    """``text`` as nbval compares it: notebooks/sanitize.cfg read and applied as nbval does."""
    cfg = (Path(__file__).resolve().parent.parent / "notebooks" / "sanitize.cfg").read_text()
    for regex, replace in get_sanitize_patterns(cfg):
        text = re.sub(regex, replace, text)
    return text


def test_a_timed_finding_line_sanitizes_alike_whatever_the_run_gives():
    """Enough rounds or too few, holding or not: the stored line and a rerun's compare equal."""
    rule = cl.ratio_above("layout", "compact", 3)
    lines = []
    for n, num in [(15, 9e-3), (15, 2e-3), (5, 9e-3)]:  # holds, does not hold, too few rounds
        rec = cl.Record(sizes={"B": 8})
        f = rec.finding(
            "x",
            rule,
            case=paired("a", num, 1e-3, n),
            contrast=paired("b", 1e-3, 1e-3, n),
            rival="r",
        )
        lines.append(sanitized(repr(f)))
    assert len(set(lines)) == 1, lines
    assert lines[0].startswith("<verdict> (wall clock): layout / compact= <paired ratios>; claimed")


def test_a_wall_clock_sentence_sanitizes_alike_with_parentheses_inside():
    """10's trace reading either way: a nested '(... at L = 0)' must not end the sentence early."""
    texts = [
        "prefetch (wall clock: no faster than sync every step, overlap 3 ms) end",
        "prefetch (wall clock: 4 ms less wall (the same change costs 1 ms at L = 0), "
        "overlap 3 ms: the host loaded while XLA computed) end",
    ]
    assert {sanitized(t) for t in texts} == {"prefetch (wall clock: <varies>) end"}
