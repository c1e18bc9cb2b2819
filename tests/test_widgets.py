"""Explorers and controls, through their plain-Python entry points.

The widgets are built (ipywidgets works without a browser) and driven by
setting control values, exactly what a slider release does in JupyterLab;
tests/test_browser.py checks the same in a real browser.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import batchlab as bl
from batchlab.widgets import BatchSizeExplorer, Explorer, controls
from batchlab.widgets.explorer import error_message


def counting_explorer(**kwargs):
    calls = []

    def compute(n, label="x"):
        calls.append((n, label))
        if n < 0:
            raise ValueError(f"`n` must be >= 0, got n={n}; pick a size from the slider.")
        return n * n

    ex = Explorer(
        compute, {"n": 1, "label": "x"}, describe=lambda r: f"square <b>{r}</b>", **kwargs
    )
    return ex, calls


# ------------------------------------------------------------------ Explorer core
def test_update_returns_result_and_caches():
    ex, calls = counting_explorer()
    assert ex.update(n=3) == 9
    assert ex.update(n=4) == 16
    assert ex.update(n=3) == 9
    assert calls == [(3, "x"), (4, "x")]
    assert ex.last_from_cache and ex.result == 9 and ex.params == {"n": 3, "label": "x"}
    assert "from cache" in ex.status_text


def test_update_with_no_changes_measures_the_start_setting_once():
    ex, calls = counting_explorer()
    ex.update()
    ex.update()
    assert calls == [(1, "x")]


def test_error_keeps_last_good_setting_and_is_reported():
    ex, _ = counting_explorer()
    ex.update(n=2)
    with pytest.raises(ValueError, match="`n` must be >= 0"):
        ex.update(n=-1)
    assert ex.error.startswith("ValueError: `n` must be >= 0, got n=-1")
    assert ex.params["n"] == 2 and ex.result == 4
    assert ex.update(n=5) == 25 and ex.error is None


def test_unknown_parameter():
    ex, _ = counting_explorer()
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) \['m'\]"):
        ex.update(m=1)


def test_error_message_is_shortened():
    msg = error_message(RuntimeError("RESOURCE_EXHAUSTED: " + "x" * 5000))
    assert msg.startswith("RuntimeError: RESOURCE_EXHAUSTED") and msg.endswith("(shortened)")
    assert error_message(ValueError()) == "ValueError: (no message)"


def test_figure():
    ex, _ = counting_explorer(draw=lambda e: _tiny_figure(e.result))
    assert ex.figure() is None  # nothing measured yet
    ex.update(n=2)
    assert ex.figure() is not None


def _tiny_figure(value):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1.5))
    fig.subplots().bar([0], [value])
    return fig


# ------------------------------------------------------------------ the widget front end
def slider_explorer(**kwargs):
    ex, calls = counting_explorer(
        controls={"n": controls.stops_slider(range(9), "n")},
        draw=lambda e: _tiny_figure(e.result),
        **kwargs,
    )
    return ex, calls


def test_widget_change_measures_on_release_and_shows_result():
    ex, calls = slider_explorer()
    ex.update()
    box = ex.widget
    slider = ex.control_widgets["n"]
    assert slider.continuous_update is False
    assert "batchlab-explorer" in box._dom_classes
    slider.value = 5  # what a slider release does
    assert calls[-1] == (5, "x") and ex.result == 25
    assert "data-state='done'" in ex._status.value and "square <b>25</b>" in ex._status.value
    assert "&quot;n&quot;: 5" in ex._status.value  # the shown setting, for the browser test
    assert bytes(ex._image.value).startswith(b"\x89PNG")


def test_widget_error_is_shown_not_raised_and_control_reverts():
    ex, _ = counting_explorer(controls={"n": controls.choice([-1, 1, 2], description="n")})
    ex.update(n=2)
    _ = ex.widget
    ex.control_widgets["n"].value = -1  # must not raise out of the callback
    assert "data-state='error'" in ex._status.value
    assert "`n` must be &gt;= 0" in ex._status.value
    assert ex.control_widgets["n"].value == 2  # back to the setting the plot shows
    assert "batchlab-busy" not in ex.widget._dom_classes


def test_draw_error_is_shown_in_the_widget():
    def draw(e):
        raise ValueError("cannot plot a negative square")

    ex, _ = counting_explorer(controls={"n": controls.stops_slider(range(9), "n")}, draw=draw)
    _ = ex.widget
    ex.control_widgets["n"].value = 3
    assert ex.result == 9
    assert "could not draw the plot: ValueError: cannot plot" in ex.error
    assert "data-state='error'" in ex._status.value


def test_update_from_python_moves_the_control():
    ex, _ = slider_explorer()
    _ = ex.widget
    ex.update(n=7)
    assert ex.control_widgets["n"].value == 7


def test_revisit_reuses_the_drawn_plot():
    draws = []

    def draw(e):
        draws.append(e.params["n"])
        return _tiny_figure(e.result)

    ex, calls = counting_explorer(controls={"n": controls.stops_slider(range(9), "n")}, draw=draw)
    _ = ex.widget
    ex.update(n=2)
    ex.update(n=2)
    assert draws == [2] and len(calls) == 1


# ------------------------------------------------------------------ BatchSizeExplorer
def make_batch(b):
    return (jnp.ones((b, 16), jnp.float32),)


def row_sums(x):
    return jnp.tanh(x).sum(1)


def test_batch_size_explorer_cache_hit_does_not_recompile():
    ex = BatchSizeExplorer(row_sums, make_batch, [1, 4, 16], repeat=3)
    ex.update(batch_size=4)
    first = ex.last_update_seconds
    with bl.count_compiles() as c:
        m = ex.update(batch_size=1)
        ex.update(batch_size=4)
    assert c.count == 0 and ex.last_from_cache
    assert m.memory.argument_bytes == 1 * 16 * 4
    assert ex.last_update_seconds < first
    assert ex.as_sweep().values == [1, 4]


def test_batch_size_explorer_reports_compile_apart_from_the_run():
    ex = BatchSizeExplorer(row_sums, make_batch, [2, 32], repeat=3)
    ex.update(batch_size=32)
    assert ex.result.compiles >= 1  # measured apart from the run time
    assert "batch size 32" in ex.status_text and "per batch" in ex.status_text


def test_batch_size_explorer_widget_slider():
    ex = BatchSizeExplorer(row_sums, make_batch, [1, 2, 4], repeat=3)
    _ = ex.widget
    slider = ex.control_widgets["batch_size"]
    assert [v for _, v in slider.options] == [1, 2, 4] and slider.continuous_update is False
    slider.value = 4
    assert ex.params["batch_size"] == 4 and ex.as_sweep().values == [1, 4]
    assert "batch size <b>4</b>" in ex._status.value


def test_batch_size_explorer_shows_an_error_from_the_function():
    def bad(x):
        if x.shape[0] > 2:
            raise ValueError(f"`x` has {x.shape[0]} items; this toy function takes at most 2.")
        return x.sum()

    ex = BatchSizeExplorer(bad, make_batch, [1, 2, 4], repeat=3)
    _ = ex.widget
    ex.control_widgets["batch_size"].value = 4
    assert "this toy function takes at most 2" in ex._status.value
    assert ex.params["batch_size"] == 1 and ex.control_widgets["batch_size"].value == 1


@pytest.mark.parametrize(("stops", "match"), [([], "non-empty list"), ([0, 2], "positive ints")])
def test_batch_size_explorer_argument_errors(stops, match):
    with pytest.raises(ValueError, match=match):
        BatchSizeExplorer(row_sums, make_batch, stops)


# ------------------------------------------------------------------ controls
def test_every_control_measures_on_release():
    factories = {
        "batch": (controls.stops_slider([1, 2, 4], "batch size"), 2),
        "budget": (controls.stops_slider([2**10, 2**20], "budget", label=bl.format_bytes), 2**20),
    }
    for factory, value in factories.values():
        w = factory(value)
        assert w.value == value
        assert w.continuous_update is False


def test_status_says_busy_while_measuring_then_the_result():
    seen: list[tuple[str, str]] = []
    double = jax.jit(lambda x: x * 2)
    ex = Explorer(lambda n: float(double(jnp.ones(n)).sum()), {"n": 3}, title="live")
    _ = ex.widget
    original = ex._set_status

    def spy(text, *, state, params):
        seen.append((state, text))
        original(text, state=state, params=params)

    ex._set_status = spy
    ex.update(n=7)
    assert [s for s, _ in seen] == ["busy", "done"]
    assert seen[0][1].startswith("compiling and measuring n=7")
    ex.update(n=3)
    seen.clear()
    ex.update(n=7)  # a revisit measures nothing and says so
    assert [s for s, _ in seen] == ["done"] and "from cache" in ex.status_text


def test_a_preview_is_shown_while_a_new_setting_is_measured_and_only_then():
    shown = []

    def compute(n):
        shown.append(ex.status_text)  # what the learner sees while the work runs
        if n < 0:
            raise ValueError("`n` must be >= 0")
        return n * n

    ex = Explorer(
        compute,
        {"n": 1},
        preview=lambda n: {"plan": f"{n} rows"},
    )
    assert ex.update(n=3) == 9
    assert "{'plan': '3 rows'}" in shown[-1] and ex.pending is None
    assert ex.last_first_answer_seconds <= ex.last_update_seconds
    ex.update(n=3)  # a revisit has nothing to preview: its answer is the cached one
    assert len(shown) == 1 and ex.last_first_answer_seconds == ex.last_update_seconds
    with pytest.raises(ValueError):
        ex.update(n=-1)
    assert ex.pending is None and ex.result == 9  # a failed setting leaves no plan behind


def test_budget_explorer_starts_from_known_searches_without_compiling_them_again():
    from batchlab.widgets import BudgetExplorer

    item = jax.ShapeDtypeStruct((64,), jnp.float32)

    def f(x):
        return jnp.outer(x, x) @ x

    budget = 2**17
    v = bl.max_batch_size(f, item, budget_bytes=budget)
    c = bl.max_batch_size(f, item, budget_bytes=budget, strategy="chunked", chunk_size=8)
    with bl.count_compiles() as warm:
        ex = BudgetExplorer(f, item, [budget, 2**18], chunk_size=8, budget=budget, known=[v, c])
    with bl.count_compiles() as cold:
        fresh = BudgetExplorer(f, item, [budget, 2**18], chunk_size=8, budget=budget)
    assert cold.count > 0 and warm.count == 0, (cold.count, warm.count)
    for name, r in (("vmap", v), ("chunked", c)):
        assert int(ex.result[name]) == int(fresh.result[name]) == int(r)
