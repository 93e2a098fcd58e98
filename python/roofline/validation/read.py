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
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(
                        f"read_measurements: {path}:{number}: not JSON ({exc})"
                    ) from None
                rows.append(_check(row, f"{path}:{number}"))
        return rows
    return [_check(row, f"row {i}") for i, row in enumerate(source)]


def _check(row: Any, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise ValueError(f"read_measurements: {where}: a row must be a JSON object, got {row!r}")
    missing = [k for k in _REQUIRED if k not in row]
    if missing:
        raise ValueError(f"read_measurements: {where}: missing {', '.join(missing)}")
    if not isinstance(row["args"], dict):
        raise ValueError(f"read_measurements: {where}: args must be an object, got {row['args']!r}")
    value = row["measured"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0:
        raise ValueError(
            f"read_measurements: {where}: measured must be a positive finite number, got {value!r}"
        )
    return row
