"""Checkpoint I/O per batch: the old full rewrite (n^2 bytes) against the append-only journal.

Before (batchlab <= this change), ``run_batches(..., checkpoint=...)`` rewrote one ``.npz``
holding every finished output after every batch: batch k writes k batches' bytes, so a run of
n batches writes about n^2 / 2 batches' worth. The journal appends each batch's record once
(plus a SHA-256 and an fsync), n batches' worth in all. Both are measured here side by side in
one process, on the same outputs: the old path written out here (``np.savez`` of the
cumulative arrays, fsync, rename) exactly as the old loop did, the new one by a real ``run_batches`` run (its
fn returns precomputed rows, so the figures are I/O, not compute). Bytes are counted from the
files' sizes; times are wall clock, fsync included in both, the two interleaved
(bl.measuring.interleaved: one whole run of each per round, 6 rounds, paired), the time ratio
the median of the per-round ratios with its distribution-free interval.

Usage: .venv/bin/python benchmarks/checkpoint_io.py [--quick]
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

import batchlab
from batchlab import format_bytes, format_seconds, text_table

sys.path.insert(0, os.path.dirname(__file__))
from _report import Report, load, ratio, timed

ROW = 256  # float32 outputs per item: 1 KiB per item
BATCH = 16


def old_rewrite(outputs: np.ndarray, folder: str) -> int:
    """The old loop: after each batch, save every finished output again (atomic rename); bytes."""
    path, written = os.path.join(folder, "old.npz"), 0
    for end in range(BATCH, len(outputs) + 1, BATCH):
        arrays = {"indices": np.arange(end), "out_0": outputs[:end]}
        tmp = path + ".tmp"  # the old loop's atomic write: np.savez to a temp file, fsync, rename
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        written += os.path.getsize(path)
    return written


def journal(outputs: np.ndarray, folder: str) -> tuple[int, bool]:
    """A fresh run_batches run with a checkpoint; fn returns the precomputed rows (pure I/O)."""
    path = os.path.join(folder, "new.ckpt")
    if os.path.exists(path):
        os.remove(path)  # else the run resumes from the last one's journal and writes nothing
    r = batchlab.run_batches(
        lambda idx: outputs[np.asarray(idx)],
        np.arange(len(outputs)),
        batch_size=BATCH,
        strategy="manual",
        progress=False,
        checkpoint=path,
        run_name="bench",
    )
    same = np.array_equal(r.outputs, outputs)
    return os.path.getsize(path), same  # append-only: the file is every byte written


def main() -> None:
    quick = "--quick" in sys.argv
    report = Report("checkpoint_io")
    counts = (16, 64) if quick else (16, 64, 256, 512)
    rows = []
    load_before = load()
    for n_batches in counts:
        n = n_batches * BATCH
        outputs = np.random.default_rng(0).normal(size=(n, ROW)).astype(np.float32)
        with tempfile.TemporaryDirectory() as folder:
            old_bytes = old_rewrite(outputs, folder)
            new_bytes, same = journal(outputs, folder)
            t = timed(
                {
                    "old": lambda o=outputs, d=folder: old_rewrite(o, d),
                    "journal": lambda o=outputs, d=folder: journal(o, d),
                },
                one_call=True,
            )
        assert same, "the journal's run must return the outputs bit for bit"
        rows.append(
            (
                n_batches,
                format_bytes(outputs.nbytes),
                format_bytes(old_bytes),
                format_bytes(new_bytes),
                f"{old_bytes / new_bytes:.1f}x",
                format_seconds(float(np.median(t["old"].values))),
                format_seconds(float(np.median(t["journal"].values))),
                ratio(t, "old", "journal"),
            )
        )
    report.line(
        f"batches of {BATCH} items, {ROW * 4} B of output per item; "
        f"bytes from file sizes; times: median of 6 interleaved rounds (wall clock incl. fsync), "
        f"folder {tempfile.gettempdir()}"
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
                "time ratio old / journal (paired rounds)",
            ),
        )
    )
    report.line("old writes grow with n^2 (every batch rewrites all); the journal with n.")
    report.line(
        f"{load_before} before, {load()} after (shared machine): times grow with load, bytes do "
        "not; the paired ratio cancels what load does to both alike"
    )
    if not quick:
        print("saved", report.save())


if __name__ == "__main__":
    main()
