"""What each backend does differently, in one place: package, notebooks and tests ask
:func:`backend_facts` instead of testing ``jax.default_backend()`` inline. Each fact was measured
(CPU in CI, TPU v5e on a lent machine) or cited from source, unmeasured (GPU: none was lent)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np


@dataclass(frozen=True)
class BackendFacts:
    """The facts the kit reads about one backend.

    Attributes:
      name: ``jax.default_backend()``: ``"cpu"``, ``"tpu"`` or ``"gpu"``.
      has_memory_stats: ``Device.memory_stats()`` returns allocator counters (``bytes_in_use``,
        ``peak_bytes_in_use``, ...); on the CPU it returns ``None``.
      counts_program_temps: those counters see a jitted program's temporaries (TPU v5e: a plan
        of 256 MiB of temp raised ``peak_bytes_in_use`` by 1.3 MB, measured; GPU: XLA takes the
        temp buffer from the BFC pool the counters describe, cited).
      fuses_temporaries: XLA fuses a batch's elementwise intermediates into the kernels that
        use them, so the compiled plan's ``temp_size_in_bytes`` can be 0 at every batch size
        (XLA:TPU: measured; XLA:GPU: its fusion passes, unmeasured). XLA:CPU plans them.
      plan_peak_counts_temporaries: ``memory_analysis().peak_memory_in_bytes`` includes the
        temporaries (XLA:CPU in jax 0.10 leaves them out).
      lane_tile: the largest (sublane, lane) tile a 32-bit array's two minor dimensions are
        padded to in device memory (TPU: (8, 128); :meth:`padded_bytes` has the layout), or None.
      oom_at_compile: out of memory is raised when compiling, as soon as the plan exceeds the
        device (XLA:TPU); elsewhere it is raised when the call allocates.
      second_process_may_open: a fresh process may open the device while this one holds it
        (a TPU is held by one process; a GPU's preallocated pool leaves a second process
        little). On an accelerator, measure in-process or in a CPU child.
      host_memory_demos: a notebook may ask the host's operating system for memory near RAM + swap
        (06's demonstrations): only where the process holds no accelerator (CPU). A process
        that holds a TPU is 13-15 GiB resident, and such a request took a TPU host down.
      float32_rtol: relative tolerance of float32 results of the default matmul precision
        (TPU: one bf16 pass, about 3 significant digits; GPU: TF32 where the card has it).
      source: where these facts come from.
    """

    name: str
    has_memory_stats: bool
    counts_program_temps: bool
    fuses_temporaries: bool
    plan_peak_counts_temporaries: bool
    lane_tile: tuple[int, int] | None
    oom_at_compile: bool
    second_process_may_open: bool
    host_memory_demos: bool
    float32_rtol: float
    source: str

    def padded_bytes(self, shape: tuple[int, ...], dtype=np.float32) -> int:
        """Bytes an array of ``shape`` and a 32-bit ``dtype`` takes in device memory here.

        No tile (or another width, not modelled): ``prod(shape) * itemsize``. A TPU: XLA:TPU's
        layouts read on a v5e (jax 0.10.2), exact for the float32 shapes read there, extrapolated
        to others: rank 1 in tiles of 128 to 1024 elements, a power of two (float32[8], [100],
        [128]: 512 B; [256]: 1 KiB; [1000], [1024]: 4 KiB); rank 2 and up, the two minor dims in
        the order that pads less, the one in sublanes by 8 (4, 2, 1 when fewer). Read for B in 8,
        100, 128, 1000, 1024, 4096: [B, 3] and [3, B] alike, (4, 128) tiles; [B, 128], (8, 128).

        Example:
          >>> [FACTS["tpu"].padded_bytes(s) for s in [(1000, 3), (3, 1024), (100, 128), (8,)]]
          [16384, 16384, 53248, 512]
        """
        itemsize = np.dtype(dtype).itemsize
        if self.lane_tile is None or itemsize != 4 or not shape:
            return int(np.prod(shape, dtype=np.int64)) * itemsize
        sub, lane = self.lane_tile
        if len(shape) == 1:  # a power of two elements, from one row of lanes to a whole tile
            tile = min(max(lane, 1 << (shape[0] - 1).bit_length()), sub * lane)
            return -(-shape[0] // tile) * tile * itemsize
        *major, rows, cols = shape
        pads = []  # r in sublanes (tiles of a power of two up to `sub`), c in lanes: either order
        for r, c in ((rows, cols), (cols, rows)):
            r_tile = min(sub, 1 << max(r - 1, 0).bit_length())
            pads.append(-(-r // r_tile) * r_tile * -(-c // lane) * lane)
        return int(np.prod(major, dtype=np.int64)) * min(pads) * itemsize

    def tolerance(self, dtype=np.float32) -> dict[str, float]:
        """``rtol``/``atol`` for comparing results of ``dtype`` computed on this backend.

        float32 takes the backend's default-matmul-precision tolerance; float64 is tight;
        16-bit floats are loose everywhere; integers and bools are exact.

        Example:
          >>> FACTS["cpu"].tolerance(np.float32), FACTS["tpu"].tolerance(np.int32)
          ({'rtol': 1e-05, 'atol': 1e-06}, {'rtol': 0, 'atol': 0})
        """
        dtype = np.dtype(dtype)
        if dtype == np.float64:
            return {"rtol": 1e-10, "atol": 1e-12}
        if (dtype.kind == "f" and dtype.itemsize == 2) or dtype.name == "bfloat16":
            return {"rtol": 2e-2, "atol": 2e-2}
        if dtype.kind in "fcV":
            return {"rtol": self.float32_rtol, "atol": self.float32_rtol / 10}
        return {"rtol": 0, "atol": 0}


FACTS: dict[str, BackendFacts] = {
    "cpu": BackendFacts(
        name="cpu",
        has_memory_stats=False,
        counts_program_temps=False,
        fuses_temporaries=False,
        plan_peak_counts_temporaries=False,
        lane_tile=None,
        oom_at_compile=False,
        second_process_may_open=True,
        host_memory_demos=True,
        float32_rtol=1e-5,
        source="measured: XLA:CPU, jax 0.10.2 and 0.12 (CI)",
    ),
    "tpu": BackendFacts(
        name="tpu",
        has_memory_stats=True,
        counts_program_temps=False,
        fuses_temporaries=True,
        plan_peak_counts_temporaries=True,
        lane_tile=(8, 128),
        oom_at_compile=True,
        second_process_may_open=False,
        host_memory_demos=False,
        float32_rtol=2e-2,
        source="measured: TPU v5 lite (v5e), jax 0.10.2, on a lent machine",
    ),
    "gpu": BackendFacts(
        name="gpu",
        has_memory_stats=True,
        counts_program_temps=True,
        fuses_temporaries=True,
        plan_peak_counts_temporaries=True,
        lane_tile=None,
        oom_at_compile=False,
        second_process_may_open=False,
        host_memory_demos=False,
        float32_rtol=5e-3,
        source="cited from XLA:GPU's source and JAX's docs, unmeasured: no GPU was lent",
    ),
}


@functools.cache
def backend_facts(name: str | None = None) -> BackendFacts:
    """The facts of backend ``name`` (``None``: the default backend, ``jax.default_backend()``).

    Args:
      name: ``"cpu"``, ``"tpu"`` or ``"gpu"`` (``"cuda"`` and ``"rocm"`` read as ``"gpu"``).

    Returns:
      That backend's :class:`BackendFacts`.

    Raises:
      ValueError: ``name`` is a backend the kit has no facts for.

    Example:
      >>> backend_facts("cpu").has_memory_stats
      False
    """
    name = jax.default_backend() if name is None else name
    name = "gpu" if name in ("cuda", "rocm") else name
    if name not in FACTS:
        raise ValueError(f"`name` must be one of {sorted(FACTS)} (or None), got {name!r}.")
    return FACTS[name]


def device_label() -> str:
    """Where new arrays go (``jax.default_device`` honoured): ``"tpu (TPU v5 lite)"``."""
    device = next(iter(jnp.zeros(()).devices()))
    return f"{device.platform} ({device.device_kind})"


def machine_label() -> str:
    """The device, host cores and jax version, for the title of a timing plot."""
    return f"{device_label()}, {os.cpu_count()} host cores, jax {jax.__version__}"
