"""Pareto front of a table: rows no other row beats on every objective."""

from __future__ import annotations

import numpy as np

__all__ = ["pareto_front"]


def pareto_front(better_high: np.ndarray, better_low: np.ndarray) -> np.ndarray:
    """Boolean mask of rows not dominated: no other row is >= on ``better_high`` and <= on
    ``better_low`` with one of them strict. O(n log n): sort by the first objective."""
    hi = np.asarray(better_high, dtype=np.float64)
    lo = np.asarray(better_low, dtype=np.float64)
    order = np.lexsort((lo, -hi))  # best first on hi, ties by lo
    mask = np.zeros(hi.size, dtype=bool)
    best_lo = np.inf
    for i in order:
        if lo[i] < best_lo:
            mask[i] = True
            best_lo = lo[i]
    return mask
