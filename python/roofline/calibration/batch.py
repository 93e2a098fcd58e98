"""Predict measurement rows in batches: one array call per family and fixed arguments.

``roofline.validation.compare`` predicts one row at a time through the public API; a fit
re-predicts the same rows thousands of times. Here rows of one op and family whose non-numeric
arguments agree (dtype, backend, causal, granularity, ...) become one *unit*: the validation
predictor of that op is called once with numpy arrays for the numeric arguments (every op
broadcasts), giving exactly the numbers ``compare`` gives row by row. Rows that cannot be
stacked (list arguments such as grouped-GEMM ``counts``, launch chains with their CUDA-graph
times) are units of one row; float8 training linears are stacked with their step time
(``ops.registry.measured.float8.step_s``) and ``wall_s`` as arrays. A unit whose batched call
fails is split into rows, and rows whose prediction fails are reported, as ``compare`` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ops.registry import row_entry
from ..ops.registry.measured.float8 import step_s

__all__ = ["Entry", "Unit", "build_units"]

EFFICIENCY = "default"


@dataclass
class Entry:
    """One output of a unit: a family's measured values (the predictor may rename the family,
    e.g. ``gpu_float8_linear_kernels (rowwise)``), with the rows they come from."""

    family: str
    measured: np.ndarray
    ids: list[str]
    shapes: list[str]


@dataclass
class Unit:
    """Rows predicted by one call; ``entries`` is filled by the first :meth:`predict`."""

    group: str
    rows: list[dict[str, Any]]
    call: Callable[[Any], list[tuple[str, Any, Any]]]
    entries: list[Entry] = field(default_factory=list)

    def predict(self, hw: Any) -> list[np.ndarray]:
        """Predicted seconds of each entry on ``hw`` (arrays aligned with ``entries``)."""
        out = self.call(hw)
        n = len(self.rows)
        preds = [np.broadcast_to(np.asarray(p, dtype=float), (n,)).astype(float)
                 for _, _, p in out]
        if not self.entries:
            ids = [str(r["id"]) for r in self.rows]
            shapes = [_shape(r) for r in self.rows]
            self.entries = [Entry(fam, np.broadcast_to(np.asarray(m, dtype=float), (n,)).copy(),
                                  ids, shapes) for fam, m, _ in out]
        elif len(preds) != len(self.entries):
            raise RuntimeError("calibrate: a unit's predictor changed its outputs")
        return preds


def _shape(row: dict[str, Any]) -> str:
    return json.dumps(row["args"], sort_keys=True, default=str)


def _scalar(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _key(row: dict[str, Any]) -> tuple[Any, ...] | None:
    """Rows with equal keys are predicted by one array call (None: alone)."""
    entry = row_entry(row["op"])
    if entry is None or not entry.vector:
        return None
    fixed, numeric = [], []
    for k, v in sorted(row["args"].items()):
        if _scalar(v):
            numeric.append(k)
        elif v is None or isinstance(v, (str, bool)):
            fixed.append((k, v))
        else:
            return None
    extras = tuple(k for k in ("wall_s", "graph_s", "kernels") if row.get(k) is not None)
    return (row["op"], str(row["family"]), row.get("backend"), tuple(fixed), tuple(numeric),
            extras)


def _stacked(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One row whose numeric arguments and ``measured`` are arrays over ``rows``."""
    first = rows[0]
    args = {k: (np.array([r["args"][k] for r in rows]) if _scalar(v) else v)
            for k, v in first["args"].items()}
    out = dict(first, args=args, measured=np.array([r["measured"] for r in rows], dtype=float))
    if first["op"] == "linear_train_kernels":
        out.pop("kernels", None)
        out["measured"] = np.array([step_s(r) for r in rows])
        if first.get("wall_s") is not None:
            out["wall_s"] = np.array([r["wall_s"] for r in rows], dtype=float)
    return out


def _caller(predictor: Any, row: dict[str, Any]) -> Callable[[Any], list[tuple[str, Any, Any]]]:
    def call(hw: Any) -> list[tuple[str, Any, Any]]:
        out: list[tuple[str, Any, Any]] = predictor(row, hw, EFFICIENCY)
        return out

    return call


def build_units(grouped: dict[str, list[dict[str, Any]]], hw: Any,
                failures: list[tuple[str, str]]) -> list[Unit]:
    """Units of ``grouped`` (group -> rows with ``id``), predicted once on ``hw`` (which fills
    their entries); rows whose prediction raises go to ``failures`` as (id, message)."""
    def predictor(op: str) -> Any:
        entry = row_entry(op)
        assert entry is not None
        return entry.predictor

    units: list[Unit] = []

    def single(g: str, r: dict[str, Any]) -> None:
        u = Unit(g, [r], _caller(predictor(r["op"]), r))
        try:
            u.predict(hw)
        except Exception as exc:
            failures.append((str(r["id"]), f"{r['family']}: {type(exc).__name__}: {exc}"))
            return
        units.append(u)

    for g, rows in grouped.items():
        batches: dict[Any, list[dict[str, Any]]] = {}
        for r in rows:
            k = _key(r)
            batches.setdefault(k if k is not None else ("row", r["id"]), []).append(r)
        for key, rs in batches.items():
            if key[0] == "row" or len(rs) == 1:
                single(g, rs[0])
                continue
            u = Unit(g, rs, _caller(predictor(rs[0]["op"]), _stacked(rs)))
            try:
                u.predict(hw)
                ok = len(u.entries) == len(_caller(predictor(rs[0]["op"]), rs[0])(hw))
            except Exception:
                ok = False
            if ok:
                units.append(u)
            else:  # not stackable after all: row by row
                for r in rs:
                    single(g, r)
    return units
