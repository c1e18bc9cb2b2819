"""Shared by the benchmark scripts: print a line and keep it in benchmarks/results/."""

from __future__ import annotations

import datetime
import platform
from pathlib import Path

import jax

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
