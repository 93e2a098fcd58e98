"""The packaged parameter documents, each read once.

``data/calibration.json`` (written by ``benchmarks/calibrate.py``): achievable fractions of
the dense peak per accelerator and peak class, per-vendor fallbacks, the streaming and GEMM
globals (``params``) and the FlashAttention-2 fractions. ``data/terms/<area>.json`` (written by
``benchmarks/fit_<area>.py``): the implementation terms of each area of :data:`TERM_AREAS`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

__all__ = ["TERM_AREAS", "calibration", "clear", "terms"]

_DATA = Path(__file__).resolve().parents[1] / "data"

#: Areas with a packaged terms document ``data/terms/<area>.json``.
TERM_AREAS = ("gemm", "attention", "row_ops", "cast", "host")


@functools.cache
def calibration() -> dict[str, Any]:
    """The packaged ``calibration.json`` (loaded once; do not mutate)."""
    with open(_DATA / "calibration.json") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


@functools.cache
def terms(area: str) -> dict[str, Any]:
    """The packaged terms document of one area (loaded once; empty when the file is absent)."""
    path = _DATA / "terms" / f"{area}.json"
    if not path.exists():
        return {}
    with open(path) as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def clear() -> None:
    """Forget the loaded documents (after a fit rewrote one)."""
    calibration.cache_clear()
    terms.cache_clear()
