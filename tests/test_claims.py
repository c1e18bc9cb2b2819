"""Claims: every rule reaches each of its three outcomes; a claim refuses bad inputs."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchlab import claims as cl
from batchlab.claims import FAILS, HOLDS, INCONCLUSIVE, Claim, Number, Samples, Scope

SCOPE = Scope(sizes={"B": 4}, dtype="float32", backend="cpu", device_kind="cpu", jax_version="0.0")


def samples(name, lo, hi, n=5):
    return Samples(name, np.linspace(lo, hi, n), f"timeit of {name}")


def ev(*items):
    return {e.name: e for e in items}


# --- every rule, evidence for each outcome ------------------------------------------------------

RATIO_ABOVE_CASES = [  # numerator range, denominator range, threshold 4
    ((10.0, 12.0), (1.0, 1.5), HOLDS),  # 10/1.5 = 6.7 > 4 over the whole spread
    ((3.0, 3.5), (1.0, 1.2), FAILS),  # 3.5/1.0 = 3.5 <= 4 over the whole spread
    ((4.0, 8.0), (1.0, 1.5), INCONCLUSIVE),  # 2.7 .. 8.0 straddles 4
]


@pytest.mark.parametrize(("num", "den", "want"), RATIO_ABOVE_CASES)
def test_ratio_above_reaches_each_outcome(num, den, want):
    d = cl.ratio_above("slow", "fast", 4)(ev(samples("slow", *num), samples("fast", *den)))
    assert d.outcome == want and d.timed and "unpaired: fastest; range" in d.deciding


@pytest.mark.parametrize(
    ("num", "den", "want"),
    [
        ((1.0, 1.05), (1.0, 1.02), HOLDS),
        ((2.0, 2.5), (1.0, 1.1), FAILS),
        ((1.0, 2.0), (1.0, 1.1), INCONCLUSIVE),
    ],
)
def test_ratio_below_reaches_each_outcome(num, den, want):
    assert cl.ratio_below("a", "b", 1.2)(ev(samples("a", *num), samples("b", *den))).outcome == want


@pytest.mark.parametrize(("value", "want"), [(8.0, HOLDS), (2.0, FAILS), (None, INCONCLUSIVE)])
def test_ratio_of_deterministic_numbers_is_exact(value, want):
    d = cl.ratio_above("pads", "real", 4)(
        ev(Number("pads", value, "count"), Number("real", 1.0, "count"))
    )
    assert d.outcome == want and not d.timed


@given(st.lists(st.tuples(st.floats(0.1, 10), st.floats(0.1, 10)), min_size=6, max_size=30))
def test_estimate_is_the_median_ratio_that_the_rule_reads(pairs):
    a = Samples("a", [p[0] for p in pairs], "t", paired="r")
    b = Samples("b", [p[1] for p in pairs], "t", paired="r")
    want = float(np.median([x / y for x, y in pairs]))
    assert cl.estimate(a, b) == pytest.approx(want)
    d = cl.ratio_above("a", "b", 1)(ev(a, b))
    assert f"median {cl.rules._ratio_text(want)}" in d.deciding


def test_estimate_unpaired_is_fastest_over_fastest_and_refuses_no_ratio():
    a, b = samples("a", 4.0, 9.0), samples("b", 1.0, 3.0)  # unpaired
    assert cl.estimate(a, b) == 4.0
    assert cl.estimate(Number("n", 6, "s", "B"), Number("d", 3, "s", "B")) == 2.0
    with pytest.raises(ValueError, match="denominator must be above 0"):
        cl.estimate(a, Number("zero", 0, "s", "B"))


def test_ratio_exactly_at_the_threshold_is_not_above_it():
    e = ev(Number("a", 4, "x"), Number("b", 1, "x"))
    assert cl.ratio_above("a", "b", 4)(e).outcome == FAILS
    assert cl.ratio_below("a", "b", 4)(e).outcome == FAILS


@pytest.mark.parametrize(
    ("value", "expected", "want"),
    [
        (2, 2, HOLDS),
        (3, 2, FAILS),
        (None, 2, INCONCLUSIVE),
        ((5,), (5,), HOLDS),
        ((5, 4), (5,), FAILS),
        (np.arange(3), np.arange(3), HOLDS),
        (np.arange(3), np.arange(4), FAILS),
        (True, 1, FAILS),  # a flag is not a count
        ("a, b", "a, b", HOLDS),
    ],
)
def test_equals_reaches_each_outcome(value, expected, want):
    assert cl.equals("x", expected)(ev(Number("x", value, "code"))).outcome == want


@pytest.mark.parametrize(
    ("left", "op", "right", "want"),
    [
        (64, "<", 128, HOLDS),
        (128, "<", 64, FAILS),
        (None, "<", 64, INCONCLUSIVE),
        (64, "<", None, INCONCLUSIVE),
        (7, "==", 7, HOLDS),
        (7, ">=", 8, FAILS),
    ],
)
def test_compare_by_name_reaches_each_outcome(left, op, right, want):
    e = ev(Number("left", left, "a", "B"), Number("right", right, "b", "B"))
    assert cl.relation("left", op, "right")(e).outcome == want


@pytest.mark.parametrize(("left", "want"), [(5, HOLDS), (0, FAILS), (None, INCONCLUSIVE)])
def test_compare_with_a_number_reaches_each_outcome(left, want):
    assert cl.relation("count", ">", 0)(ev(Number("count", left, "len(...)"))).outcome == want


@pytest.mark.parametrize(
    ("a", "b", "want"), [(1, 1, HOLDS), (1, 2, FAILS), (1, None, INCONCLUSIVE), (2, None, FAILS)]
)
def test_all_of_reaches_each_outcome(a, b, want):
    rule = cl.all_of(cl.equals("a", 1), cl.equals("b", 1))
    assert rule(ev(Number("a", a, "x"), Number("b", b, "y"))).outcome == want


# --- property: a rule's outcome depends on its evidence -----------------------------------------

RULES = {
    "ratio_above": (
        cl.ratio_above("a", "b", 4),
        st.tuples(st.floats(0.1, 20), st.floats(1.0, 3.0), st.floats(0.1, 20), st.floats(1.0, 3.0)),
        lambda t: ev(samples("a", t[0], t[0] * t[1]), samples("b", t[2], t[2] * t[3])),
    ),
    "ratio_below": (
        cl.ratio_below("a", "b", 1.5),
        st.tuples(st.floats(0.1, 20), st.floats(1.0, 3.0), st.floats(0.1, 20), st.floats(1.0, 3.0)),
        lambda t: ev(samples("a", t[0], t[0] * t[1]), samples("b", t[2], t[2] * t[3])),
    ),
    "equals": (
        cl.equals("n", 3),
        st.one_of(st.none(), st.integers(0, 6)),
        lambda v: ev(Number("n", v, "count")),
    ),
    "compare": (
        cl.relation("n", "<", "m"),
        st.tuples(st.one_of(st.none(), st.integers(0, 6)), st.integers(0, 6)),
        lambda t: ev(Number("n", t[0], "count"), Number("m", t[1], "count")),
    ),
}


def outcomes_over_generated(rule, strategy, make) -> set[str]:
    """Every outcome ``rule`` gives over 300 generated pieces of evidence (fixed seed)."""
    seen: set[str] = set()

    @settings(max_examples=300, derandomize=True, database=None)
    @given(strategy)
    def collect(x):
        outcome = rule(make(x)).outcome
        assert outcome in cl.OUTCOMES
        seen.add(outcome)

    collect()
    return seen


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_rule_reaches_all_three_outcomes_over_generated_evidence(name):
    seen = outcomes_over_generated(*RULES[name])
    assert seen == set(cl.OUTCOMES), f"{name} reached only {seen}: it cannot fail"


def test_the_property_catches_a_rule_that_cannot_fail():
    """A rule that answers the same for all evidence reaches one outcome: the check above fails it."""

    class AlwaysHolds:
        reads = ("a", "b")

        def __call__(self, evidence):
            return cl.Decision(HOLDS, "fixed text")

    _, strategy, make = RULES["ratio_above"]
    assert outcomes_over_generated(AlwaysHolds(), strategy, make) == {HOLDS}
    with pytest.raises(AssertionError, match="cannot fail"):
        seen = outcomes_over_generated(AlwaysHolds(), strategy, make)
        assert seen == set(cl.OUTCOMES), f"AlwaysHolds reached only {seen}: it cannot fail"


# --- claims --------------------------------------------------------------------------------------


def test_a_cause_in_the_statement_is_refused():
    with pytest.raises(ValueError, match=r"`statement` must be .* gives no cause, got 'x is fast"):
        Claim("x is fast because of the cache", [Number("n", 1, "a")], cl.equals("n", 1))


def test_a_rule_reading_missing_evidence_is_refused():
    with pytest.raises(TypeError, match=r"evidence has \(\['n'\]\), got Equals reading \['m'\]"):
        Claim("x", [Number("n", 1, "a")], cl.equals("m", 1))


def test_bad_claim_inputs_are_refused():
    with pytest.raises(ValueError, match="`statement` must be a sentence"):
        Claim("", [Number("n", 1, "a")], cl.equals("n", 1))
    with pytest.raises(TypeError, match="`evidence` must be a list of Number"):
        Claim("x", [3], cl.equals("n", 1))
    with pytest.raises(TypeError, match="`evidence` must be a list of Number"):
        Claim("x", Number("n", 1, "a"), cl.equals("n", 1))  # one figure: a list of one
    with pytest.raises(TypeError, match="each with a name of its own"):
        Claim("x", [Number("n", 1, "a"), Number("n", 2, "b")], cl.equals("n", 1))
    with pytest.raises(TypeError, match=r"`rule` must be a rule .*got function reading \[\]"):
        Claim("x", [Number("n", 1, "a")], lambda e: None)
    with pytest.raises(ValueError, match="no source claim is called"):
        Claim("x", [Number("n", 1, "a")], cl.equals("n", 1), source="batching is magic")


def test_bad_evidence_and_rules_are_refused():
    with pytest.raises(ValueError, match="at least two positive, finite"):
        Samples("t", [1e-3], "timeit")
    with pytest.raises(ValueError, match="at least two positive, finite"):
        Samples("t", [1e-3, float("nan")], "timeit")
    with pytest.raises(ValueError, match="must be a sequence of at least two positive, finite"):
        Samples("t", 3, "timeit")
    with pytest.raises(TypeError, match="`name` must be a non-empty string"):
        Number("", 1, "a")
    with pytest.raises(ValueError, match="`unit` must be one of"):
        Number("n", 1, "a", unit="GB")
    with pytest.raises(ValueError, match="`threshold` must be positive"):
        cl.ratio_above("a", "b", 0)
    with pytest.raises(ValueError, match="`op` must be one of"):
        cl.relation("a", "=<", 1)
    with pytest.raises(TypeError, match="`right` must name a figure"):
        cl.relation("a", "<", [1])
    with pytest.raises(TypeError, match="takes one or more rules"):
        cl.all_of()
    with pytest.raises(TypeError, match="`t` holds timing samples; equals and relation compare"):
        cl.equals("t", 1)(ev(samples("t", 1, 2)))
    with pytest.raises(TypeError, match="`t` holds timing samples; equals and relation compare"):
        cl.relation("t", "<", 1)(ev(samples("t", 1, 2)))
    with pytest.raises(TypeError, match="`sizes` must be a mapping"):
        Scope(sizes=[1, 2])


def test_scope_is_read_from_this_machine():
    s = Scope(sizes={"B": (1, 4, 1024)}, dtype=np.float32)
    assert (s.backend, s.jax_version) == (jax.default_backend(), jax.__version__)
    assert str(s).endswith("B=1..1024; float32")


def test_a_claim_reads_as_one_line():
    counted = Claim(
        "two batch sizes compile twice",
        [Number("compilations", 2, "count_compiles around jax.jit(f)")],
        cl.equals("compilations", 2),
        scope=SCOPE,
        source="batching allocates once per batch",
    )
    assert repr(counted) == "two batch sizes compile twice: holds; compilations = 2"
    evidence = [samples("a", 4.0, 5.0), samples("b", 0.5, 0.6)]
    timed = Claim("a is slower", evidence, cl.ratio_above("a", "b", 4))
    assert repr(timed).startswith("a is slower: holds (wall clock); a / b = ")


def test_the_eleven_source_claims_have_unique_names():
    assert len(cl.NAMES) == len(set(cl.NAMES)) == 11
    assert cl.source_claim("a batch needs one shape").notebooks == ("01",)


def test_the_readme_lists_every_source_claim_by_name():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## The claims, by name", 1)[1].split("\n## ", 1)[0]
    for c in cl.SOURCE_CLAIMS:
        assert f"| {c.name} | {', '.join(c.notebooks)} |" in section, c.name


def test_each_source_claim_is_recorded_in_the_notebooks_that_claim_to_measure_it():
    """A notebook listed for a source claim records a finding or check with that source."""
    import json

    root = Path(__file__).resolve().parent.parent / "notebooks"
    for c in cl.SOURCE_CLAIMS:
        for number in c.notebooks:
            (path,) = root.glob(f"{number}_*.ipynb")
            cells = json.loads(path.read_text())["cells"]
            code = "\n".join("".join(x["source"]) for x in cells if x["cell_type"] == "code")
            assert c.name in code, f"{path.name} is listed for {c.name!r} but never records it"
