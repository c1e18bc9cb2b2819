"""Broadcasting, checked: the result shape, a conflict drawn, and the silent traps."""

from __future__ import annotations

import itertools
import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle


class BroadcastError(ValueError):
    """Shapes that cannot broadcast; the message aligns them and marks the conflict."""


class SilentBroadcastWarning(UserWarning):
    """Shapes that broadcast, but in a way that is almost always a mistake."""


def _shape_of(x: Any, name: str) -> tuple[int, ...]:
    if isinstance(x, (tuple, list)) and all(
        isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in x
    ):
        if any(d < 0 for d in x):
            raise ValueError(f"`{name}` is a shape with a negative size: {tuple(x)}.")
        return tuple(int(d) for d in x)
    if hasattr(x, "shape") or isinstance(x, numbers.Number):
        return tuple(int(d) for d in np.shape(x))
    raise TypeError(
        f"`{name}` must be an array, a number or a shape (a tuple of ints), got "
        f"{type(x).__name__} {x!r:.60}."
    )


def _operands(xs: tuple, names: Sequence[str] | None) -> tuple[list, list[str]]:
    """The shapes of the operands and their names (default ``a``, ``b``, ...)."""
    names = list(names or [chr(ord("a") + k) if k < 26 else f"arg{k}" for k in range(len(xs))])
    if len(names) != len(xs):
        raise ValueError(f"`names` has {len(names)} entries but {len(xs)} operands were given.")
    return [_shape_of(x, name) for x, name in zip(xs, names, strict=True)], names


def _aligned(shapes: list[tuple[int, ...]], names: list[str], conflicts: set[int]) -> str:
    """Shapes right-aligned in columns; ``^`` under conflicting axes (negative axis numbers)."""
    rank = max(map(len, shapes), default=0)
    cells = [[""] * (rank - len(s)) + [str(d) for d in s] for s in shapes]
    width = max([len(c) for row in cells for c in row] + [2])
    name_w = max(len(n) for n in [*names, "axis"]) + 2
    lines = [
        f"  {n + ':':<{name_w}}" + " ".join(c.rjust(width) for c in row)
        for n, row in zip(names, cells, strict=True)
    ]
    if conflicts:
        marks = (("^" if a - rank in conflicts else "").rjust(width) for a in range(rank))
        lines.append(f"  {'':<{name_w}}" + " ".join(marks))
    lines.append(
        f"  {'axis':<{name_w}}" + " ".join(str(a - rank).rjust(width) for a in range(rank))
    )
    return "\n".join(lines)


def _per_row(shapes: list[tuple[int, ...]], names: list[str], last: bool) -> list[str]:
    """Operands whose shape is the LEADING axes of another's (``last``: and its trailing ones)."""
    also = " and its trailing ones, but broadcasting aligns from the right: it is applied along "
    also = also + "the LAST axes, silently" if last else ""
    found = []
    for (i, a), (j, b) in itertools.permutations(enumerate(shapes), 2):
        if 0 < len(a) < len(b) and b[: len(a)] == a and (not last or b[-len(a) :] == a):
            fix = f"{names[i]}[{', '.join([':'] * len(a) + ['None'] * (len(b) - len(a)))}]"
            found.append(
                f"`{names[i]}` {a} matches the LEADING axes of `{names[j]}` {b}{also}. If it "
                f"holds one value per row (e.g. a mask over the batch), give it trailing axes: "
                f"{fix} has shape {a + (1,) * (len(b) - len(a))}."
            )
    return found


def _traps(shapes: list[tuple[int, ...]], names: list[str], rank: int) -> list[str]:
    """Broadcasts that are almost always mistakes: an outer product, a per-row mask at the end."""
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    found = []
    for i, j in itertools.combinations(range(len(shapes)), 2):
        a, b = padded[i], padded[j]
        for p, q in itertools.permutations(range(rank), 2):
            n = a[p]
            if n <= 1 or b[p] != 1 or b[q] != n or a[q] != 1:
                continue
            if p < rank - len(shapes[j]) or q < rank - len(shapes[i]):  # an implicit axis
                pair = tuple(map(max, a, b))[rank - max(len(shapes[i]), len(shapes[j])) :]
                found.append(
                    f"`{names[i]}` {shapes[i]} and `{names[j]}` {shapes[j]} broadcast to "
                    f"{pair}: both have the size {n}, but on different axes, so every element "
                    f"of one is combined with every element of the other (an outer product). "
                    f"If you meant them element by element, give them the same shape first "
                    f"(e.g. .reshape(-1) or [:, None] on one of them)."
                )
    return list(dict.fromkeys(found + _per_row(shapes, names, last=True)))


def check_broadcast(*arrays_or_shapes: Any, names: Sequence[str] | None = None) -> tuple[int, ...]:
    """The broadcast shape of arrays, numbers or shapes (``names`` them), or why there is none.

    Args:
      *arrays_or_shapes: arrays (anything with ``.shape``), numbers or shapes (tuples of ints).
      names: one name per operand for the messages (default ``a``, ``b``, ...).

    Returns:
      The broadcast shape; a broadcast that is almost always a mistake (an outer product, a
      per-row mask on the last axis) also warns, :class:`SilentBroadcastWarning`.

    Raises:
      BroadcastError: the shapes do not broadcast (a ``ValueError``; the message aligns them).
      ValueError: ``names`` does not have one entry per operand, or a shape has a negative size.
      TypeError: an operand is neither an array, a number nor a shape.

    Example:
      >>> check_broadcast((8, 1, 3), (5, 1))
      (8, 5, 3)
      >>> check_broadcast((4, 3), (4,))
      Traceback (most recent call last):
      ...
      batchlab.batching.broadcasting.BroadcastError: shapes (4, 3) and (4,) do not broadcast...
    """
    shapes, names = _operands(arrays_or_shapes, names)
    rank = max((len(s) for s in shapes), default=0)
    sizes = {ax: {s[ax] for s in shapes if len(s) >= -ax} - {1} for ax in range(-rank, 0)}
    conflicts = {ax for ax, found in sizes.items() if len(found) > 1}
    if conflicts:
        named = list(zip(names, shapes, strict=True))
        details = [
            f"axis {ax}: "
            + ", ".join(f"`{nm}` has {s[ax]}" for nm, s in named if len(s) >= -ax and s[ax] != 1)
            for ax in sorted(conflicts)
        ]
        raise BroadcastError(
            f"shapes {' and '.join(map(str, shapes))} do not broadcast. Aligned from the right, "
            f"sizes on one axis must be equal or 1:\n{_aligned(shapes, names, conflicts)}\n"
            f"{'; '.join(details)} (different sizes, none of them 1)."
            + "".join(" " + hint for hint in _per_row(shapes, names, last=False)[:1])
        )
    for message in _traps(shapes, names, rank):
        warnings.warn(message, SilentBroadcastWarning, stacklevel=2)
    return np.broadcast_shapes(*shapes)


def aligned(*arrays_or_shapes: Any, names: Sequence[str] | None = None) -> str:
    """The operands' shapes right-aligned as broadcasting sees them.

    Example:
      >>> print(aligned((8, 1, 3), (5, 1), names=["x", "y"]))
        x:      8  1  3
        y:         5  1
        axis   -3 -2 -1
    """
    return _aligned(*_operands(arrays_or_shapes, names), set())


def plot_outer_trap(result: Any, intended: Any, *, title: str = "pred - labels"):
    """Shows an accidental ``(n, n)`` broadcast next to the ``(n,)`` values that were meant."""
    result, intended = np.asarray(result), np.asarray(intended)
    fig = Figure(figsize=(7.6, 4.4), layout="constrained")
    ax, ax_i = fig.subplots(1, 2, width_ratios=[result.shape[1], 1.6])
    vmax = float(np.abs(result).max()) or 1.0
    image = ax.imshow(result, cmap="RdBu", vmin=-vmax, vmax=vmax)
    for k in range(min(result.shape)):
        label = "the values meant (diagonal)" if k == 0 else None
        square = Rectangle((k - 0.5, k - 0.5), 1, 1, fill=False, ec="black", lw=2.5, label=label)
        ax.add_patch(square)
    ax.set(title=f"{title}: shape {result.shape}", xlabel="axis 1 (j)", ylabel="axis 0 (i)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=10, frameon=False)
    ax_i.imshow(intended.reshape(-1, 1), cmap="RdBu", vmin=-vmax, vmax=vmax)
    ax_i.set(title=f"intended\nshape {intended.shape}", xticks=[])
    fig.colorbar(image, ax=[ax, ax_i], label="value (same colour scale)", shrink=0.85)
    return fig
