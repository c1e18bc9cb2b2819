"""Split one batch across devices with JAX's own SPMD engine (data parallelism)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from batchlab._util.checks import check_array_tree

AXIS = "batch"


@dataclass(frozen=True)
class ShardedBatch:
    """A batch on the ``"batch"`` axis of a mesh, padded to a multiple of the device count."""

    values: Any
    mask: jax.Array
    n_items: int
    sharding: NamedSharding
    process_items: tuple[int, ...] = ()  # several processes: the real rows each fed
    process_starts: tuple[int, ...] = ()  # and the global row where each one's rows start

    @property
    def n_devices(self) -> int:
        """Devices the batch is split over."""
        return int(self.sharding.mesh.shape[AXIS])

    @property
    def padded_items(self) -> int:
        """Items after padding to a multiple of ``n_devices``."""
        return int(self.mask.shape[0])

    @property
    def n_padding(self) -> int:
        """Padding items added (``padded_items - n_items``)."""
        return self.padded_items - self.n_items

    @property
    def items_per_device(self) -> int:
        """Items each device holds."""
        return self.padded_items // self.n_devices

    def unpad(self, result: Any) -> Any:
        """Cuts per-item results (leading axis ``padded_items``) to the ``n_items`` real ones."""
        if self.n_padding == 0:
            return result
        whole = NamedSharding(self.sharding.mesh, PartitionSpec())
        if self.process_items:  # each process's padding sits after its own rows
            starts = zip(self.process_starts, self.process_items, strict=True)
            keep = np.concatenate([s + np.arange(n) for s, n in starts])
            gather = jax.jit(lambda r: r, out_shardings=whole)  # every row to every process
            return jax.tree_util.tree_map(lambda r: gather(r)[keep], result)

        def cut(r: Any) -> Any:
            return (jax.device_put(r, whole) if isinstance(r, jax.Array) else r)[: self.n_items]

        return jax.tree_util.tree_map(cut, result)

    def __repr__(self) -> str:
        where = f"{self.n_devices} device(s)"
        if rows := list(self.process_items):
            where += f" of {len(rows)} processes (rows fed {rows})"
        return (
            f"ShardedBatch({self.n_items} items + {self.n_padding} padding over {where}, "
            f"{self.items_per_device} rows per device, spec {self.sharding.spec})"
        )


def batch_size_of(x: Any) -> int:
    """The items in ``x``: the leading axis that all of its leaves share (checked)."""
    check_array_tree(x, "x")
    sizes = {int(np.shape(leaf)[0]) if np.ndim(leaf) else None for leaf in jax.tree.leaves(x)}
    if len(sizes) != 1 or None in sizes:
        raise ValueError(
            f"`x` must be an array [batch, ...] or a pytree of them, every leaf with the same "
            f"leading (batch) axis, got leading sizes {sizes or 'none (no arrays)'}; a scalar "
            "shared by all items is a parameter: pass it to your function separately."
        )
    return sizes.pop()


def shard_batch(x: Any, mesh: Mesh) -> ShardedBatch:
    """Lays the leading axis of ``x`` over the "batch" axis of ``mesh``, padded with zero rows
    that the mask excludes.

    Args:
      x: an array or a pytree of arrays sharing the leading (items) axis; several processes:
        this process's rows.
      mesh: a ``jax.sharding.Mesh`` with a ``"batch"`` axis.

    Returns:
      A :class:`ShardedBatch`: the padded ``values``, the ``mask`` of real rows, the item count
      and the sharding (``unpad`` drops the padding rows of a result).

    Raises:
      TypeError: ``mesh`` is not a Mesh with a "batch" axis, or ``x`` holds a non-array leaf.
      ValueError: ``x``'s leaves do not share a leading axis; several processes: a mesh that
        does not give each an equal, contiguous block, or rows of different layouts.
    """
    if not isinstance(mesh, Mesh) or AXIS not in mesh.axis_names:
        got = tuple(mesh.axis_names) if isinstance(mesh, Mesh) else type(mesh).__name__
        raise TypeError(
            f"`mesh` must be a jax.sharding.Mesh with a 'batch' axis (the axis the batch is split "
            f"over), got {got}; build it with jax.make_mesh((n,), ('batch',))."
        )
    n_items = batch_size_of(x)
    leaves, treedef = jax.tree_util.tree_flatten(x)
    if any(d.process_index != jax.process_index() for d in mesh.devices.flat):
        return _shard_process_local(leaves, treedef, n_items, mesh)
    n_devices = int(mesh.shape[AXIS])
    padded = -(-n_items // n_devices) * n_devices
    sharding = NamedSharding(mesh, PartitionSpec(AXIS))

    def place(leaf: Any) -> jax.Array:
        widths = [(0, padded - n_items)] + [(0, 0)] * (np.ndim(leaf) - 1)
        pad = np.pad if isinstance(leaf, np.ndarray) else jnp.pad
        return jax.device_put(pad(leaf, widths), sharding)

    values = jax.tree_util.tree_unflatten(treedef, [place(leaf) for leaf in leaves])
    mask = jax.device_put(np.arange(padded) < n_items, sharding)
    return ShardedBatch(values, mask, n_items, sharding)


def _process_blocks(sharding: NamedSharding, n_devices: int) -> dict[int, list[int]]:
    """Which blocks of the batch axis (one per mesh position) each process's devices hold."""
    blocks: dict[int, set[int]] = {}
    for device, index in sharding.devices_indices_map((n_devices,)).items():
        blocks.setdefault(device.process_index, set()).add(index[0].start)
    ordered = {p: sorted(b) for p, b in sorted(blocks.items(), key=lambda kv: min(kv[1]))}
    sizes = {len(b) for b in ordered.values()}
    contiguous = all(b == list(range(b[0], b[0] + len(b))) for b in ordered.values())
    if len(ordered) != jax.process_count() or len(sizes) != 1 or not contiguous:
        raise ValueError(
            f"the mesh must give each of the {jax.process_count()} processes an equal, contiguous "
            f"block of the 'batch' axis; its processes hold blocks {ordered}. Build it from all "
            "devices in process order, e.g. jax.make_mesh((jax.device_count(),), ('batch',))."
        )
    return ordered


def _shard_process_local(leaves: list, treedef: Any, n_local: int, mesh: Mesh) -> ShardedBatch:
    """:func:`shard_batch` over a mesh of several processes; ``leaves``: this process's rows."""
    sharding = NamedSharding(mesh, PartitionSpec(AXIS))
    n_devices = int(mesh.shape[AXIS])
    blocks = _process_blocks(sharding, n_devices)
    mine = blocks[jax.process_index()]
    hosts = [np.asarray(leaf) for leaf in leaves]
    layout = repr([(h.shape[1:], h.dtype.str) for h in hosts]).encode()
    table = np.asarray(
        multihost_utils.process_allgather(np.array([n_local, zlib.crc32(layout)], np.int64))
    ).reshape(jax.process_count(), 2)
    if len(set(table[:, 1].tolist())) > 1:
        raise ValueError(
            "the processes passed leaves of different shapes or dtypes beyond the batch axis (this "
            f"process: {layout.decode()}); every process must feed rows of the same layout."
        )
    per_block = max(1, -(-int(table[:, 0].max()) // len(mine)))

    def place(host: np.ndarray) -> jax.Array:  # zero (False) rows after this process's own
        local = np.pad(host, [(0, per_block * len(mine) - n_local)] + [(0, 0)] * (host.ndim - 1))
        shape = (n_devices * per_block, *host.shape[1:])
        return jax.make_array_from_process_local_data(sharding, local, shape)

    values = jax.tree_util.tree_unflatten(treedef, [place(h) for h in hosts])
    mask = place(np.ones(n_local, bool))
    items = tuple(int(n) for n in table[:, 0])
    starts = tuple(blocks[p][0] * per_block for p in range(jax.process_count()))
    return ShardedBatch(values, mask, sum(items), sharding, items, starts)


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Places parameters every item shares whole on every device of ``mesh``."""
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))
