"""Checkpoint I/O per batch: the old full rewrite (n^2 bytes) against the append-only journal.

Before (batchlab <= this change), ``run_batches(..., checkpoint=...)`` rewrote one ``.npz``
holding every finished output after every batch: batch k writes k batches' bytes, so a run of
n batches writes about n^2 / 2 batches' worth. The journal appends each batch's record once
(plus a SHA-256 and an fsync), n batches' worth in all. Both are measured here side by side in
one process, on the same outputs: the old path written out here (``np.savez`` of the
cumulative arrays, fsync, rename) exactly as the old loop did, the new one by a real ``run_batches`` run (its
fn returns precomputed rows, so the figures are I/O, not compute). Bytes are counted from the
files' sizes; times are wall clock (time.perf_counter), fsync included in both.

Usage: .venv/bin/python benchmarks/checkpoint_io.py [--quick]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

import batchlab
from batchlab import format_bytes, format_seconds, text_table

sys.path.insert(0, os.path.dirname(__file__))
from _report import Report

ROW = 256  # float32 outputs per item: 1 KiB per item
BATCH = 16


def old_rewrite(outputs: np.ndarray, folder: str) -> tuple[int, float]:
    """The old loop: after each batch, save every finished output again (atomic rename)."""
    path, written, t0 = os.path.join(folder, "old.npz"), 0, time.perf_counter()
    for end in range(BATCH, len(outputs) + 1, BATCH):
        arrays = {"indices": np.arange(end), "out_0": outputs[:end]}
        tmp = path + ".tmp"  # the old loop's atomic write: np.savez to a temp file, fsync, rename
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        written += os.path.getsize(path)
    return written, time.perf_counter() - t0


def journal(outputs: np.ndarray, folder: str) -> tuple[int, float, bool]:
    """A real run_batches run with a checkpoint; fn returns the precomputed rows (pure I/O)."""
    path = os.path.join(folder, "new.ckpt")
    items = np.arange(len(outputs))
    t0 = time.perf_counter()
    r = batchlab.run_batches(
        lambda idx: outputs[np.asarray(idx)],
        items,
        batch_size=BATCH,
        batched=True,
        progress=False,
        checkpoint=path,
        run_name="bench",
    )
    seconds = time.perf_counter() - t0
    same = np.array_equal(r.outputs, outputs)
    return os.path.getsize(path), seconds, same  # append-only: the file is every byte written


def main() -> None:
    quick = "--quick" in sys.argv
    report = Report("checkpoint_io")
    counts = (16, 64) if quick else (16, 64, 256, 512)
    rows = []
    load_before = os.getloadavg()[0]
    for n_batches in counts:
        n = n_batches * BATCH
        outputs = np.random.default_rng(0).normal(size=(n, ROW)).astype(np.float32)
        with tempfile.TemporaryDirectory() as folder:
            old_bytes, old_s = old_rewrite(outputs, folder)
            new_bytes, new_s, same = journal(outputs, folder)
        assert same, "the journal's run must return the outputs bit for bit"
        rows.append(
            (
                n_batches,
                format_bytes(outputs.nbytes),
                format_bytes(old_bytes),
                format_bytes(new_bytes),
                f"{old_bytes / new_bytes:.1f}x",
                format_seconds(old_s),
                format_seconds(new_s),
                f"{old_s / new_s:.1f}x",
            )
        )
    report.line(
        f"batches of {BATCH} items, {ROW * 4} B of output per item; "
        f"bytes from file sizes, wall clock incl. fsync, folder {tempfile.gettempdir()}"
    )
    report.line(
        text_table(
            rows,
            (
                "batches",
                "outputs",
                "old: written",
                "journal: written",
                "bytes ratio",
                "old: time",
                "journal: time",
                "time ratio",
            ),
        )
    )
    report.line("old writes grow with n^2 (every batch rewrites all); the journal with n.")
    report.line(
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on "
        f"{os.cpu_count()} cores (shared): times grow with load, bytes do not"
    )
    if not quick:
        print("saved", report.save())


if __name__ == "__main__":
    main()
