"""Predict measured rows with the public API and summarise the error per family."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..efficiency import EfficiencyLike
from ..ops.registry import row_entry
from .read import read_measurements


@dataclass(frozen=True)
class Comparison:
    """One measured time next to the model's prediction.

    ``error`` = predicted / measured - 1 (positive: the model is too slow).
    """

    family: str
    id: str
    op: str
    measured_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        """Relative error of the prediction, predicted / measured - 1."""
        return self.predicted_s / self.measured_s - 1.0


def compare(
    measurements: str | Path | Iterable[dict[str, Any]],
    hardware: Any = None,
    efficiency: EfficiencyLike = "default",
    *,
    skipped: list[tuple[str, str]] | None = None,
    errors: list[tuple[str, str]] | None = None,
) -> list[Comparison]:
    """Predict every row the model covers.

    Parameters
    ----------
    measurements : path or iterable of dict
        A JSON-lines file in the shared schema, or its rows.
    hardware : Hardware or str, optional
        Accelerator to predict on; default: each row's ``hardware`` field.
    efficiency : str or Efficiency
        Efficiency model.
    skipped : list, optional
        Receives ``(row id, reason)`` for rows whose op no predictor covers.
    errors : list, optional
        When given, a row whose prediction raises is recorded here as ``(row id, message)``
        instead of raising.

    Returns
    -------
    list of Comparison
        Some rows give several comparisons (e.g. eager wall time and CUDA-graph time).
    """
    out: list[Comparison] = []
    for row in read_measurements(measurements):
        hw = hardware if hardware is not None else row.get("hardware")
        entry = row_entry(row["op"])
        predictor = entry.predictor if entry is not None else None
        rid = str(row.get("id", ""))
        if predictor is None:
            if skipped is not None:
                skipped.append((rid, f"no model for op {row['op']!r}"))
            continue
        try:
            predicted_rows = predictor(row, hw, efficiency)
        except Exception as exc:
            if errors is None:
                raise
            errors.append((rid, f"{row['family']}: {type(exc).__name__}: {exc}"))
            continue
        for family, measured, predicted in predicted_rows:
            out.append(Comparison(family, rid, row["op"], float(measured), float(predicted)))
    return out


def summary(comparisons: Iterable[Comparison]) -> dict[str, dict[str, float]]:
    """Per family: rows, median and 90th-percentile absolute relative error, median signed."""
    groups: dict[str, list[float]] = {}
    for c in comparisons:
        groups.setdefault(c.family, []).append(c.error)
    result = {}
    for family in sorted(groups):
        err = np.array(groups[family])
        result[family] = {
            "rows": float(len(err)),
            "median": float(np.median(np.abs(err))),
            "p90": float(np.percentile(np.abs(err), 90)),
            "bias": float(np.median(err)),
        }
    return result
