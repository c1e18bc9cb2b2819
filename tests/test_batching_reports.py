"""What the batching results show: the axes table, the host plan, the comparison's plot.

Written from a mutation-testing sample of batching (benchmarks/results/mutants.md): each
test reads a figure or a text a learner sees, which no other test read.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import batchlab as bl
from batchlab._util.format import format_bytes
from batchlab.batching.comparison import SOURCES, StrategyResult


def test_the_axes_table_says_which_argument_is_mapped_and_which_is_shared():
    e = bl.explain_axes(lambda x, w: x @ w, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=(0, None))
    (_, ins, _), (_, outs, _) = e._tables()
    assert [row[2] for row in ins] == ["axis 0", "not mapped (shared)"]
    assert [row[3] for row in ins] == ["5", "-"]
    assert [row[2] for row in outs] == ["axis 0"]
    both = bl.explain_axes(lambda x, w: (x @ w, w.sum()), jnp.ones((5, 3)), jnp.ones((3, 2)),
                           in_axes=(0, None), out_axes=(0, None))  # fmt: skip
    assert [row[2] for row in both._tables()[1][1]] == ["axis 0", "none (not batched)"]
    assert "not mapped (shared)" in repr(e) and "axis 0" in repr(e)


def test_the_host_plan_names_every_part_of_the_call():
    f = bl.batch(lambda x, w: x @ w, strategy="host", chunk_size=4, in_axes=(0, None))
    plan = f.plan(jnp.ones((10, 3)), jnp.ones((3, 2)))
    labels = [k for k, _ in plan._rows()]
    assert labels[0] == "chunks" and "copy of the inputs, in chunks" in labels
    assert labels[-1] == "planned for the call (+ arguments + output)"
    assert "2 full of 4 + 1 remainder of 2" in repr(plan)


def test_a_dispatched_plan_has_no_xla_peak_and_plans_the_largest_step():
    # 10 items in chunks of 4: two step programs (4 and the remainder 2) and one call
    c = bl.compare(lambda x: jnp.tanh(x) @ x.T, jnp.ones((10, 64)), strategies=("vmap", "host"),
                   chunk_size=4, max_time=0.01)  # fmt: skip
    host, vmap = c.get("host").measurement.memory, c.get("vmap").measurement.memory
    assert host.xla_peak_bytes is None and vmap.xla_peak_bytes is not None
    assert host.flops is None and host.planned_from.startswith("inputs + output + ")
    loop = bl.compare(lambda x: x * 2, jnp.ones((6, 8)), strategies=("vmap", "loop"),
                      max_time=0.01).get("loop")  # fmt: skip
    assert loop.measurement.memory.xla_peak_bytes is None and loop.dispatches > 6


def test_the_comparison_plot_draws_each_strategys_figures_and_spread():
    xs = jnp.ones((16, 8))
    one = bl.compare(lambda x: x * 2, xs, strategies=("vmap", "chunked"), max_time=0.01)
    ax_t, ax_m = one.plot().axes
    assert ax_t.get_xlabel() == "run time per batch of 16 items"
    assert ax_m.get_xlabel() == "planned temp memory"
    spread = [c for c in ax_t.containers if type(c).__name__ == "ErrorbarContainer"]
    assert len(spread) == 1 and spread[0].has_xerr  # min..max of the samples
    sweep = bl.compare(lambda x: x * 2, xs, strategies=("vmap", "chunked"), batch_sizes=(4, 16),
                       max_time=0.01)  # fmt: skip
    ax_t, ax_m = sweep.plot().axes
    assert [t.get_text() for t in ax_t.get_legend().get_texts()] == ["vmap", "chunked"]
    for line in ax_m.get_lines():
        if line.get_label() in ("vmap", "chunked"):
            got = list(line.get_ydata())
            want = [r.temp_bytes for r in sweep.results if r.strategy == line.get_label()]
            assert got == want and list(line.get_xdata()) == [4, 16]


def test_the_axes_text_is_every_row_of_both_tables():
    e = bl.explain_axes(lambda x, w: (x @ w, w.sum()), jnp.ones((5, 3)), jnp.ones((3, 2)),
                        in_axes=(0, None), out_axes=(1, None))  # fmt: skip
    assert repr(e).splitlines() == [
        "inputs: batch of 5 items, in_axes=(0, None) (abstract evaluation (jax.eval_shape): "
        "shapes only, nothing ran):",
        "argument  shape   mapped               batch  per-item shape fn sees",
        "--------  ------  -------------------  -----  ----------------------",
        "x         (5, 3)  axis 0               5      (3,)",
        "w         (3, 2)  not mapped (shared)  -      (3, 2)",
        "",
        "outputs: out_axes=(1, None):",
        "output  per-item shape  batch axis          batched shape",
        "------  --------------  ------------------  -------------",
        "out[0]  (2,)            axis 1              (2, 5)",
        "out[1]  ()              none (not batched)  ()",
    ]
    assert "<caption" in e._repr_html_() and "not mapped (shared)" in e._repr_html_()


def _host_plan(items, chunk, dispatches, temps):
    """A host plan with made-up step bytes (``temps``): its figures are worked out by hand."""
    f = bl.batch(lambda x, w: x @ w, strategy="host", chunk_size=4, in_axes=(0, None))
    real = f.plan(jnp.ones((10, 3)), jnp.ones((3, 2)))
    steps = tuple(dataclasses.replace(real.steps[0], temp_bytes=t) for t in temps)
    return dataclasses.replace(real, items=items, chunk=chunk, dispatches=dispatches, steps=steps,
                               input_copy_bytes=100, chunk_output_bytes=60, argument_bytes=1000)  # fmt: skip


def test_the_host_plan_adds_its_bytes_the_way_its_rows_say():
    # 10 items in chunks of 4: the largest step temp (300) + the input copy (100) + the chunk
    # outputs (60, held until concatenated) beyond vmap; the call adds arguments and the output
    plan = _host_plan(10, 4, 3, (300, 200))
    assert repr(plan) == (
        "HostPlan(compiled memory analysis (XLA) per step: chunks=10 items: 2 full of 4 + "
        "1 remainder of 2, programs compiled=2, dispatches per call=3, planned temp per step=300 B, "
        "copy of the inputs, in chunks=100 B, chunk outputs, until concatenated=60 B, beyond vmap's "
        "plan (temp + copies + chunk outputs)=460 B, planned for the call (+ arguments + output)="
        "1.48 KiB)"
    )
    assert plan.extra_bytes == 460 and plan.planned_bytes == 1000 + 60 + 460
    # one chunk, one dispatch: its output is the call's output, nothing is held to concatenate
    one = _host_plan(4, 4, 1, (300,))
    assert (one.full_chunks, one.remainder, one.programs) == (1, 0, 1)
    assert (
        one.extra_bytes == 400
        and dict(one._rows())["chunks"] == "4 items: 1 full of 4 + no remainder"
    )
    assert "compiled memory analysis (XLA) per step" in one._repr_html_()


def test_the_comparison_table_reads_each_result():
    c = bl.compare(
        lambda x: x * 2, jnp.ones((16, 4)), strategies=("vmap", "chunked"), max_time=0.01
    )
    vmap, chunked = c.results
    m = dataclasses.replace(vmap.measurement, times=(2e-3, 1e-3, 3e-3), trace_lower_seconds=0.25,
                            compile_seconds=0.5, compiles=1,
                            memory=dataclasses.replace(vmap.measurement.memory, temp_bytes=2048))  # fmt: skip
    fixed = dataclasses.replace(c, results=(
        StrategyResult("loop", 16, None, None, error="MemoryError: out of memory"),
        dataclasses.replace(vmap, measurement=m, agrees=True, dispatches=1),
        dataclasses.replace(chunked, measurement=m, agrees=False, dispatches=8),
        dataclasses.replace(chunked, items=8, measurement=m, agrees=None, dispatches=8),
    ))  # fmt: skip
    planned = format_bytes(m.memory.planned_bytes)
    assert fixed._rows() == [
        ("loop (eager)", 16, *["-"] * 7, "MemoryError: out of memory"),
        ("vmap", 16, "2.00 KiB", planned, 1, 1, "yes", "2.00 ms", "750 ms", "8.00 k items/s"),
        ("chunked (chunk 2)", 16, "2.00 KiB", planned, 1, 8, "NO", "2.00 ms", "750 ms",
         "8.00 k items/s"),
        ("chunked (chunk 2)", 8, "2.00 KiB", planned, 1, 8, "-", "2.00 ms", "750 ms",
         "4.00 k items/s"),
    ]  # fmt: skip
    assert repr(fixed).startswith(f"Comparison: {c.name}: {SOURCES}")
    assert fixed.get("chunked").dispatches == 8 and fixed.get("vmap", 16).agrees


def _outer(x):  # per item a (64, 64) intermediate: a chunk of 4 plans twice the temp of 2
    return (jnp.tanh(x)[:, None] * x[None, :]).sum(1)


def test_a_dispatched_call_is_planned_from_its_largest_step_and_what_it_holds_beside():
    xs = jnp.ones((10, 64))
    c = bl.compare(_outer, xs, strategies=("vmap", "host", "loop"), chunk_size=4, max_time=0.01)
    out = _outer(xs[0]).nbytes * 10
    host = c.get("host").measurement.memory
    plan = bl.batch(_outer, strategy="host", chunk_size=4).plan(xs)
    temps = [s.temp_bytes for s in plan.steps]
    assert len(temps) == 2 and max(temps) > min(temps) > 0  # the full chunks' and the remainder's
    assert plan.extra_bytes == max(temps) + plan.input_copy_bytes + plan.chunk_output_bytes
    assert (host.argument_bytes, host.output_bytes, host.temp_bytes) == (
        xs.nbytes, out, plan.extra_bytes)  # fmt: skip
    assert host.planned_bytes == xs.nbytes + out + plan.extra_bytes and host.alias_bytes == 0
    assert host.planned_from == (
        "inputs + output + the largest step's temp + the chunks' input copy + chunk outputs "
        "until concatenated"
    )
    assert (host.name, host.backend, c.get("host").dispatches) == ("dispatched", "cpu", 5)
    # the loop: one item's program, its outputs held until stacked
    loop, step = c.get("loop"), bl.memory_estimate(_outer, xs[0])
    m = loop.measurement.memory
    assert (m.argument_bytes, m.output_bytes, m.temp_bytes) == (
        xs.nbytes,
        out,
        step.temp_bytes + out,
    )
    assert (
        m.planned_from
        == "inputs + output + the item program's temp + item outputs held for the stack"
    )
    assert m.planned_bytes == xs.nbytes + out + step.temp_bytes + out and m.flops is None
    # per item: a slice and the step; one stack; a batch axis other than 0 is moved first
    assert loop.dispatches == 10 * 2 + 1
    moved = bl.compare(_outer, xs.T, strategies=("vmap", "loop"), in_axes=1, max_time=0.01)
    assert moved.get("loop").dispatches == 1 + 10 * 2 + 1


def _twice(x):
    return x * 2


def test_agreement_with_vmap_is_read_per_leaf_shape_and_dtype_tolerance():
    xs = jnp.ones((16, 4))

    def agrees(manual, xs=xs):
        c = bl.compare(_twice, xs, strategies=("vmap",), manual=manual, max_time=0.01)
        return c.get("manual").agrees

    assert agrees(lambda x: x + x) is True
    assert agrees(lambda x: x * 2 + 1e-3) is False  # float32: off by 1e-3 is another result
    half = jnp.ones((16, 4), jnp.bfloat16)
    # bfloat16: one step of its 8-bit mantissa at 2.0 (2**-6) is within 1e-2 (not 1e-4)
    assert agrees(lambda x: x * 2 + jnp.bfloat16(2**-6), half) is True
    assert agrees(lambda x: x * 2 + jnp.bfloat16(0.05), half) is False
    assert agrees(lambda x: (x * 2)[None]) is False  # (1, 16, 4): broadcastable, not the same
    assert agrees(lambda x: (x * 2, x)) is False  # one more output


def test_each_strategys_measurement_names_the_function_and_its_first_call():
    c = bl.compare(_twice, jnp.ones((16, 4)), strategies=("vmap", "chunked", "host"), max_time=0.01)
    for r in c.results:
        m = r.measurement
        assert (m.name, m.number, type(m.live).__name__) == ("_twice", 1, "LiveMemory")
        assert m.compile_seconds > 0 and 0 < m.first_call_seconds < 60 and m.runs == len(m.times)
        assert m.memory.name == ("dispatched" if r.strategy == "host" else "_twice")
        assert m.compiles >= 1 and m.source == SOURCES and m.notes[-1].startswith("times: one")
        ahead = r.strategy != "host"  # compiled ahead of time: trace and compile timed apart
        assert (m.trace_lower_seconds > 0) == ahead and (len(m.notes) == 1) == ahead
    host = c.get("host").measurement  # compiles inside its first call: counted there
    assert host.compile_seconds <= host.first_call_seconds and host.trace_lower_seconds == 0.0
    assert host.notes[0].startswith("compile_seconds = first call minus the steady median")


def test_host_chunks_of_numpy_inputs_along_any_axis_equal_vmap():
    x = np.arange(2 * 11 * 3, dtype=np.float32).reshape(2, 11, 3)
    w = np.arange(3, dtype=np.float32)

    def f(x, w):
        return x @ w

    want = jax.vmap(f, in_axes=(1, None))(x, w)
    for chunk in (1, 4, 11, 12):
        got = bl.batch(f, strategy="host", chunk_size=chunk, in_axes=(1, None))(x, w)
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match=r"^strategy='host' dispatches one compiled program per "
                       r"chunk from Python, so it cannot run inside jax.jit, grad, vmap or scan "
                       r"\(it got a tracer\): call it outside, or use strategy='chunked'"):  # fmt: skip
        jax.jit(bl.batch(f, strategy="host", chunk_size=4, in_axes=(1, None)))(x, w)


def test_the_host_plan_of_two_chunks_on_device_numpy_and_a_moved_axis():
    x = jnp.ones((8, 64))
    plan = bl.batch(_outer, strategy="host", chunk_size=4).plan(x)
    # one slicing program, two chunks, one concatenation; the input copied once, in chunks
    assert (plan.dispatches, plan.input_copy_bytes, plan.argument_bytes) == (4, x.nbytes, x.nbytes)
    assert plan.chunk_output_bytes == _outer(x).nbytes and plan.steps[0].name == "host step"
    # numpy inputs are sliced on the host: nothing to slice on the device, nothing copied there
    host = bl.batch(_outer, strategy="host", chunk_size=4).plan(np.ones((8, 64), np.float32))
    assert (host.dispatches, host.input_copy_bytes) == (3, 0)
    # 10 items: the full chunks' step first, then the remainder's; along axis 1 the same steps
    ten = bl.batch(_outer, strategy="host", chunk_size=4).plan(jnp.ones((10, 64)))
    moved = bl.batch(_outer, strategy="host", chunk_size=4, in_axes=1).plan(jnp.ones((64, 10)))
    assert [s.argument_bytes for s in ten.steps] == [4 * 64 * 4, 2 * 64 * 4]
    assert [s.argument_bytes for s in moved.steps] == [4 * 64 * 4, 2 * 64 * 4]


def test_a_strategy_that_fails_keeps_its_error_and_the_others_figures():
    def broken(x):
        raise ValueError("no hand-batched version yet\n(details)")

    c = bl.compare(_twice, jnp.ones((8, 4)), strategies=("vmap", "chunked", "manual"),
                   manual=broken, max_time=0.01)  # fmt: skip
    assert c.name == "_twice" and [r.label for r in c.results] == [
        "vmap", "chunked (chunk 1)", "manual"]  # fmt: skip
    bad = c.get("manual")
    assert (bad.strategy, bad.items, bad.chunk, bad.measurement) == ("manual", 8, None, None)
    assert bad.error == "ValueError: no hand-batched version yet"
    assert c.get("vmap").measurement is not None and c.get("chunked").agrees


def test_a_sweep_takes_the_first_items_along_the_mapped_axis():
    xs = jnp.arange(64.0).reshape(4, 16)  # 16 items along axis 1
    c = bl.compare(_twice, xs, strategies=("vmap", "chunked"), in_axes=1, batch_sizes=(4, 16),
                   max_time=0.01)  # fmt: skip
    for r in c.results:
        assert r.agrees and r.measurement.memory.argument_bytes == 4 * r.items * 4
        assert len(r.measurement.times) <= 15  # 15 interleaved rounds at most
