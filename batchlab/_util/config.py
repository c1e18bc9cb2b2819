"""Problem sizes for every notebook, per profile: ``cpu`` (CI and laptops: each notebook
under 30 s on 2 cores), ``tpu`` (the CPU's sizes, with the overrides in ``TPU``: a jitted call
costs ~0.5 ms there, so notebooks of many small calls keep small sizes) or ``gpu`` (sizes that
make memory effects obvious). The profile is the backend's name (``backend_facts().name``);
``BATCHLAB_PROFILE=cpu`` forces one."""

from __future__ import annotations

import os
from collections import namedtuple
from typing import Any

from batchlab._util.backend import backend_facts

_XLA = dict(n_items=48, batch_size=8, d_model=4096, d_hidden=16384, max_len=4096, len_step=512)

#: topic -> size -> (cpu, gpu). Each notebook reads one topic.
TOPICS: dict[str, dict[str, tuple[Any, Any]]] = {
    # 00 tour: a batched "features -> scores" function over items of `features` floats
    "tour": dict(
        features=(256, 2048),
        batch_sizes=((1, 4, 16, 64, 256, 1024), (1, 16, 256, 1024, 4096, 16384)),
        max_time=(0.25, 0.5),
    ),
    # 01/02 axes and broadcasting: shapes only, tiny everywhere
    "axes": dict(batch=(5, 5), features=(3, 3), outputs=(2, 2), seq=(7, 7)),
    # 03 strategies: MLP (features -> hidden -> features), pairwise distances, 1-D convolution
    "strategies": dict(
        batch_sizes=((8, 32, 128, 512), (64, 512, 4096, 32768)),
        features=(16, 64),
        hidden=(256, 1024),
        points=(128, 1024),
        dim=(16, 64),
        signal=(512, 4096),
        kernel=(9, 33),
        loop_items=(32, 64),
        outer_dim=(64, 128),  # the outer product per item, (D,) -> (D, D) intermediate
        # 03: the loop's small and big (d, d) items; a blocking call's d x d matmuls
        item_dims=((16, 96), (16, 512)),
        call_dims=((16, 64, 256, 1024), (128, 1024, 4096, 8192)),
    ),
    # 04-05 ragged data
    "ragged": dict(
        n_items=(256, 4096),
        features=(16, 128),
        pad_sizes=((16, 32, 64, 128, 256, 512), (16, 32, 64, 128, 256, 512, 1024)),
        bucket_items=(2048, 6811),
        bucket_counts=((1, 2, 4, 8, 16), (1, 2, 4, 8, 16, 32)),
        copies=(16, 16),  # 04: batches per timed call (lax.map), so a call's fixed cost is shared
    ),
    # 06: per-item fn with a features x features temporary; budgets for the slider (KiB)
    "budget": dict(
        features=(64, 1024),
        chunk_size=(8, 64),
        budgets_kib=((64, 128, 256, 512, 1024, 2048), tuple(2**k for k in range(16, 22))),
        budget_kib=(256, 2**18),
        exercise_budgets_kib=((20, 60), (8192, 16384)),  # the linear search: a few items each
        fusion_shape=((64, 2**18), (64, 2**22)),  # (B, N): a (B, N) float32 intermediate, 64 MiB
    ),
    # 07: a dataset with bad items, run under a budget that forces halving
    "faults": dict(
        items=(240, 20000),
        features=(64, 1024),
        batch_size=(64, 4096),
        budget_kib=(256, 2**19),
        bad=((7, 100, 101, 199), (7, 100, 101, 19999)),
    ),
    # 08-09 fragmentation: simulated workloads (cheap everywhere) and XLA/in-place examples
    "fragmentation": dict(
        n_items=(48, 48),
        batch_sizes=((1, 2, 4, 8, 16), (1, 2, 4, 8, 16)),
        headroom=(1.1, 1.1),
        layers_shape=((256, 128), (4096, 1024)),
        update_size=(1 << 16, 1 << 24),
        xla=(_XLA, _XLA),  # XLA-derived traces: compiled only, never run, so real sizes everywhere
        loop_sizes=(
            tuple(1 << k for k in range(12, 24, 2)),
            tuple(1 << k for k in range(14, 26, 2)),
        ),
    ),
    # 10 loading and 11 scaling
    "loading": dict(
        n_items=(2048, 16384),
        features=(256, 1024),
        batch_sizes=((16, 64, 256), (64, 256, 1024, 4096)),
        repeat=(3, 5),
        overlap_batches=(12, 24),
        put_bytes=(8 << 20, 64 << 20),  # 10's host-to-device contrast: one buffer's bytes, split
        put_items=((1024, 4), (1024, 4)),  # into many small items, then a few large ones
    ),
    "scaling": dict(
        batch=(1024, 65536),
        features=(64, 512),
        hidden=(256, 2048),
        device_counts=((1, 2, 4, 8), (1, 2, 4, 8)),
        uneven_batch=(1001, 65535),
    ),
}
#: topic -> size -> value on the TPU where it differs from the CPU's
TPU: dict[str, dict[str, Any]] = {
    "strategies": dict(item_dims=(16, 2048), call_dims=(128, 1024, 4096, 8192)),  # ~0.1 ms a call
    # at (64, 2**18) XLA:TPU planned no temp for `kept`; its tiles make the exercise's 20 and
    # 60 KiB hold 16 and 56 items (74 compiles, one per size): 8 and 16 KiB hold 8 and 16
    "budget": dict(fusion_shape=(64, 2**20), exercise_budgets_kib=(8, 16)),
    # ~170 us a device_put: fewer calls; the host's files read ~0.6 ms each (2048: 1.27 s a pass)
    "loading": dict(put_bytes=32 << 20, put_items=(256, 4), n_items=1024),
    # 05: each padded shape compiles, ~0.46 s apiece on a TPU; 04: a jitted call costs ~0.5 ms there
    "ragged": dict(bucket_items=1024, copies=64),
}
PROFILES = ("cpu", "tpu", "gpu")


def sizes(topic: str, *, profile: str | None = None) -> tuple:
    """The sizes of ``topic`` (a key of ``TOPICS``) for ``profile`` (``None``:
    ``BATCHLAB_PROFILE`` if set, else the backend's), read-only, as a named tuple.

    Args:
      topic: a notebook's topic, e.g. ``"tour"``, ``"ragged"`` or ``"budget"``.
      profile: ``"cpu"``, ``"tpu"`` or ``"gpu"``.

    Returns:
      A named tuple ``Sizes(topic, profile, <one field per size>)``.

    Raises:
      ValueError: an unknown ``topic``, or a ``profile`` (or ``BATCHLAB_PROFILE``) not in the three.

    Example:
      >>> s = sizes("axes", profile="cpu")
      >>> s.profile, s.batch, s.features
      ('cpu', 5, 3)
    """
    if topic not in TOPICS:
        raise ValueError(f"`topic` must be one of {sorted(TOPICS)}, got {topic!r}.")
    if profile is None:
        profile = os.environ.get("BATCHLAB_PROFILE") or backend_facts().name
    if profile not in PROFILES:
        raise ValueError(
            f"`profile` (or BATCHLAB_PROFILE) must be one of {list(PROFILES)}, got {profile!r}; "
            "leave both unset to follow the backend."
        )
    i = 1 if profile == "gpu" else 0
    values = {k: v[i] for k, v in TOPICS[topic].items()}
    if profile == "tpu":
        values.update(TPU.get(topic, {}))
    return namedtuple("Sizes", ["topic", "profile", *values])(topic, profile, *values.values())
