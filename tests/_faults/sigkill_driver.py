"""Driver for the SIGKILL / SIGABRT fault tests: fork a worker, kill it at a random moment, repeat.

Run as ``python sigkill_driver.py FOLDER KILLS SEED [KILL|ABRT]``: SIGABRT is how a process
ends when LLVM aborts inside XLA's compile ("Unable to allocate section memory" under a tight
address-space limit), SIGKILL how the OOM killer ends it. The driver imports
batchlab without starting a JAX backend, so each ``os.fork()`` child starts
its own CPU backend safely. Each child resumes the checkpoint journal, says
"ready" on a pipe at its first fn call (backend up, journal open), and is sent SIGKILL after a
random delay (during compiles, fn calls or journal appends). When a child
finishes a run before its kill, the next children start a new journal, so
KILLS real kills always land. Then every journal is resumed to the end and
compared with an uninterrupted run bit for bit; one JSON line of figures.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import sys
import time

import numpy as np
from jax._src import xla_bridge

import batchlab

N, BATCH, WIDTH = 480, 4, 1024


def items() -> np.ndarray:
    x = np.random.default_rng(0).normal(size=(N, WIDTH)).astype(np.float32)
    x[:, 0] = np.arange(N)  # the item's index, logged by fn
    return x


READY = [None, False]  # in a worker: the pipe to tell the driver that fn is running


def make_fn(log_path: str):
    def fn(batch):  # strategy="manual", called as given with numpy: logs which items it computes
        if READY[0] is not None and READY[1]:  # the second call: the first one compiled the ops
            os.write(READY[0], b"r")
            READY[0] = None
        READY[1] = READY[1] or isinstance(batch, np.ndarray)  # not a trace
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, (" ".join(str(int(i)) for i in batch[:, 0]) + "\n").encode())
        os.close(fd)
        time.sleep(0.002)  # a little work per batch, so kills land at many points
        # numpy: no per-process compile, so each short-lived worker gets to its batches fast
        return {"y": np.tanh(batch) * np.float32(2.0), "s": np.sin(batch).sum(axis=1)}

    return fn


def run(folder: str, fn, name: str):
    return batchlab.run_batches(
        fn,
        items(),
        batch_size=BATCH,
        strategy="manual",
        progress=False,
        checkpoint=os.path.join(folder, name),
        run_name="sigkill-test",
    )


def main() -> None:
    folder, kills, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sig = getattr(signal, "SIG" + (sys.argv[4] if len(sys.argv) > 4 else "KILL"))
    assert not xla_bridge._backends, "the backend must not start before fork"
    rng = random.Random(seed)
    log = os.path.join(folder, "computed.log")
    fn = make_fn(log)
    landed, finished, delays, journal = 0, 0, [], 0
    while landed < kills:
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: resume and run until killed
            try:
                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an abort leaves no core file
                os.close(ready_r)
                READY[:] = [ready_w, False]
                run(folder, fn, f"run{journal}.ckpt")
            finally:
                os._exit(0)
        os.close(ready_w)
        os.read(ready_r, 1)  # the child's first fn call (or it exited)
        os.close(ready_r)
        delay = rng.uniform(0.0, 0.15)
        delays.append(delay)
        time.sleep(delay)
        os.kill(pid, sig)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            landed += 1  # it was still running: a real kill
        else:
            finished += 1  # the run ended before the kill: the next child starts a new journal
            journal += 1
    clean = run(folder, make_fn(os.path.join(folder, "clean.log")), "clean.ckpt")
    same, resumed, complete = True, [], True
    for j in range(journal + 1):
        final = run(folder, fn, f"run{j}.ckpt")
        resumed.append(final.resumed_items)
        complete &= final.complete
        same &= all(
            np.array_equal(a, b) and a.dtype == b.dtype
            for a, b in zip(  # noqa: B905
                (final.indices, final.outputs["y"], final.outputs["s"]),
                (clean.indices, clean.outputs["y"], clean.outputs["s"]),
            )
        )
    counts = np.zeros(N, int)
    with open(log) as f:
        for line in f:
            for i in line.split():
                counts[int(i)] += 1
    n_runs = journal + 1
    orphans = [p for p in os.listdir(folder) if p.endswith(".tmp")]
    print(
        json.dumps(
            {
                "kills": kills,
                "killed_while_running": landed,
                "runs_finished_before_a_kill": finished,
                "journals": n_runs,
                "complete": bool(complete),
                "identical": bool(same),
                "resumed_items": resumed,
                "missing": int((counts < n_runs).sum()),
                "extra_computations": int(counts.sum() - n_runs * N),
                "orphans": orphans,
                "delays": [round(d, 3) for d in delays],
            }
        )
    )


if __name__ == "__main__":
    main()
