"""Predict, then measure: `exercises.reveal` shows the guess beside the measurement."""

import pytest

from batchlab import exercises


@pytest.mark.parametrize(
    ("guess", "measured", "verdict"),
    [
        (8, 8, "exact"),
        (8.5, 8, "close: within 10% (too high)"),
        (5, 8, "within 2x (too low by 1.6x)"),
        (80, 8, "off by 10x (too high)"),
        (1, 8, "off by 8x (too low)"),
        (3, 0, "off: the measured value is 0"),
        (-3, 8, "off: the guess has the wrong sign"),
        ("vmap", "vmap", "right"),
        ("loop", "vmap", "not this time: you chose 'loop'"),
    ],
)
def test_verdict_is_computed_from_the_two_values(guess, measured, verdict):
    assert exercises.reveal("t.x", guess, measured=measured).verdict == verdict


@pytest.mark.parametrize("guess", [None, ...])
def test_no_guess_still_reveals(guess):
    r = exercises.reveal("t.x", guess, measured=3, unit="compilations")
    assert not r.made and "no prediction made" in r.verdict
    assert "measured: 3 compilations" in repr(r)
    assert "no prediction made" in r._repr_html_()


def test_units_print_in_human_units():
    r = exercises.reveal("t.bytes", 2048, measured=1024, unit="bytes")
    assert "2.00 KiB" in repr(r) and "1.00 KiB" in repr(r)


def test_html_escapes_the_guess():
    r = exercises.reveal("t.x", "<b>", measured="<i>")
    assert "<b>" not in r._repr_html_().replace("<b>[", "").replace("<b>&lt;", "")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(prediction_id="nodot", guess=1, measured=1), ValueError, "prediction_id"),
        (dict(prediction_id="t.x", guess="8", measured=8), TypeError, "`guess` must be a number"),
        (dict(prediction_id="t.x", guess=True, measured=8), TypeError, "`guess` must be a number"),
        (dict(prediction_id="t.x", guess=8, measured="vmap"), TypeError, "one of the choices"),
        (dict(prediction_id="t.x", guess=float("nan"), measured=8), ValueError, "`guess` must be"),
        (
            dict(prediction_id="t.x", guess=1, measured=float("nan")),
            ValueError,
            r"`measured` must be a number \(not NaN\)",
        ),
        (dict(prediction_id="t.x", guess=1, measured=[1]), TypeError, "`measured` must be"),
        (
            dict(prediction_id="t.x", guess="map", measured="vmap", choices=["vmap", "loop"]),
            ValueError,
            r"one of the choices \['vmap', 'loop'\]",
        ),
    ],
)
def test_bad_input_is_refused(kwargs, error, match):
    pid = kwargs.pop("prediction_id")
    guess = kwargs.pop("guess")
    with pytest.raises(error, match=match):
        exercises.reveal(pid, guess, **kwargs)
