"""Human units (B/KiB/MiB/GiB, ns/µs/ms/s) and the small tables every result type shows."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence

BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
SECOND_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_CELL = "<{0} style='{1}padding:2px 8px'>{2}</{0}>"


def format_bytes(n: float | None) -> str:
    """A byte count in binary units ("1.50 KiB"); "n/a" for ``None`` (a figure not given).

    Args:
      n: bytes (negative keeps its sign), or ``None``.

    Returns:
      The count with two decimals in B, KiB, MiB, GiB or TiB.

    Example:
      >>> format_bytes(1536), format_bytes(3 * 2**30), format_bytes(None)
      ('1.50 KiB', '3.00 GiB', 'n/a')
    """
    if n is None:
        return "n/a"
    sign, n = "-" if n < 0 else "", abs(float(n))
    if n < 1024:
        return f"{sign}{n:.0f} B"
    exp = min(int(math.log(n, 1024)), len(BYTE_UNITS) - 1)
    value = n / 1024**exp
    if value >= 1023.995 and exp < len(BYTE_UNITS) - 1:  # rounding would print 1024.00
        exp, value = exp + 1, value / 1024
    return f"{sign}{value:.2f} {BYTE_UNITS[exp]}"


def format_seconds(t: float | None) -> str:
    """A duration with three significant digits ("1.23 ms", "250 ns").

    Args:
      t: seconds, or ``None``.

    Returns:
      The duration in s, ms, µs or ns; "n/a" for ``None``.

    Example:
      >>> format_seconds(0.00123), format_seconds(2.5e-7)
      ('1.23 ms', '250 ns')
    """
    if t is None:
        return "n/a"
    unit, scale = next((u, s) for u, s in SECOND_UNITS if abs(t) >= s or u == "ns")
    value = float(t) / scale
    digits = 2 if abs(value) < 10 else (1 if abs(value) < 100 else 0)
    return f"{value:.{digits}f} {unit}"


def format_count(n: float | None) -> str:
    """A large count (flops, items/s) with k/M/G/T suffixes ("1.23 M", "12").

    Args:
      n: the count, or ``None``.

    Returns:
      The count with two decimals and a suffix from 1,000 up; "n/a" for ``None``.

    Example:
      >>> format_count(1234567), format_count(12)
      ('1.23 M', '12')
    """
    if n is None:
        return "n/a"
    n = float(n)
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f}" if n == int(n) else f"{n:.3g}"


def text_table(rows: Sequence[Sequence[object]], header: Sequence[str] | None = None) -> str:
    """Left-aligned plain-text table (what ``__repr__`` prints).

    Args:
      rows: the rows, each a sequence of cells (printed with ``str``).
      header: column names, underlined with dashes.

    Returns:
      The table's lines joined by newlines; "" when there is neither row nor header.

    Example:
      >>> print(text_table([("a", 1), ("bb", 22)], header=("name", "n")))
      name  n
      ----  --
      a     1
      bb    22
    """
    cells = [[str(c) for c in r] for r in ([header] if header else []) + [list(r) for r in rows]]
    if not cells:
        return ""
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(max(map(len, cells)))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in cells]
    if header:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def html_table(
    rows: Iterable[Sequence[object]],
    header: Sequence[str] | None = None,
    caption: str | None = None,
) -> str:
    """A small, escaped HTML table for ``_repr_html_``.

    Args:
      rows: the rows, each a sequence of cells (``str`` of each, HTML-escaped).
      header: column names (``<th>`` cells).
      caption: a bold caption above the table.

    Returns:
      One ``<table>`` element as a string.

    Example:
      >>> print(html_table([("a<b", 1)]))
      <table ...><tr><td ...>a&lt;b</td><td ...>1</td></tr></table>
    """
    out = ['<table style="border-collapse:collapse;font-family:monospace">']
    if caption:
        style = "text-align:left;font-weight:bold"
        out.append(f'<caption style="{style}">{html.escape(caption)}</caption>')
    lines = [("th", "text-align:left;", header)] if header else []
    for tag, style, row in lines + [("td", "", r) for r in rows]:
        cells = "".join(_CELL.format(tag, style, html.escape(str(c))) for c in row)
        out.append(f"<tr>{cells}</tr>")
    out.append("</table>")
    return "".join(out)


class Rows:
    """Text and HTML reprs from one ``_rows()`` (cells in human units) and ``_title()``.

    Optional: ``_header``, ``_inline`` (a one-line ``label=value`` repr), ``_tables()`` (several
    ``(caption, rows, header)``), ``_notes()`` (lines after the table). A ``NamedTuple`` assigns
    ``__repr__ = Rows.__repr__`` and ``_repr_html_ = Rows._repr_html_`` (hence the ``getattr``s).
    """

    _header: tuple[str, ...] = ("figure", "value")

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "__repr__" not in cls.__dict__:  # set before @dataclass adds a repr of its own
            cls.__repr__ = Rows.__repr__

    def _title(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        if hasattr(self, "_tables"):
            return "\n\n".join(f"{c}:\n{text_table(r, h)}" for c, r, h in self._tables())
        rows = self._rows()
        if getattr(self, "_inline", False):
            cells = ", ".join(f"{k}={v}" for k, v in rows)
            return f"{type(self).__name__}({self._title()}: {cells})"
        table = text_table(rows, header=getattr(self, "_header", Rows._header))
        notes = getattr(self, "_notes", tuple)()
        return "\n".join([f"{type(self).__name__}: {self._title()}\n{table}", *notes])

    def _repr_html_(self) -> str:
        if hasattr(self, "_tables"):
            tables = self._tables()
        else:
            tables = [(self._title(), self._rows(), getattr(self, "_header", Rows._header))]
        notes = getattr(self, "_notes", tuple)()
        return "".join(html_table(r, header=h, caption=c) for c, r, h in tables) + "".join(
            f"<pre>{html.escape(n)}</pre>" for n in notes
        )
