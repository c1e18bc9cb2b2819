"""The advisor's explorer (notebook 12): its numbers are the Advice's, a move measures nothing."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

import batchlab as bl
from batchlab.widgets import AdvisorExplorer
from batchlab.widgets.budget import AdvisorSetting

BUDGET = 2**19  # 512 KiB: vmap's 64 items (a 16 KiB outer product each) do not fit, chunks do


def outer(x):  # (64,) -> (): a (64, 64) temporary per item
    return (jnp.tanh(jnp.outer(x, x)) @ x).sum()


@pytest.fixture(scope="module")
def advice():
    return bl.advise(
        outer,
        np.ones(64, np.float32),
        BUDGET,
        batch_size=64,
        strategies=["vmap", "chunked"],
        progress=False,
        max_seconds=2,
    )


def test_the_setup_is_what_the_tests_assume(advice):
    assert advice["vmap"].planned_bytes > BUDGET > advice["lax.map chunk 1"].planned_bytes
    assert advice["vmap"].samples is None and advice.recommended != "vmap"


def test_at_the_advice_budget_the_numbers_are_the_advice_own(advice):
    s = AdvisorExplorer(advice, [2**20]).update(budget=BUDGET)
    assert isinstance(s, AdvisorSetting)
    assert (s.recommended, s.decided, s.tied) == (advice.recommended, advice.decided, advice.tied)
    assert s.batch_size == advice.batch_size is not None and "vmap" not in s.fits


def test_budget_moves_change_what_fits_and_measure_nothing(advice):
    ex = AdvisorExplorer(advice, [2**10, BUDGET, 2**30])
    tight = ex.update(budget=2**10)
    assert tight.fits == () and tight.recommended is None and tight.batch_size is None
    roomy = ex.update(budget=2**30)
    timed = {c.label for c in advice.candidates if c.samples is not None}
    assert set(roomy.fits) == timed and roomy.batch_size is None  # fitting elsewhere compiles
    with bl.count_compiles() as compiles:
        for b in ex.choices["budget"]:
            ex.update(budget=b)
    assert compiles.count == 0 and ex.last_from_cache and "nothing re-measured" in ex.status_text


def test_figure_and_widget(advice):
    ex = AdvisorExplorer(advice, [2**10, 2**30])
    assert ex.choices["budget"] == (2**10, BUDGET, 2**30) and ex.params["budget"] == BUDGET
    labels = ex.figure().axes[0].get_legend_handles_labels()[1]
    # the ring's label follows the advice's verdict (undecided under load: CI's hogs), tested
    # both ways in test_the_pick_ring_says_whether_the_timings_back_it
    ring = "pick" if advice.decided else "pick, undecided: the fastest median"
    assert ring in labels and any(x.startswith("budget / margin") for x in labels)
    assert ex.widget is not None and set(ex.control_widgets) == {"budget"}
    ex.update(budget=2**30)  # the drawn budget follows the slider
    line = f"budget / margin {bl.format_bytes(int(2**30 / advice.margin))}"
    assert line in ex.figure().axes[0].get_legend_handles_labels()[1]
    # at a tight budget every timed candidate is past the line, and its legend entry says so
    ex.update(budget=2**10)
    handles, labels = ex.figure().axes[0].get_legend_handles_labels()
    marks = [lab for lab in labels if lab.startswith(("lax.map", "host", "vmap"))]
    assert marks and all(lab.endswith("(past budget / margin: not picked)") for lab in marks), marks
    colors = [h[0].get_color() for h, lab in zip(handles, labels, strict=True) if lab in marks]
    assert len(set(colors)) == len(colors), "two candidates share a colour"


@pytest.mark.parametrize("spread", [1.05, 1.3, 2.5, 3.9, 5.0, 11.0, 19.0, 60.0])
def test_time_axis_labels_three_to_eight_ticks_whatever_the_spread(advice, spread):
    # a TPU's candidates can sit within 2x of each other (1-2-5 ticks labelled one), a CPU's
    # over 10x (every 1..9 labelled crowds the axis): 3 to 8 labelled ticks in the drawn range
    timed = [c for c in advice.candidates if c.samples is not None]
    fake = []  # the same candidates with hypothetical timings, 1 us to `spread` us per item
    for i, c in enumerate(timed):
        per_call = 1e-6 * c.items * spread ** (i / max(1, len(timed) - 1))
        s = dataclasses.replace(c.samples, values=(per_call,) * len(c.samples.values))
        fake.append(dataclasses.replace(c, samples=s))
    ax = bl.advisor.plot_candidates(dataclasses.replace(advice, candidates=tuple(fake))).axes[0]
    lo, hi = ax.get_ylim()
    shown = [t for t in ax.get_yticks() if lo <= t <= hi]
    assert 3 <= len(shown) <= 8, (spread, shown)


@pytest.mark.parametrize(
    ("budgets", "exc", "match"),
    [
        ([2**20, "1 MiB"], TypeError, "`budgets` must be a positive int"),
        ([2**20, -1], ValueError, "`budgets`"),
    ],
)
def test_bad_arguments_name_the_argument(advice, budgets, exc, match):
    with pytest.raises(exc, match=match):
        AdvisorExplorer(advice, budgets)
    with pytest.raises(TypeError, match=r"`advice` must be what bl\.advise returned"):
        AdvisorExplorer({"vmap": 1}, [2**20])


def test_a_candidate_left_out_by_the_fit_stays_out_at_and_below_the_advice_budget(advice):
    """advise leaves out a faster candidate that cannot run all the items; the explorer too."""
    import dataclasses

    pick = advice.recommended
    marked = tuple(
        dataclasses.replace(c, note="left out: faster, but it fits 8 items, not 64")
        if c.label == pick
        else c
        for c in advice.candidates
    )
    moved = dataclasses.replace(advice, candidates=marked)
    ex = AdvisorExplorer(moved, [2**18, 2**30])
    assert pick not in (ex.update(budget=BUDGET).recommended, ex.update(budget=2**18).recommended)
    assert pick in ex.update(budget=2**30).fits  # more room: it may run all the items there


@pytest.mark.parametrize("decided", [True, False])
def test_the_pick_ring_says_whether_the_timings_back_it(advice, decided):
    fig = bl.advisor.plot_candidates(dataclasses.replace(advice, decided=decided))
    rings = [h for h in fig.axes[0].lines if h.get_label().startswith("pick")]
    assert len(rings) == 1
    label, color = rings[0].get_label(), rings[0].get_markeredgecolor()
    assert ("undecided" in label) is (not decided), label
    assert (color == "k") is decided, color


def test_a_faster_candidate_left_out_by_its_margin_is_named_in_the_plot_and_the_why(advice):
    timed = [c for c in advice.candidates if c.samples is not None]
    fast = min(timed, key=lambda c: c.per_item)
    pick = next(c for c in timed if c is not fast)
    why = "faster, but with margin 1.46 it fits 256 items, not 512"
    moved = dataclasses.replace(
        advice,
        candidates=tuple(
            dataclasses.replace(c, note=f"left out: {why}") if c is fast else c
            for c in advice.candidates
        ),
        recommended=pick.label,
        decided=False,
        tied=(pick.label, fast.label),
        excluded=((fast.label, why),),
    )
    labels = bl.advisor.plot_candidates(moved).axes[0].get_legend_handles_labels()[1]
    assert f"{fast.label} (left out by its own margin)" in labels, labels
    assert "pick, undecided: the fastest median not left out" in labels, labels
    assert f"the fastest median so far not left out: {pick.label}" in moved.why
    plain = dataclasses.replace(moved, candidates=advice.candidates, excluded=())
    labels = bl.advisor.plot_candidates(plain).axes[0].get_legend_handles_labels()[1]
    assert "pick, undecided: the fastest median" in labels and not any("left" in x for x in labels)
    assert f"the fastest median so far: {pick.label}" in plain.why


def test_screened_out_candidates_are_drawn_hollow_and_say_so(advice):
    timed = [c for c in advice.candidates if c.samples is not None]
    first, rest = timed[0], timed[1:]
    screened = dataclasses.replace(first, note="screened out: over 1.5x the fastest in 6 rounds")
    kept = [dataclasses.replace(c, note="") for c in rest]
    fig = bl.advisor.plot_candidates(dataclasses.replace(advice, candidates=(screened, *kept)))
    handles, labels = fig.axes[0].get_legend_handles_labels()
    faces = {
        lab: h[0].get_markerfacecolor()
        for h, lab in zip(handles, labels, strict=True)
        if lab.startswith(("lax.map", "host", "vmap"))
    }
    hollow = [lab for lab, face in faces.items() if face == "none"]
    assert hollow == [lab for lab in faces if lab.startswith(first.label + " (screened out")], faces
    assert len(hollow) == 1 and len(faces) == len(timed)


@pytest.mark.parametrize("decided", [True, False])
def test_the_text_calls_an_undecided_reading_so(advice, decided):
    text = repr(dataclasses.replace(advice, decided=decided, deciding="a / b = 1.0x to 1.3x"))
    (line,) = [ln for ln in text.splitlines() if "a / b = 1.0x to 1.3x" in ln]
    want = "deciding: " if decided else "undecided, the nearest reading: "
    assert line.startswith(want), line


def test_point_labels_sit_beside_their_points_and_never_cover_each_other(advice):
    fig = bl.advisor.plot_candidates(advice)
    ax = fig.axes[0]
    fig.canvas.draw()
    at = {c.label.replace("lax.map chunk ", "map ").replace("host chunk ", "host "): c
          for c in advice.candidates if c.samples is not None}  # fmt: skip
    notes = [t for t in ax.texts if t.get_text() in at]
    assert notes and notes[0].get_text() in {advice.recommended.replace("lax.map chunk ", "map ")}
    for t in notes:  # each at its own candidate's point
        c = at[t.get_text()]
        assert t.xy == (c.planned_bytes, c.per_item), t.get_text()
    boxes = [t.get_window_extent() for t in notes]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), "two point labels print over each other"
    legend = {t.get_text().split(" (")[0] for t in ax.get_legend().get_texts()}
    assert {c.label for c in at.values()} <= legend  # one left unlabelled is still named there
