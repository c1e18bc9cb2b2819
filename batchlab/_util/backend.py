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
      counts_allocs: those counters' ``num_allocs`` grows with each allocation (TPU v5e: it
        stayed 0 through 64 calls, measured; GPU's BFC allocator counts, cited).
      counts_program_temps: those counters see a jitted program's temporaries (TPU v5e: a plan
        of 256 MiB of temp raised ``peak_bytes_in_use`` by 1.3 MB, measured; GPU: XLA takes the
        temp buffer from the BFC pool the counters describe, cited).
      fuses_temporaries: XLA fuses a batch's elementwise intermediates into the kernels that
        use them, so the compiled plan's ``temp_size_in_bytes`` can be 0 at every batch size
        (XLA:TPU: measured; XLA:GPU: its fusion passes, unmeasured). XLA:CPU plans them.
      plan_peak_counts_temporaries: ``memory_analysis().peak_memory_in_bytes`` includes the
        temporaries (XLA:CPU in jax 0.10 leaves them out).
      lane_tile: the (sublane, lane) tile a 32-bit array's two minor dimensions are padded to
        in device memory (TPU: (8, 128): a float32[64] output takes 512 B), or ``None``.
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
    counts_allocs: bool
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
        """Bytes ``shape`` of a 32-bit ``dtype`` takes in device memory on this backend.

        Args:
          shape: the array's shape.
          dtype: its dtype (the tile is the 32-bit one; other widths are not modelled).

        Returns:
          ``prod(shape) * itemsize`` where there is no tile. On a TPU: a rank-1 array rounded up
          to whole lanes (measured: float32[64] takes 512 B), and for more dimensions the two
          minor ones rounded up to the tile: exact when they are multiples of it, else an upper
          bound, since XLA:TPU may pick another layout (measured: a float32[1024, 3] output
          planned 16 KiB where the (8, 128) tile bound is 512 KiB; read the compiled plan).

        Example:
          >>> FACTS["tpu"].padded_bytes((64,)), FACTS["cpu"].padded_bytes((64,))
          (512, 256)
        """
        itemsize = np.dtype(dtype).itemsize
        if self.lane_tile is None or itemsize != 4 or not shape:
            return int(np.prod(shape, dtype=np.int64)) * itemsize
        sub, lane = self.lane_tile
        if len(shape) == 1:  # one row of lanes (seen: float32[64] takes 512 B)
            return -(-shape[0] // lane) * lane * itemsize
        *major, rows, cols = shape
        rows, cols = -(-rows // sub) * sub, -(-cols // lane) * lane
        return int(np.prod(major, dtype=np.int64)) * rows * cols * itemsize

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
        counts_allocs=False,
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
        counts_allocs=False,
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
        counts_allocs=True,
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
    """Where new arrays go (``jax.default_device`` honoured): ``"cpu (cpu)"``,
    ``"tpu (TPU v5 lite)"``."""
    device = next(iter(jnp.zeros(()).devices()))
    return f"{device.platform} ({device.device_kind})"


def machine_label() -> str:
    """The device, host cores and jax version, for the title of a timing plot."""
    return f"{device_label()}, {os.cpu_count()} host cores, jax {jax.__version__}"
