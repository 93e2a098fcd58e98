"""HTML for notebooks: the ``_repr_html_`` of roofline's result objects (Jupyter shows it).

Each result shows a title line (what, where), a few headline quantities, and its table (the
``to_pandas()`` frame, first rows) when it has one. Values go through :func:`html.escape`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

__all__ = ["frame_html", "headline_html", "result_html"]

#: Rows of a result's table shown in a notebook (the full table: ``.to_pandas()``).
MAX_ROWS = 12

_STYLE = "border-collapse:collapse;font-size:0.9em"


def headline_html(title: str, rows: Iterable[tuple[str, Any]]) -> str:
    """A bold title and a two-column (quantity, value) table (no table when no rows)."""
    cells = "".join(
        f"<tr><th style='text-align:left;padding:1px 8px'>{html.escape(str(k))}</th>"
        f"<td style='text-align:right;padding:1px 8px'>{html.escape(str(v))}</td></tr>"
        for k, v in rows)
    table = f"<table style='{_STYLE}'>{cells}</table>" if cells else ""
    return f"<div><b>{html.escape(title)}</b>{table}</div>"


def frame_html(df: Any, max_rows: int = MAX_ROWS) -> str:
    """A pandas DataFrame's first ``max_rows`` rows as HTML (counts as ints, as pandas keeps
    them), with a line saying how many were left out."""
    shown = df.head(max_rows)
    out = shown.to_html(index=False, border=0, float_format=lambda v: f"{v:.4g}")
    if len(df) > max_rows:
        out += f"<div><i>{len(df) - max_rows} more rows: .to_pandas()</i></div>"
    return str(out)


def result_html(title: str, rows: Iterable[tuple[str, Any]], df: Any = None) -> str:
    """:func:`headline_html` followed by :func:`frame_html` of ``df`` when given."""
    return headline_html(title, rows) + ("" if df is None else frame_html(df))
