"""What the batching results show: the axes table, the host plan, the comparison's plot.

Written from a mutation-testing sample of batching (benchmarks/results/mutants.md): each
test reads a figure or a text a learner sees, which no other test read.
"""

import jax.numpy as jnp

import batchlab as bl


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
