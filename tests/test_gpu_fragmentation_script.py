"""benchmarks/gpu_fragmentation.py stays runnable: its CPU-testable parts, at tiny sizes (GPU part unrun)."""

from __future__ import annotations

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location(
        "gpu_fragmentation", os.path.join(HERE, "..", "benchmarks", "gpu_fragmentation.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("workload", ["per-item", "batched", "training", "training-donated"])
def test_workloads_run_and_report_no_stats_on_cpu(script, workload):
    out = script.child(workload, script.SMALL, profile=False)
    assert out["stats"] == {}  # memory_stats() is None on CPU: absent, never faked


def test_profiled_child_says_when_there_are_no_bfc_events(script):
    out = script.child("batched", script.SMALL, profile=True)
    assert "no BFC allocator events" in out["replay"]


def test_model_column(script):
    peak, need = script.model_peak("batched", script.SMALL)
    assert peak > 0 and need is not None and need >= 1.0
    _, need_platform = script.model_peak("batched", script.SMALL, "platform")
    assert need_platform == 1.0


def test_main_on_cpu_exits_cleanly(script, capsys):
    assert script.main([]) == 0
    assert "needs a GPU" in capsys.readouterr().out
    with pytest.raises(ValueError, match=r"`workload` must be one of"):
        script.run_workload("nope", script.SMALL)
