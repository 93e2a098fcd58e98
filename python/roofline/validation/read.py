"""Read measurement files (JSON lines in the shared schema) with clear errors."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_REQUIRED = ("family", "op", "args", "measured")


def read_measurements(source: str | Path | Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of a measurement file, or of an iterable of row dicts, checked.

    Raises
    ------
    FileNotFoundError
        The path does not exist.
    ValueError
        A line that is not JSON, or a row missing ``family``, ``op``, ``args`` or
        ``measured``, or whose ``measured`` is not a positive finite number; the message
        names the file and line.
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        rows: list[dict[str, Any]] = []
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"read_measurements: {path}: not UTF-8 text ({exc})") from None
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as exc:  # bad JSON, deep nesting, huge ints
                raise ValueError(
                    f"read_measurements: {path}:{number}: not JSON ({str(exc)[:100]})"
                ) from None
            rows.append(_check(row, f"{path}:{number}"))
        return rows
    return [_check(row, f"row {i}") for i, row in enumerate(source)]


def _check(row: Any, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise ValueError(
            f"read_measurements: {where}: a row must be a JSON object, got {type(row).__name__}"
        )
    missing = [k for k in _REQUIRED if k not in row]
    if missing:
        raise ValueError(f"read_measurements: {where}: missing {', '.join(missing)}")
    if not isinstance(row["args"], dict):
        raise ValueError(
            f"read_measurements: {where}: args must be an object, got {row['args']!r:.60}"
        )
    value = row["measured"]
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not isinstance(value, (int, float)) or not math.isfinite(number) or number <= 0:
        raise ValueError(
            f"read_measurements: {where}: measured must be a positive finite number, got {value!r}"
        )
    return row
