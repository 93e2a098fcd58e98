"""Predicted times as floats, or as arrays when a batch of rows is predicted at once."""

from __future__ import annotations

from typing import Any

import numpy as np


def seconds(t: Any) -> Any:
    """``float(t)`` for a scalar; a float array for an array (a batch of rows, see
    ``roofline.calibration.batch``)."""
    a = np.asarray(t, dtype=float)
    return float(a) if a.ndim == 0 else a
