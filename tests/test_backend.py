"""BackendFacts.padded_bytes against every layout read on a TPU v5e (jax 0.10.2).

The rows are read from the stored probe output (benchmarks/device_sections.py, section "9c
layouts sweep"): for each float32 shape, the compiled plan's output bytes and the live bytes of a
device_put array; the model must give both, exactly.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from batchlab._util.backend import FACTS

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks/results/device_sections_c-tpu.txt"
ROW = re.compile(r"\(([\d, ]+)\): plan (\d+) live (\d+) plain (\d+)")


def tpu_rows() -> list[tuple[tuple[int, ...], int, int]]:
    """(shape, plan bytes, live bytes) of each shape in the 9c sweep."""
    text = RESULTS.read_text()
    sweep = text[: text.index("[9c layouts sweep]")].rsplit("\n\n", 1)[-1]
    return [
        (tuple(int(n) for n in shape.split(",") if n.strip()), int(plan), int(live))
        for shape, plan, live, _ in ROW.findall(sweep)
    ]


def test_the_sweep_is_read_whole():
    shapes = [shape for shape, _, _ in tpu_rows()]
    sizes = (8, 100, 128, 1000, 1024, 4096)
    assert shapes == [s for b in sizes for s in ((b, 3), (3, b), (b, 128), (b,))]


@pytest.mark.parametrize(("shape", "plan", "live"), tpu_rows(), ids=str)
def test_padded_bytes_is_what_a_tpu_v5e_planned_and_held(shape, plan, live):
    assert FACTS["tpu"].padded_bytes(shape) == plan == live


@pytest.mark.parametrize(
    ("shape", "planned"),
    [
        ((64,), 512),  # 00's output, float32[64]
        ((32, 64), 16_384),  # 06's argument and output
        ((64, 256), 65_536),  # 00's arguments: these three planned 328,704 B together
        ((256, 256), 262_144),
        ((256,), 1_024),
    ],
)
def test_padded_bytes_is_what_the_stored_tpu_notebooks_planned(shape, planned):
    assert FACTS["tpu"].padded_bytes(shape) == planned


def test_padded_bytes_is_the_plain_bytes_without_tiles_or_for_other_widths():
    for shape in [(), (0,), (5,), (1000, 3), (3, 1000), (2, 7, 5)]:
        plain = int(np.prod(shape)) * 4
        assert FACTS["cpu"].padded_bytes(shape) == FACTS["gpu"].padded_bytes(shape) == plain
    assert FACTS["tpu"].padded_bytes((1000, 3), np.int16) == 6_000  # not modelled: plain
    assert FACTS["tpu"].padded_bytes((0, 3)) == FACTS["tpu"].padded_bytes((0,)) == 0


def test_padded_bytes_counts_the_major_dimensions_once_per_tile_row():
    tpu = FACTS["tpu"]
    assert tpu.padded_bytes((5, 1000, 3)) == 5 * tpu.padded_bytes((1000, 3))
