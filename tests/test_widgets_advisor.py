"""The advisor's explorer (notebook 12): its numbers are the Advice's, a move measures nothing."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import batchlab as bl
from batchlab.advisor import plot_candidates
from batchlab.widgets import AdvisorExplorer
from batchlab.widgets.advisor import AdvisorSetting, default_budgets, setting

BUDGET = 2**19  # 512 KiB: vmap's 64 items (a 16 KiB outer product each) do not fit, chunks do


def outer(x):  # (64,) -> (): a (64, 64) temporary per item
    return (jnp.tanh(jnp.outer(x, x)) @ x).sum()


@pytest.fixture(scope="module")
def advice():
    bl.advisor.clear_cache()
    a = bl.advise(
        outer,
        np.ones(64, np.float32),
        BUDGET,
        batch_size=64,
        chunk_sizes=[4, 16],
        strategies=["vmap", "chunked"],
        observe_peaks=False,  # peaks are XLA's plans: deterministic
        progress=False,
        max_seconds=60,
    )
    yield a
    bl.advisor.clear_cache()


def test_the_setup_is_what_the_tests_assume(advice):
    assert [c.label for c in advice.candidates] == ["vmap", "lax.map chunk 4", "lax.map chunk 16"]
    assert advice["vmap"].planned_bytes > BUDGET > advice["lax.map chunk 16"].planned_bytes
    assert all(c.per_item is not None for c in advice.candidates)


def test_at_the_advice_budget_the_numbers_are_the_advice_own(advice):
    ex = AdvisorExplorer(advice)
    s = ex.update(budget=BUDGET, chunk_size=advice.chunk_size)
    assert isinstance(s, AdvisorSetting)
    assert s.recommended == advice.recommended and s.within_noise == advice.within_noise
    assert s.batch_size == advice.batch_size is not None
    assert s.budget_bytes_used == advice.budget_bytes_used and s.ratio_used == advice.ratio_used
    assert s.chunk is advice[f"lax.map chunk {advice.chunk_size}"]
    assert s.vmap is advice["vmap"]
    assert [(c.statement, c.outcome) for c in s.advice.claims] == [
        (c.statement, c.outcome) for c in advice.claims
    ]
    assert s.fits == ("lax.map chunk 4", "lax.map chunk 16")
    assert s.memory_ratio == advice["vmap"].peak_bytes / s.chunk.peak_bytes
    assert s.time_ratio == s.chunk.per_item.fastest / advice["vmap"].per_item.fastest


def test_budget_moves_change_what_fits_and_the_choice(advice):
    ex = AdvisorExplorer(advice, [2**10, BUDGET, 2**24])
    tight = ex.update(budget=2**10)
    assert tight.fits == () and tight.batch_size is None
    assert any("no candidate fits" in n for n in tight.advice.notes)
    roomy = ex.update(budget=2**24)
    assert roomy.fits == ("vmap", "lax.map chunk 4", "lax.map chunk 16")
    assert roomy.batch_size is None  # not fitted away from the advice's budget: that compiles
    assert roomy.budget_bytes_used == int(2**24 / roomy.ratio_used)
    middle = ex.update(budget=BUDGET)
    assert middle.recommended in ("lax.map chunk 4", "lax.map chunk 16")
    assert ex.last_from_cache  # the starting setting, measured when the explorer was built
    ex.update(budget=2**10)
    assert ex.last_from_cache and "nothing re-measured" in ex.status_text


def test_chunk_size_selects_the_candidate(advice):
    ex = AdvisorExplorer(advice, chunk_size=4)
    assert ex.result.chunk.label == "lax.map chunk 4"
    s = ex.update(chunk_size=16)
    assert s.chunk.label == "lax.map chunk 16" and s.chunk_size == 16
    assert s.recommended == ex.update(chunk_size=4).recommended  # the choice does not move
    assert ex.choices["chunk_size"] == (4, 16)


def test_a_move_compiles_and_runs_nothing(advice, monkeypatch):
    ex = AdvisorExplorer(advice)
    with bl.count_compiles() as compiles:
        for b in ex.choices["budget"]:
            for k in ex.choices["chunk_size"]:
                ex.update(budget=b, chunk_size=k)
    assert compiles.count == 0
    assert len(ex.cache) == len(ex.choices["budget"]) * len(ex.choices["chunk_size"])


def test_default_budgets_span_the_peaks_and_hold_the_advice_budget(advice):
    stops = default_budgets(advice)
    peaks = [c.peak_bytes for c in advice.candidates]
    assert BUDGET in stops and stops == sorted(stops)
    assert stops[0] < min(peaks) and stops[-1] > max(peaks)
    assert setting(advice, stops[0], 4).fits == ()


def test_figure_and_widget(advice):
    ex = AdvisorExplorer(advice, chunk_size=16)
    fig = ex.figure()
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "selected: lax.map chunk 16" in labels and f"budget {bl.format_bytes(BUDGET)}" in labels
    ui = ex.widget
    assert ui is not None and set(ex.control_widgets) == {"budget", "chunk_size"}
    ex.control_widgets["chunk_size"].value = 4  # what a slider release does
    assert ex.params["chunk_size"] == 4 and ex.result.chunk.label == "lax.map chunk 4"
    assert "lax.map chunk 4" in ex.status_text
    # a label no candidate has draws nothing extra
    plot_candidates(advice, highlight="no such candidate")


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "match"),
    [
        ((), {"budget": 3}, ValueError, r"`budget`=3 is not one of the slider's stops"),
        ((), {"budget": "1 MiB"}, TypeError, "`budget` must be a positive int"),
        ((), {"chunk_size": 8}, ValueError, r"`chunk_size`=8 is not one the advice measured"),
        ((), {"chunk_size": 4.0}, TypeError, "`chunk_size` must be a positive int"),
        (([],), {}, ValueError, "`budgets` must hold at least one budget"),
        (("1 MiB",), {}, TypeError, "`budgets` must be a list of bytes"),
        (([2**20, -1],), {}, ValueError, "`budgets`"),
    ],
)
def test_bad_arguments_name_the_argument(advice, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        AdvisorExplorer(advice, *args, **kwargs)


def test_not_an_advice_and_an_advice_without_chunks():
    with pytest.raises(TypeError, match=r"`advice` must be what bl\.advise returned"):
        AdvisorExplorer({"vmap": 1})
    a = bl.advise(
        outer,
        np.ones(64, np.float32),
        BUDGET,
        batch_size=8,
        strategies=["vmap"],
        observe_peaks=False,
        progress=False,
        max_seconds=30,
    )
    with pytest.raises(ValueError, match=r"`advice` has no lax.map candidate.*\['vmap'\]"):
        AdvisorExplorer(a)


def test_update_refuses_a_setting_the_sliders_cannot_show(advice):
    ex = AdvisorExplorer(advice)
    with pytest.raises(ValueError, match=r"`chunk_size`=3 is not one of this explorer's settings"):
        ex.update(chunk_size=3)
    with pytest.raises(ValueError, match=r"`budget`=7 is not one of this explorer's settings"):
        ex.update(budget=7)
    assert ex.params["budget"] == BUDGET  # the last good setting is kept


def test_a_chunk_size_left_unmeasured_is_offered_and_says_so(advice):
    import dataclasses

    left = dataclasses.replace(
        advice["lax.map chunk 16"], per_item=None, error="not measured: max_seconds reached"
    )
    partial = dataclasses.replace(
        advice, candidates=tuple(left if c.label == left.label else c for c in advice.candidates)
    )
    ex = AdvisorExplorer(partial, chunk_size=16)
    s = ex.result
    assert ex.choices["chunk_size"] == (4, 16) and s.chunk is left
    assert s.time_ratio is None and s.memory_ratio is not None and not s.chunk_fits
    assert "lax.map chunk 16" not in s.fits and "not measured" in repr(s)
    assert "selected: lax.map chunk 16" not in ex.figure().axes[0].get_legend_handles_labels()[1]
