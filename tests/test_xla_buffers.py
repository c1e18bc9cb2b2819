"""XLA's buffer assignment, read from the reports XLA writes for a real compiled function."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from matplotlib.colors import to_hex

import batchlab
from batchlab import allocator as A
from batchlab.allocator import events_from_buffers
from batchlab.allocator.xla_workloads import cpu_buffer_assignment
from batchlab.measuring.buffers import parse_op_names, parse_reports

S = jax.ShapeDtypeStruct
FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"


def layers(x, w):
    for _ in range(3):
        x = jnp.sort(jnp.tanh(x @ w), axis=-1)
    return x.sum(0)


@pytest.fixture(scope="module")
def assignment():
    return batchlab.buffer_assignment(layers, S((64, 32), jnp.float32), S((32, 32), jnp.float32))


def test_parameters_and_sequence(assignment):
    params = assignment.allocations_of("parameter")
    assert sorted(a.size for a in params) == [32 * 32 * 4, 64 * 32 * 4]
    assert len(assignment.sequence) > 3
    for v in (v for a in assignment.allocations for v in a.live):
        assert 0 <= v.start <= v.end <= len(assignment.sequence)


def test_xla_reuses_temp_memory(assignment):
    assert any(len(a.live) > 1 for a in assignment.allocations)  # values sharing memory
    assert assignment.temp_value_bytes > assignment.temp_bytes > 0
    assert (
        assignment.temp_bytes
        <= batchlab.memory_estimate(
            layers, S((64, 32), jnp.float32), S((32, 32), jnp.float32)
        ).temp_bytes
    )


def test_values_sharing_bytes_are_never_live_together(assignment):
    for a in assignment.allocations:
        values = [v for v in a.values if v.start is not None]
        for i, p in enumerate(values):
            for q in values[i + 1 :]:
                if p.offset < q.offset + q.size and q.offset < p.offset + p.size:
                    assert p.end <= q.start or q.end <= p.start, (p, q)


def test_trace_replays_through_the_simulation(assignment):
    trace = events_from_buffers(assignment)
    assert trace.n_allocs == len(
        [
            v
            for a in assignment.allocations_of("parameter", "output", "temp")
            for v in a.values
            if v.start is not None
        ]
    )
    tl = A.replay(trace, A.BFCAllocator(1 << 22))
    assert tl.peak_in_use == trace.peak_live_bytes and not tl.failures
    assert "XLA" in trace.source and "simulation" in trace.source


def test_donated_parameter_is_live_out():
    ba = batchlab.buffer_assignment(
        lambda x: x.at[0].set(1.0), S((256,), jnp.float32), donate_argnums=0
    )
    (param,) = ba.allocations_of("parameter")
    assert param.live_out and param.size == 1024


def test_reprs_and_plot(assignment):
    ba = batchlab.buffer_assignment(lambda x: x * 2, jnp.ones(8))
    assert ba.allocations_of("parameter")[0].size == 32
    assert "BufferAssignment: " in repr(assignment) and "<table" in assignment._repr_html_()
    assert len(assignment.plot().axes) == 1


def test_plot_legend_shows_every_colour_and_thin_bands_say_so(assignment):
    (ax,) = assignment.plot().axes
    shown = {to_hex(h.get_facecolor()) for h in ax.get_legend().legend_handles}
    assert {to_hex(p.get_facecolor()) for p in ax.patches} <= shown  # every box's colour
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"argument x", "argument w", "sort", "tanh"} <= set(names), names
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "output 128 B\n(drawn taller)" in labels, labels  # f32[32] under 1/5 of 16 KiB
    donated = batchlab.buffer_assignment(
        lambda x: x.at[0].set(1.0), S((256,), jnp.float32), donate_argnums=0
    )
    texts = [t.get_text() for t in donated.plot().axes[0].get_legend().get_texts()]
    assert texts[1].endswith("(the output)"), texts  # the update's result, in x's buffer


def test_parse_hand_written_report():
    buffers = """BufferAssignment:
allocation 0: size 64, parameter 0, shape |f32[16]| at ShapeIndex {}:
 value: <3 x.1 @0> (size=64,offset=0): f32[16]{0}
allocation 1: size 128, preallocated-temp:
 value: <4 a @0> (size=64,offset=0): f32[16]{0}
 value: <5 b @0> (size=64,offset=64): f32[16]{0}
 value: <6 c @0> (size=64,offset=0): f32[16]{0}
"""
    ranges = """HloLiveRange (max 4):
  InstructionSequence:
    0:x.1
    1:a
    2:b
    3:c
  BufferLiveRange:
    x.1{}:0-4
    a{}:1-2
    b{}:2-3
    c{}:3-4
"""
    allocations, sequence = parse_reports(buffers, ranges)
    assert sequence == ["x.1", "a", "b", "c"]
    assert [(a.index, a.size, a.kind) for a in allocations] == [
        (0, 64, "parameter"),
        (1, 128, "temp"),
    ]
    assert [(v.name, v.offset, v.start, v.end) for v in allocations[1].values] == [
        ("a", 0, 1, 2),
        ("b", 64, 2, 3),
        ("c", 0, 3, 4),
    ]


def test_memory_spaces_are_kept_and_temp_bytes_is_main_memory():
    # header lines as XLA:TPU wrote them (TPU v5e, jax 0.10.2): one temp allocation per color
    buffers = """allocation 4: size 512, output shape is |f32[64]|, maybe-live-out:
 value: <9 fusion.1 @0> (size=512,offset=0): f32[64]{0}
allocation 7: size 4, color 2, preallocated-temp:
 value: <5 copy-start{2} @0> (size=4,offset=0): u32[]{:S(2)}
allocation 8: size 512, preallocated-temp:
 value: <6 copy-start{} @0> (size=512,offset=0): (f32[256,256]{1,0:T(8,128)S(1)})
allocation 9: size 262144, color 1, preallocated-temp:
 value: <7 copy-start{0} @0> (size=262144,offset=0): f32[256,256]{1,0:T(8,128)S(1)}
"""
    allocations, _ = parse_reports(buffers, "")
    assert [(a.index, a.kind, a.color) for a in allocations] == [
        (4, "output", 0),
        (7, "temp", 2),
        (8, "temp", 0),
        (9, "temp", 1),
    ]
    ba = batchlab.measuring.BufferAssignment("tpu", tuple(allocations), (), "tpu")
    assert len(ba.allocations_of("temp")) == 3
    assert ba.temp_by_color() == {2: 4, 0: 512, 1: 262144}
    assert ba.temp_bytes == 512 and ba.launch_allocations()[-1] == ("temp", "temp", 512)
    assert "other memory spaces: 256.00 KiB in color 1, 4 B in color 2" in repr(ba)


def test_errors(monkeypatch):
    with pytest.raises(TypeError, match=r"must be a function"):
        batchlab.buffer_assignment(3, jnp.ones(3))
    with pytest.raises(TypeError, match=r"JAX can only trace"):
        batchlab.buffer_assignment(lambda s: s, "text")
    with pytest.raises(ValueError, match=r"already jax.jit-wrapped; pass the plain function"):
        batchlab.buffer_assignment(jax.jit(lambda x: x), jnp.ones(3))
    monkeypatch.setattr("batchlab.measuring.buffers.Path.glob", lambda self, pattern: iter([]))
    with pytest.raises(RuntimeError, match=r"no .*buffer-assignment"):
        batchlab.buffer_assignment(lambda x: x + 1, jnp.ones(3))


# ---------------------------------------------------------------- issue 12 additions
def test_events_from_buffers_allocates_before_it_frees_so_replay_needs_xlas_plan(assignment):
    trace = events_from_buffers(assignment, kinds=("temp",))
    # at a step where one value dies and the next is born, both are live: the replay
    # peak is never below XLA's own heap peak for the same values
    assert trace.peak_live_bytes == _heap_peak(assignment) >= assignment.temp_bytes
    for i, e in enumerate(trace.events[1:], 1):
        prev = trace.events[i - 1]
        assert (prev.time, prev.kind != "alloc") <= (e.time, e.kind != "alloc")


def _heap_peak(ba) -> int:
    """Most bytes of temp values live at one step of XLA's order (XLA's live ranges)."""
    values = [v for a in ba.allocations_of("temp") for v in a.live]
    steps = {t for v in values for t in (v.start, v.end)}
    return max((sum(v.size for v in values if v.start <= t <= v.end) for t in steps), default=0)


def test_hand_written_report_heap_peak_and_trace():
    buffers = """allocation 0: size 128, preallocated-temp:
 value: <4 a @0> (size=64,offset=0): f32[16]{0}
 value: <5 b @0> (size=64,offset=64): f32[16]{0}
 value: <6 c @0> (size=64,offset=0): f32[16]{0}
"""
    ranges = """  InstructionSequence:
    0:a
    1:b
    2:c
  BufferLiveRange:
    a{}:0-1
    b{}:1-2
    c{}:2-2
"""
    allocations, sequence = parse_reports(buffers, ranges)
    ba = batchlab.measuring.BufferAssignment("hand", tuple(allocations), tuple(sequence), "cpu")
    assert _heap_peak(ba) == 128  # a and b at step 1, b and c at step 2
    events = [(e.time, e.kind, e.id) for e in events_from_buffers(ba).events]
    assert events[:3] == [(0, "alloc", "a"), (1, "alloc", "b"), (1, "free", "a")]
    assert events_from_buffers(ba).peak_live_bytes == 128
    assert ba.launch_allocations() == [("temp", "temp", 128)]


def test_op_names_label_fusions_with_their_jaxpr_op(assignment):
    labels = [assignment.label(n) for n in assignment.sequence]
    assert any("(tanh)" in x for x in labels) and any("(sort)" in x for x in labels)
    assert parse_op_names('  ROOT %f.1 = f32[] add(%a, %b), metadata={op_name="jit(g)/add"}') == {
        "f.1": "add"
    }


def test_launch_allocations_are_outputs_and_one_temp(assignment):
    rows = assignment.launch_allocations()
    assert [k for _, k, _ in rows] == ["output", "temp"]
    assert rows[-1][2] == assignment.temp_bytes
    donated = batchlab.buffer_assignment(
        lambda x: x.at[0].set(1.0), S((256,), jnp.float32), donate_argnums=0
    )
    assert all(k != "output" or size < 1024 for _, k, size in donated.launch_allocations())


def test_compiler_options_reach_the_compilation():
    def four_sorts(x):
        sorted_ = [jnp.sort(x * (i + 1)) for i in range(4)]
        return sum(s.sum() for s in sorted_)

    spec = S((1 << 14,), jnp.float32)
    options = batchlab.allocator.xla_workloads.compiler_options()
    here = batchlab.buffer_assignment(four_sorts, spec, compiler_options=options)
    # an option XLA does not know is refused by the compilation: the options reach it
    with pytest.raises(Exception, match="no_such_option"):
        batchlab.buffer_assignment(four_sorts, spec, compiler_options={"xla_no_such_option": 1})
    assert here.temp_bytes > 0
    with pytest.raises(ValueError, match=r"pass the plain function"):
        batchlab.buffer_assignment(jax.jit(four_sorts), spec)


def test_fresh_process_prints_pass_through_and_a_printed_pickle_never_runs(tmp_path, capfd):
    """A protocol-0 pickle printed by fn (e.g. text of an untrusted file) must not run code."""
    import pickle

    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    evil = pickle.dumps(Exploit(), protocol=0).decode()
    assert "open" in evil  # really a pickle that would create the file when loaded

    def prints_pickle(x):
        import sys

        sys.stdout.write(evil)
        sys.stdout.flush()
        return x + 1

    cpu_buffer_assignment(prints_pickle, S((3,), jnp.float32), xla_flags=FLAG)
    assert not marker.exists()
    assert evil in capfd.readouterr().out  # shown to the user as text, never loaded


def test_fresh_process_without_a_result_is_reported(monkeypatch):
    from batchlab._util import child

    real_start = child.start

    def crashed_child(argv, env, **kw):  # the child dies before writing its result (e.g. killed)
        return real_start(["-c", "import sys; sys.exit(3)"], env, **kw)

    monkeypatch.setattr(child, "start", crashed_child)
    with pytest.raises(RuntimeError, match=r"the process died \(exit status 3"):
        cpu_buffer_assignment(lambda x: x * 2, S((3,), jnp.float32), xla_flags="--x")
