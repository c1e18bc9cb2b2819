"""Problem sizes for every notebook, in one place, per kind of machine.

CI and laptops run on a 2-core CPU and must finish each notebook in under
a minute; a GPU box can afford sizes that make memory effects obvious.
The profile follows the backend (``cpu`` on the CPU backend, ``gpu`` on
GPU/TPU); ``BATCHLAB_PROFILE=cpu`` forces one, e.g. to reproduce CI's
stored outputs on a GPU machine.

Example:
  >>> s = sizes("tour", profile="cpu")
  >>> s.profile, s.batch_sizes[0]
  ('cpu', 1)
"""

from __future__ import annotations

import os
from types import MappingProxyType
from typing import Any

import jax

# topic -> profile -> sizes. Each notebook reads one topic.
TOPICS: dict[str, dict[str, dict[str, Any]]] = {
    # 00 tour: a batched "features -> scores" function over items of `features` floats
    "tour": {
        "cpu": dict(features=256, batch_sizes=(1, 4, 16, 64, 256, 1024), max_time=0.25),
        "gpu": dict(features=2048, batch_sizes=(1, 16, 256, 1024, 4096, 16384), max_time=0.5),
    },
    # strategies
    # 01/02 axes and broadcasting: shapes only, tiny everywhere
    "axes": {
        "cpu": dict(batch=5, features=3, outputs=2, seq=7),
        "gpu": dict(batch=5, features=3, outputs=2, seq=7),
    },
    # 03 strategies: MLP (features -> hidden -> features), pairwise distances, 1-D convolution
    "strategies": {
        "cpu": dict(
            batch_sizes=(8, 32, 128, 512),
            features=16,
            hidden=256,
            points=128,
            dim=16,
            signal=512,
            kernel=9,
            loop_items=32,
            outer_dim=64,  # 03: the outer product per item, (D,) -> (D, D) intermediate
            max_time=0.1,
        ),
        "gpu": dict(
            batch_sizes=(64, 512, 4096, 32768),
            features=64,
            hidden=1024,
            points=1024,
            dim=64,
            signal=4096,
            kernel=33,
            loop_items=64,
            outer_dim=128,  # 03: the outer product per item
            max_time=0.3,
        ),
    },
    # ragged data
    "ragged": {
        "cpu": dict(
            n_items=256,
            features=16,
            pad_sizes=(16, 32, 64, 128, 256, 512),
            max_time=0.1,
            bucket_items=2048,
            bucket_counts=(1, 2, 4, 8, 16),
            recompile_items=24,
        ),
        "gpu": dict(
            n_items=4096,
            features=128,
            pad_sizes=(16, 32, 64, 128, 256, 512, 1024),
            max_time=0.3,
            bucket_items=6811,
            bucket_counts=(1, 2, 4, 8, 16, 32),
            recompile_items=64,
        ),
    },
    # memory limits and faults
    # 06: per-item fn with a features x features temporary; budgets for the slider (KiB)
    "budget": {
        "cpu": dict(
            features=64, chunk_size=8, budgets_kib=(64, 128, 256, 512, 1024, 2048), budget_kib=256
        ),
        "gpu": dict(
            features=1024,
            chunk_size=64,
            budgets_kib=(2**16, 2**17, 2**18, 2**19, 2**20, 2**21),
            budget_kib=2**18,
        ),
    },
    # 07: a dataset with bad items, run under a budget that forces halving
    "faults": {
        "cpu": dict(items=240, features=64, batch_size=64, budget_kib=256, bad=(7, 100, 101, 199)),
        "gpu": dict(
            items=20000, features=1024, batch_size=4096, budget_kib=2**19, bad=(7, 100, 101, 19999)
        ),
    },
    # fragmentation: simulated workloads (cheap everywhere) and XLA/in-place examples
    "fragmentation": {
        "cpu": dict(
            n_items=48,
            batch_sizes=(1, 2, 4, 8, 16),
            headroom=1.1,
            layers_shape=(256, 128),
            update_size=1 << 16,
            # XLA-derived traces: compiled only, never run, so real sizes everywhere
            xla=dict(
                n_items=48, batch_size=8, d_model=4096, d_hidden=16384, max_len=4096, len_step=512
            ),
            loop_sizes=(1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22),
        ),
        "gpu": dict(
            n_items=48,
            batch_sizes=(1, 2, 4, 8, 16),
            headroom=1.1,
            layers_shape=(4096, 1024),
            update_size=1 << 24,
            xla=dict(
                n_items=48, batch_size=8, d_model=4096, d_hidden=16384, max_len=4096, len_step=512
            ),
            loop_sizes=(1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24),
        ),
    },
    # loading and scaling
    "loading": {
        "cpu": dict(
            n_items=2048, features=256, batch_sizes=(16, 64, 256), repeat=3, overlap_batches=12
        ),
        "gpu": dict(
            n_items=16384,
            features=1024,
            batch_sizes=(64, 256, 1024, 4096),
            repeat=5,
            overlap_batches=24,
        ),
    },
    "scaling": {
        "cpu": dict(
            batch=1024, features=64, hidden=256, device_counts=(1, 2, 4, 8), uneven_batch=1001
        ),
        "gpu": dict(
            batch=65536, features=512, hidden=2048, device_counts=(1, 2, 4, 8), uneven_batch=65535
        ),
    },
}


class Sizes:
    """Read-only sizes of one topic for one profile (attribute access)."""

    def __init__(self, topic: str, profile: str, values: dict[str, Any]) -> None:
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "profile", profile)
        object.__setattr__(self, "_values", MappingProxyType(dict(values)))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(
                f"sizes({self.topic!r}) has no {name!r}; it has {sorted(self._values)}"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Sizes are read-only; edit batchlab/config.py to change them.")

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"Sizes({self.topic}, {self.profile}: {inner})"


def current_profile() -> str:
    """``BATCHLAB_PROFILE`` if set, else ``cpu`` on the CPU backend and ``gpu`` elsewhere."""
    profile = os.environ.get("BATCHLAB_PROFILE") or (
        "cpu" if jax.default_backend() == "cpu" else "gpu"
    )
    if profile not in ("cpu", "gpu"):
        raise ValueError(
            f"BATCHLAB_PROFILE must be 'cpu' or 'gpu', got {profile!r}; unset it to follow the backend."
        )
    return profile


def sizes(topic: str, *, profile: str | None = None) -> Sizes:
    """The sizes one notebook uses on this machine.

    Args:
      topic: one of the keys of ``TOPICS`` (``"tour"``, ...).
      profile: ``"cpu"`` or ``"gpu"``; ``None`` follows :func:`current_profile`.

    Raises:
      ValueError: unknown topic or profile.
    """
    if topic not in TOPICS:
        raise ValueError(f"`topic` must be one of {sorted(TOPICS)}, got {topic!r}.")
    profile = current_profile() if profile is None else profile
    if profile not in TOPICS[topic]:
        raise ValueError(f"`profile` must be one of {sorted(TOPICS[topic])}, got {profile!r}.")
    return Sizes(topic, profile, TOPICS[topic][profile])
