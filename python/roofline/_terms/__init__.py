"""Implementation-aware terms of the default model, one module per area.

Each area (``gemm``, ``attention``, ``row_ops``, ``cast``, ``host``) has a module here whose
``core_terms(hw)`` returns the core struct of fitted terms for an accelerator, read from
``data/terms/<area>.json`` (written by ``benchmarks/calibrate.py``). Terms are physics (SM
counts, clocks, tiles, bandwidth curves, latencies), never per-shape tables, so they transfer
to accelerators without measurements.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from . import attention, cast, gemm, host, row_ops

AREAS = ("gemm", "attention", "row_ops", "cast", "host")

_DIR = Path(__file__).resolve().parents[1] / "data" / "terms"


@functools.cache
def data(area: str) -> dict[str, Any]:
    """The fitted terms of one area (loaded once; empty when the file is absent)."""
    path = _DIR / f"{area}.json"
    if not path.exists():
        return {}
    with open(path) as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def apply(ceff: Any, hw: Any, docs: dict[str, dict[str, Any]] | None = None) -> Any:
    """Set every area's fitted terms for ``hw`` on the core efficiency ``ceff``; return it.

    ``docs`` maps an area to its terms document (default: the packaged files).
    """
    doc = (lambda area: docs[area]) if docs is not None else data
    ceff.gemm = gemm.core_terms(hw, doc("gemm"))
    ceff.attention = attention.core_terms(hw, doc("attention"))
    ceff.row_ops = row_ops.core_terms(hw, doc("row_ops"))
    ceff.cast = cast.core_terms(hw, doc("cast"))
    ceff.host = host.core_terms(hw, doc("host"))
    return ceff
