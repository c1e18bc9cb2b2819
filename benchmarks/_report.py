"""Shared by the benchmark scripts: print a line and keep it in benchmarks/results/."""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

import jax
import numpy as np

import batchlab as bl
from batchlab.claims.rules import median_interval

RESULTS = Path(__file__).resolve().parent / "results"


class Report:
    """Collects printed lines and writes them to ``benchmarks/results/<name>.txt``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self.line(
            f"# {name} -- {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
            f"jax {jax.__version__}, backend {jax.default_backend()}, {platform.machine()}"
        )

    def line(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def save(self) -> Path:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{self.name}.txt"
        path.write_text("\n".join(self.lines) + "\n")
        return path


def timed(candidates: dict, *, rounds: int = 6, passes: int = 1, one_call: bool = False) -> dict:
    """``{label: Samples}``: the candidates round-robin (``bl.measuring.interleaved``), paired.

    ``one_call``: one call per sample (a call that is long already: a whole pass).
    """
    return bl.measuring.interleaved(
        candidates,
        rounds=rounds,
        passes=passes,
        max_seconds=600.0,
        **({"min_sample_time": 1e-9} if one_call else {}),
    )


def verdict(rule, samples: dict) -> str:
    """``holds: a / b = ... (n paired rounds, median ...)``: a ratio rule decided on paired rounds."""
    d = rule(samples)
    return f"{d.outcome}: {d.deciding}"


def ratio(samples: dict, numerator: str, denominator: str) -> str:
    """``2.31x (1.90x..2.75x, median of 6 paired rounds)``: per-round ratios of paired samples."""
    a, b = samples[numerator].values, samples[denominator].values
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    interval = median_interval(ratios)
    if interval is None:
        return (
            f"{float(np.median(ratios)):.2f}x (median of {len(ratios)} paired rounds, no interval)"
        )
    est, lo, hi = interval
    return f"{est:.2f}x ({lo:.2f}x..{hi:.2f}x, median of {len(ratios)} paired rounds)"


def load() -> str:
    """``load average 1.4 (1 min) on 2 cores``: what the figures beside it were measured under."""
    return f"load average {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores"
