"""Human units, the size config and the environment report."""

from __future__ import annotations

import subprocess
import sys

import pytest

import batchlab as bl
from batchlab._util.format import format_bytes, format_count, format_seconds, html_table, text_table


@pytest.mark.parametrize(
    "n,text",
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.00 KiB"),
        (1536, "1.50 KiB"),
        (2**20, "1.00 MiB"),
        (2**20 - 1, "1.00 MiB"),
        (3 * 2**30, "3.00 GiB"),
        (-2048, "-2.00 KiB"),
        (None, "n/a"),
    ],
)
def test_format_bytes(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize(
    "t,text",
    [
        (1.0, "1.00 s"),
        (0.0123, "12.3 ms"),
        (2.5e-5, "25.0 µs"),
        (4e-9, "4.00 ns"),
        (2.5e-7, "250 ns"),
        (0, "0.00 ns"),
        (123.4, "123 s"),
        (None, "n/a"),
    ],
)
def test_format_seconds(t, text):
    assert format_seconds(t) == text


def test_format_count_and_tables():
    assert format_count(2.5e9) == "2.50 G"
    assert (format_count(1234567), format_count(12)) == ("1.23 M", "12")
    assert format_count(None) == "n/a"
    assert "<td" in html_table([("a", "<b>")], header=("k", "v"))
    assert "&lt;b&gt;" in html_table([("a", "<b>")])
    assert text_table([("a", 1)], header=("k", "v")).splitlines()[1].startswith("-")


def test_sizes_profiles():
    cpu = bl.sizes("tour", profile="cpu")
    gpu = bl.sizes("tour", profile="gpu")
    tpu = bl.sizes("tour", profile="tpu")
    assert cpu.profile == "cpu" and gpu.profile == "gpu" and tpu.profile == "tpu"
    assert max(gpu.batch_sizes) > max(cpu.batch_sizes)
    # the TPU takes the CPU's sizes unless config.TPU overrides a topic
    assert tpu._replace(profile="cpu") == cpu
    with pytest.raises(ValueError, match="`topic` must be one of"):
        bl.sizes("nope")
    with pytest.raises(
        ValueError,
        match=r"`profile` \(or BATCHLAB_PROFILE\) must be one of \['cpu', 'tpu', 'gpu'\], got 'tpu9'",
    ):
        bl.sizes("tour", profile="tpu9")
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        _ = cpu.nothing
    with pytest.raises(AttributeError, match=r"can't set attribute|has no setter"):
        cpu.features = 3


def test_sizes_follow_env(monkeypatch):
    monkeypatch.setenv("BATCHLAB_PROFILE", "gpu")
    assert bl.sizes("tour").profile == "gpu"
    monkeypatch.setenv("BATCHLAB_PROFILE", "huge")
    with pytest.raises(ValueError, match=r"BATCHLAB_PROFILE\) must be one of .*got 'huge'"):
        bl.sizes("tour")


def test_environment_report(monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    env = bl.environment()
    settings = dict(env.allocator_settings)
    assert settings["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert settings["XLA_PYTHON_CLIENT_ALLOCATOR"].startswith("unset")
    figures = {fig for fig, _, _ in env.memory_sources}
    assert {
        "runtime",
        "planned memory",
        "live device memory",
        "live arrays",
        "host memory",
    } <= figures
    assert "backend" in str(env) and "<table" in env._repr_html_()


def test_python_m_batchlab_prints_environment():
    out = subprocess.run(
        [sys.executable, "-m", "batchlab"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "Memory and runtime figures on this backend" in out.stdout
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" in out.stdout
