"""The probe (test tooling, ``tests/claims_probing.py``): a rule run on variants of its evidence.

It shows that a rule responds to made-up evidence, each kind reaching all three outcomes; a
rule that cannot fail is caught. (Whether an experiment could have come out otherwise is a
finding's contrast, ``bl.claims.Record.finding``, tested in ``test_claims_record.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest
from claims_probing import probe, probe_rule
from test_claims import SCOPE, samples

from batchlab import claims as cl
from batchlab.claims import FAILS, HOLDS, INCONCLUSIVE, Claim, Number, Samples

# --- the probe: a claim's own rule, run on variants of its own evidence -------------------------


class AlwaysHolds:
    """A rule that answers the same for all evidence: it cannot fail."""

    reads = ("n",)

    def __call__(self, evidence):
        return cl.Decision(HOLDS, "fixed text")


def test_the_probe_catches_a_constant_rule():
    p = probe_rule(AlwaysHolds(), [Number("n", 1, "count")])
    assert not p.shown and p.missing == (FAILS, INCONCLUSIVE)
    assert "a rule the probe does not know" in repr(p) and "NOT shown able to fail" in repr(p)
    claim = Claim("n is one", [Number("n", 1, "count")], AlwaysHolds(), scope=SCOPE)
    assert probe(claim).missing == {"rule": (FAILS, INCONCLUSIVE)}


def test_a_rule_that_ignores_its_evidence_is_caught_even_when_it_varies_by_name():
    """Reading the right names is not enough: the outcome must follow the values."""

    class ByName:
        reads = ("a", "b")

        def __call__(self, evidence):
            return cl.Decision(FAILS if "a" in evidence else HOLDS, "by name")

    assert probe_rule(ByName(), [Number("a", 1, "x"), Number("b", 2, "y")]).missing == (
        HOLDS,
        INCONCLUSIVE,
    )


def test_a_rule_that_raises_on_a_variant_reaches_nothing_there():
    class Picky:
        reads = ("n",)

        def __call__(self, evidence):
            if evidence["n"].value != 1:
                raise RuntimeError("only one")
            return cl.Decision(HOLDS, "one")

    p = probe_rule(Picky(), [Number("n", 1, "count")])
    assert not p.shown and not p.errors  # unknown: no variants tried, none raised
    p = probe_rule(cl.all_of(cl.equals("n", 1), Picky()), [Number("n", 1, "count")])
    assert (p.reached[HOLDS] is not None) and not p.shown


PROBED_RULES = {
    "ratio_above, samples": (
        cl.ratio_above("slow", "fast", 4),
        [samples("slow", 10, 12), samples("fast", 1, 1.2)],
    ),
    "ratio_below, samples": (
        cl.ratio_below("a", "b", 1.2),
        [samples("a", 1, 1.05), samples("b", 1, 1.02)],
    ),
    "ratio_above, numbers": (
        cl.ratio_above("pads", "real", 4),
        [Number("pads", 800, "count"), Number("real", 100, "count")],
    ),
    "ratio_below, number over samples": (
        cl.ratio_below("flops", "t", 0.2),
        [Number("flops", 3, "cost_analysis"), samples("t", 1, 1.5)],
    ),
    "ratio, number not measurable here": (
        cl.ratio_above("gpu", "cpu", 2),
        [Number("gpu", None, "memory_stats()"), Number("cpu", 0, "count")],
    ),
    "equals int": (cl.equals("n", 2), [Number("n", 2, "count_compiles")]),
    "equals bool": (cl.equals("raised", True), [Number("raised", True, "try/except")]),
    "equals tuple": (cl.equals("shape", (5,)), [Number("shape", (5, 4), "y.shape")]),
    "equals str": (cl.equals("lines", "b, c"), [Number("lines", "b, c", "exec")]),
    "equals float": (cl.equals("x", 0.5), [Number("x", 0.5, "f(x)")]),
    "equals array": (cl.equals("ids", np.arange(3)), [Number("ids", np.arange(3), "pack")]),
    "equals None measured": (cl.equals("waits", 0), [Number("waits", None, "GPU only")]),
    "compare by name": (
        cl.relation("temp", "<", "values"),
        [Number("temp", 64, "plan", "B"), Number("values", 128, "plan", "B")],
    ),
    "compare with a number": (cl.relation("count", ">", 0), [Number("count", 5, "len")]),
    "compare floats": (cl.relation("off by", "<", 1e-5), [Number("off by", 0.0, "max abs")]),
    "compare with a 0-d array": (
        cl.relation("sum", "<", "limit"),
        [Number("sum", np.float32(2.0), "jnp.sum"), Number("limit", np.asarray(3.0), "x")],
    ),
    "compare ==": (cl.relation("a", "==", "b"), [Number("a", 7, "x"), Number("b", 7, "y")]),
    "compare != on shapes": (
        cl.relation("a", "!=", "b"),
        [Number("a", (4, 2), "x.shape"), Number("b", (4, 2), "y.shape")],
    ),
    "compare, right not measurable": (
        cl.relation("a", ">=", "b"),
        [Number("a", 3, "x"), Number("b", None, "GPU only")],
    ),
    "all_of": (
        cl.all_of(cl.equals("a", 1), cl.relation("b", "<", "c"), cl.ratio_above("t", "u", 2)),
        [
            Number("a", 1, "x"),
            Number("b", 9, "y"),
            Number("c", 3, "z"),
            samples("t", 1, 1.1),
            samples("u", 1, 1.1),
        ],
    ),
    "nested all_of sharing a figure": (
        cl.all_of(
            cl.relation("a", ">", 0), cl.all_of(cl.relation("a", "<", 10), cl.equals("f", False))
        ),
        [Number("a", 5, "x"), Number("f", False, "y")],
    ),
}


@pytest.mark.parametrize("name", sorted(PROBED_RULES))
def test_the_probe_shows_each_rule_kind_reaching_all_three_outcomes(name):
    rule, evidence = PROBED_RULES[name]
    p = probe_rule(rule, evidence)
    assert p.shown, repr(p)
    measured = {e.name: e for e in evidence}
    for outcome in cl.OUTCOMES:
        r = p.reached[outcome]
        assert r.outcome == outcome and r.deciding
        changed = {e.name: e for e in r.changed}
        assert changed.keys() <= measured.keys()  # same names
        for n, e in changed.items():  # same kinds: a Number stays a Number, Samples stay Samples
            assert type(e) is type(measured[n]) and (e.source, e.unit) == (
                measured[n].source,
                measured[n].unit,
            )
        variant = {**measured, **changed}
        assert rule(variant).outcome == outcome  # the real rule, again, on that evidence


def test_all_of_fails_by_one_part_with_the_others_holding():
    rule, _ = PROBED_RULES["all_of"]
    evidence = [  # every part holds as measured
        Number("a", 1, "x"),
        Number("b", 1, "y"),
        Number("c", 3, "z"),
        samples("t", 5, 5.5),
        samples("u", 1, 1.1),
    ]
    p = probe_rule(rule, evidence)
    assert p.reached[HOLDS].changed == ()
    variant = {**{e.name: e for e in evidence}, **{e.name: e for e in p.reached[FAILS].changed}}
    parts = [part(variant).outcome for part in rule.parts]
    assert parts.count(FAILS) == 1 and parts.count(HOLDS) == 2, parts
    assert "the others holding" in p.reached[FAILS].label


def test_all_of_whose_parts_contradict_cannot_hold():
    rule = cl.all_of(cl.equals("n", 1), cl.equals("n", 2))
    assert probe_rule(rule, [Number("n", 1, "x")]).missing == (HOLDS,)


def test_samples_stay_samples_and_their_spread_straddles_the_threshold():
    p = probe_rule(
        cl.ratio_above("slow", "fast", 4), [samples("slow", 10, 12), samples("fast", 1, 1.2)]
    )
    (straddle,) = p.reached[INCONCLUSIVE].changed
    assert isinstance(straddle, Samples) and len(straddle.values) == 5
    assert straddle.fastest / 1.2 <= 4 < straddle.slowest / 1.0
    assert "unpaired" in p.reached[INCONCLUSIVE].deciding


def test_samples_without_a_spread_get_one_on_the_other_side():
    p = probe_rule(
        cl.ratio_above("n", "t", 2),
        [Number("n", 10, "count"), Samples("t", [1.0, 1.0], "timeit")],
    )
    assert p.shown
    widened = {e.name: e for e in p.reached[INCONCLUSIVE].changed}["t"]
    assert isinstance(widened, Samples) and widened.slowest > widened.fastest


@pytest.mark.parametrize(
    "rule",
    [cl.equals("n", 3), cl.relation("n", "<", 5), cl.ratio_above("n", "m", 2)],
    ids=["equals", "compare", "ratio"],
)
def test_a_number_not_measurable_here_is_inconclusive(rule):
    evidence = [Number("n", 3, "count"), Number("m", 1, "count")]
    r = probe_rule(rule, evidence).reached[INCONCLUSIVE]
    assert any(isinstance(e, Number) and e.value is None for e in r.changed), r


def test_a_claim_probe_reads_well():
    evidence = [samples("batch 1", 4.0, 5.0), samples("batch 64", 0.5, 0.6)]
    rule = cl.ratio_above("batch 1", "batch 64", 4)
    p = probe(Claim("a bigger batch costs less per item", evidence, rule, scope=SCOPE))
    assert p.shown and [r.what for r in p.rules] == ["rule"]
    text = repr(p)
    assert text.startswith("Probe of 'a bigger batch costs less per item':")
    assert text.count("shown able to fail: every outcome reached") == 1
    html = p._repr_html_()
    assert html.count("<tr>") == 4 and "shown able to fail" in html and "NOT reached" not in html
    assert "NOT reached" in probe(Claim("n", [Number("n", 1, "c")], AlwaysHolds()))._repr_html_()
    with pytest.raises(TypeError, match=r"`claim` must be a bl\.claims\.Claim"):
        probe("a claim")


def test_the_probe_is_test_tooling_not_the_claims_room():
    assert not {"probe", "probe_rule", "Probe"} & set(cl.__all__)
    assert not hasattr(cl, "probing") and not hasattr(cl, "variants")


def test_bad_probe_inputs_name_the_argument():
    with pytest.raises(TypeError, match=r"`claim` must be a"):
        probe(5)
    with pytest.raises(TypeError, match=r"`evidence` must be a list of bl.claims.Number"):
        probe_rule(cl.equals("n", 1), 5)
    with pytest.raises(TypeError, match=r"`rule` must be a rule"):
        probe_rule(5, [])
