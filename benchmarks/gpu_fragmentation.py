"""Real allocator figures on a GPU beside the kit's model of XLA's BFC allocator (notebook 08).

Two parts, each (setting, workload) in a fresh Python process (JAX reads
``XLA_PYTHON_CLIENT_PREALLOCATE`` / ``XLA_PYTHON_CLIENT_ALLOCATOR`` once, and
``peak_bytes_in_use`` never resets inside a process):

1. **memory_stats()** after each workload of notebook 08, run for real
   (``batchlab.allocator.xla_workloads``: the per-item MLP block at each item's
   length, ``vmap`` of it on padded batches, a training step with and
   without donation), under the BFC pool, the grown pool and the platform
   allocator; next to it, the model's peak for the XLA-derived trace of the
   same workload.
2. **Profiled replay**: one workload under ``jax.profiler.trace`` (perfetto
   JSON); the BFC allocator's own per-allocation events (addresses,
   requested and allocated bytes) are replayed through the model
   (:func:`parse_bfc_events`, :func:`compare_with_model` below) and real vs simulated bytes in
   use, peak, fragmentation and placement are printed side by side.

On the CPU backend ``memory_stats()`` is ``None`` and there are no BFC
events: the script says so and exits 0. ``--small`` runs the workloads at
tiny sizes (what CI does on CPU, to keep this script working).

Run: ``python benchmarks/gpu_fragmentation.py`` (a few minutes on one GPU).
Writes ``benchmarks/results/gpu_fragmentation.txt``.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SETTINGS = {
    "bfc, preallocated (default)": {},
    "bfc, grow on demand": {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
    "platform": {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"},
}
WORKLOADS = ("per-item", "batched", "training", "training-donated")
KEYS = (
    "bytes_in_use",
    "peak_bytes_in_use",
    "largest_free_block_bytes",
    "pool_bytes",
    "bytes_limit",
    "num_allocs",
)
FULL = dict(
    n_items=24, batch_size=8, d_model=4096, d_hidden=16384, max_len=4096, len_step=512, steps=4
)
SMALL = dict(n_items=6, batch_size=2, d_model=64, d_hidden=128, max_len=128, len_step=32, steps=2)


MEMORY_EVENTS = {"MemoryAllocation": "alloc", "MemoryDeallocation": "free"}
BFC_SIZES = ("requested_bytes", "allocation_bytes", "bytes_allocated")


class BfcEvent(NamedTuple):
    """One event of the real allocator, as recorded by the profiler."""

    ts: float
    kind: str  # "alloc" or "free"
    addr: int
    requested_bytes: int
    allocation_bytes: int
    bytes_allocated: int  # bytes in use after the event (XLA's stats_.bytes_in_use)
    fragmentation: float
    allocator_name: str


def parse_bfc_events(path) -> list[BfcEvent]:
    """The ``MemoryAllocation`` / ``MemoryDeallocation`` events of a ``perfetto_trace.json.gz``,
    in time order, of the allocator with the most events (e.g. ``"GPU_0_bfc"``)."""
    from batchlab.timeline.parse import read_events

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            "`path` must be the path of a perfetto_trace.json.gz (jax.profiler writes one), got "
            f"{type(path).__name__}; write the trace to a file first."
        )
    found = []
    for e in read_events(path):
        base, _, encoded = str(e.get("name", "") if isinstance(e, dict) else "").partition("#")
        if base not in MEMORY_EVENTS:
            continue
        # the arguments are in ``args`` or encoded in the name: "MemoryAllocation#addr=1,...#"
        pairs = (part.partition("=") for part in encoded.rstrip("#").split(","))
        args = {**{k.strip(): v.strip() for k, eq, v in pairs if eq}, **(e.get("args") or {})}
        try:
            sizes = [int(args.get(k, 0)) for k in BFC_SIZES]
            where = [float(e.get("ts", 0.0)), MEMORY_EVENTS[base], int(args["addr"])]
            fragmentation = float(args.get("fragmentation", 0.0))
            name = str(args.get("allocator_name", ""))
            found.append(BfcEvent(*where, *sizes, fragmentation, name))
        except (KeyError, ValueError):
            continue  # an event without an address cannot be replayed
    names = [e.allocator_name for e in found]
    most = max(set(names), key=names.count, default=None)
    return sorted((e for e in found if e.allocator_name == most), key=lambda e: e.ts)


class ReplayComparison(NamedTuple):
    """Real allocator events next to the model's replay of the same requests."""

    allocator_name: str
    events: int
    skipped_frees: int  # frees of buffers allocated before the trace started
    real_peak: int
    simulated_peak: int
    real_final_in_use: int
    simulated_final_in_use: int
    max_in_use_difference: int
    real_max_fragmentation: float
    simulated_max_fragmentation: float
    placement_agreement: float  # share of allocations at the same relative address
    differences: str  # where the model differs from XLA

    def text(self) -> str:
        def pair(real, model, unit=" MiB", scale=2**-20) -> str:
            return f"real {real * scale:.1f}{unit}, model {model * scale:.1f}{unit}"

        frag = pair(self.real_max_fragmentation, self.simulated_max_fragmentation, "%", 100)
        return "\n".join(
            [
                f"{self.allocator_name}: jax.profiler trace (the BFC allocator's own events) "
                "vs the kit's BFC model",
                f"events replayed: {self.events} ({self.skipped_frees} frees of earlier "
                "buffers skipped)",
                f"peak bytes in use: {pair(self.real_peak, self.simulated_peak)}",
                "bytes in use at the end: "
                + pair(self.real_final_in_use, self.simulated_final_in_use),
                f"largest difference in bytes in use: {self.max_in_use_difference / 2**20:.1f} MiB",
                f"max fragmentation: {frag}",
                f"same relative address: {self.placement_agreement:.1%} of allocations",
                f"model differs from XLA: {self.differences}",
            ]
        )


def compare_with_model(
    events: list[BfcEvent], *, capacity: int, preallocate: bool = True
) -> ReplayComparison:
    """Replays the real allocator's requests on the model (``capacity``: the real
    ``memory_stats()["bytes_limit"]``) and lines the two up."""
    from batchlab import allocator

    if not events:
        raise ValueError(
            "`events` is empty: the trace holds no MemoryAllocation events; start "
            "jax.profiler.trace before the workload allocates, on a GPU backend."
        )
    base = min((e.addr for e in events if e.kind == "alloc"), default=0)
    trace, real_in_use, real_placed = [], [], set()
    live: dict[int, tuple] = {}  # address -> (address, time allocated): addresses are reused
    for t, e in enumerate(events):
        if e.kind == "alloc":
            live[e.addr] = (e.addr, t)
            trace.append((t, "alloc", live[e.addr], e.requested_bytes, "real request"))
            real_placed.add((live[e.addr], e.addr - base))
        elif e.addr in live:
            trace.append((t, "free", live.pop(e.addr)))
        else:  # allocated before the trace started
            continue
        real_in_use.append(e.bytes_allocated)
    tl = allocator.replay(
        allocator.Events.from_events(trace, "profiled workload"),
        allocator.BFCAllocator(capacity, preallocate=preallocate),
    )
    pairs = zip(real_in_use, tl.bytes_in_use, strict=True)
    return ReplayComparison(
        events[0].allocator_name,
        len(trace),
        len(events) - len(trace),
        max(real_in_use, default=0),
        max(tl.bytes_in_use, default=0),
        real_in_use[-1] if real_in_use else 0,
        tl.bytes_in_use[-1] if tl.bytes_in_use else 0,
        max((abs(r - m) for r, m in pairs), default=0),
        max((e.fragmentation for e in events), default=0.0),
        tl.max_fragmentation,
        len({(b.id, b.offset) for b in tl.blocks} & real_placed) / max(len(real_placed), 1),
        allocator.differences_text(tl.differences),
    )


def run_workload(workload: str, size: dict) -> list:
    """Runs one notebook-08 workload as real JAX programs; returns what Python keeps."""
    import jax
    import jax.numpy as jnp

    from batchlab.allocator import xla_workloads as X

    d, h = size["d_model"], size["d_hidden"]
    key = jax.random.PRNGKey(0)
    w1 = jax.random.normal(key, (d, h), jnp.float32) * 0.01
    w2 = jax.random.normal(key, (h, d), jnp.float32) * 0.01
    lengths = X.item_lengths(size["n_items"], size["max_len"], size["len_step"])
    results = []
    if workload == "per-item":
        block = jax.jit(X.block)
        for n in lengths:
            results.append(block(jnp.ones((int(n), d), jnp.float32), w1, w2))
    elif workload == "batched":
        block = jax.jit(jax.vmap(X.block, in_axes=(0, None, None)))
        b = size["batch_size"]
        for _ in range(-(-size["n_items"] // b)):
            results.append(block(jnp.ones((b, size["max_len"], d), jnp.float32), w1, w2))
    elif workload in ("training", "training-donated"):
        step = jax.jit(X.train_step, donate_argnums=(0,) if workload.endswith("donated") else ())
        params = (w1, w2)
        del w1, w2
        for _ in range(size["steps"]):
            params, loss = step(params, jnp.ones((size["max_len"], d), jnp.float32))
            float(loss)
        results.append(params)
    else:
        raise ValueError(f"`workload` must be one of {WORKLOADS}, got {workload!r}.")
    jax.block_until_ready(results)
    return results


def child(workload: str, size: dict, profile: bool) -> dict:
    """In a fresh process: run, then memory_stats() (and the profiled replay when asked)."""
    import jax

    out: dict = {}
    if profile:
        with tempfile.TemporaryDirectory() as folder:
            with jax.profiler.trace(folder, create_perfetto_trace=True):
                run_workload(workload, size)
            found = glob.glob(os.path.join(folder, "**", "perfetto_trace.json.gz"), recursive=True)
            events = parse_bfc_events(found[0]) if found else []
        stats = jax.devices()[0].memory_stats() or {}
        if events and stats.get("bytes_limit"):
            preallocate = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").lower() != "false"
            c = compare_with_model(
                events, capacity=int(stats["bytes_limit"]), preallocate=preallocate
            )
            out["replay"] = c.text()
        else:
            out["replay"] = (
                f"no BFC allocator events in the profile ({len(events)} found, backend {jax.default_backend()})"
            )
    else:
        run_workload(workload, size)
        stats = jax.devices()[0].memory_stats() or {}
    out["stats"] = {k: int(stats[k]) for k in KEYS if k in stats}
    return out


MODEL = {  # setting -> (policy, preallocate) of the kit's model
    "bfc, preallocated (default)": ("bfc", True),
    "bfc, grow on demand": ("bfc", False),
    "platform": ("platform", False),
}


def model_peak(
    workload: str, size: dict, setting: str = "bfc, preallocated (default)"
) -> tuple[int, float | None]:
    """The model's live peak and device needed (x live peak) for the XLA-derived trace of the workload."""
    from batchlab import allocator
    from batchlab.allocator import xla_workloads as X

    dims = {k: size[k] for k in ("d_model", "d_hidden", "max_len", "len_step")}
    if workload == "per-item":
        t = X.per_item_workload(size["n_items"], **dims)
    elif workload == "batched":
        t = X.batched_workload(size["n_items"], batch_size=size["batch_size"], **dims)
    else:
        t = X.training_workload(
            [size["max_len"]] * size["steps"],
            donate=workload.endswith("donated"),
            d_model=size["d_model"],
            d_hidden=size["d_hidden"],
        )
    policy, preallocate = MODEL[setting]
    scan = allocator.capacity_scan(
        t.events, policy, preallocate=preallocate, headrooms=[1 + i / 100 for i in range(31)]
    )
    return t.events.peak_rounded_bytes(), scan.overhead


def fmt(n) -> str:
    return "n/a" if n is None else f"{n / 2**20:9.1f} MiB"


def main(argv: list[str]) -> int:
    import jax

    import batchlab as bl

    size = SMALL if "--small" in argv else FULL
    if not bl.backend_facts().has_memory_stats and "--small" not in argv:
        print(
            "gpu_fragmentation: needs a GPU (jax.Device.memory_stats() is None on the CPU backend and "
            "there are no BFC allocator events); nothing measured. Run it on a GPU machine, or with "
            "--small to check the script on CPU."
        )
        return 0
    rows, t0 = [], time.perf_counter()
    for setting, env in SETTINGS.items():
        for workload in WORKLOADS:
            args = [sys.executable, os.path.abspath(__file__), "--child", workload] + (
                ["--small"] if size is SMALL else []
            )
            proc = subprocess.run(
                args, env={**os.environ, **env}, capture_output=True, text=True, timeout=300
            )
            try:
                result = json.loads(proc.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                result = {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:100]}
            rows.append((setting, workload, result))
    lines = [
        f"device memory_stats() after each workload, one fresh process each ({jax.devices()[0].device_kind}, "
        f"jax {jax.__version__}); model: XLA-derived trace on the kit's BFC model (XLA's constants)",
        f"{'setting':30s} {'workload':17s} "
        + " ".join(f"{k[:14]:>14s}" for k in KEYS)
        + "   model peak  model needs",
    ]
    for setting, workload, r in rows:
        if "error" in r:
            lines.append(f"{setting:30s} {workload:17s} failed: {r['error']}")
            continue
        s = r["stats"]
        peak, need = model_peak(workload, size, setting)
        lines.append(
            f"{setting:30s} {workload:17s} "
            + " ".join(
                f"{s[k]:>14d}" if k == "num_allocs" and k in s else f"{fmt(s.get(k)):>14s}"
                for k in KEYS
            )
            + f"  {fmt(peak)}  {need if need is None else f'{need:.2f}x'}"
        )
    for env, label in (
        (SETTINGS["bfc, preallocated (default)"], "preallocated"),
        (SETTINGS["bfc, grow on demand"], "grown"),
    ):
        args = [sys.executable, os.path.abspath(__file__), "--child", "per-item", "--profile"] + (
            ["--small"] if size is SMALL else []
        )
        proc = subprocess.run(
            args, env={**os.environ, **env}, capture_output=True, text=True, timeout=300
        )
        try:
            replay_text = json.loads(proc.stdout.strip().splitlines()[-1])["replay"]
        except (IndexError, json.JSONDecodeError, KeyError):
            replay_text = (
                "profiled run failed: "
                + (proc.stderr.strip().splitlines() or ["no output"])[-1][:100]
            )
        lines += [
            "",
            f"profiled per-item run, BFC {label}: real allocator events replayed on the model",
            replay_text,
        ]
    lines.append(f"(took {time.perf_counter() - t0:.0f} s)")
    print("\n".join(lines))
    if size is FULL:
        os.makedirs(
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"), exist_ok=True
        )
        with open(
            os.path.join(
                os.path.dirname(os.path.abspath(__file__)), "results", "gpu_fragmentation.txt"
            ),
            "w",
        ) as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        result = child(
            sys.argv[2], SMALL if "--small" in sys.argv else FULL, "--profile" in sys.argv
        )
        print(json.dumps(result))
    else:
        sys.exit(main(sys.argv[1:]))
