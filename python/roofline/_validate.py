"""Boundary checks: every public function validates its inputs here before calling C++."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

#: Largest dimension accepted: beyond 2**53 a float64 no longer holds every integer.
MAX_DIM = 2**53

ArrayLike = Any


def positive_int_array(fn: str, name: str, value: ArrayLike) -> np.ndarray:
    """Return ``value`` as a float64 array of positive integers, or raise naming ``fn``/``name``.

    Scalars give 0-d arrays. Booleans, strings and objects raise ``TypeError``; zero,
    negative, NaN, infinite, non-integral or > 2**53 values raise ``ValueError``.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn}: {name} must be a positive integer, got bool {value!r}")
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{fn}: {name} must be a positive integer, got string {value!r}")
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Real):
        raise TypeError(f"{fn}: {name} must be a positive integer, got {value!r}")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic objects
        raise TypeError(f"{fn}: {name} must be a positive integer, got {value!r}") from exc
    if arr.dtype.kind not in "iuf":
        raise TypeError(
            f"{fn}: {name} must be a positive integer or an array of them, "
            f"got {_show(value)} (dtype {arr.dtype})"
        )
    if arr.size == 0:
        raise ValueError(f"{fn}: {name} must not be an empty array")
    farr = arr.astype(np.float64)
    bad = ~np.isfinite(farr) | (farr <= 0) | (farr != np.floor(farr)) | (farr > MAX_DIM)
    if arr.dtype.kind in "iu":
        bad |= arr > MAX_DIM
    if bad.any():
        first = arr.flat[int(np.flatnonzero(bad)[0])] if arr.ndim else arr.item()
        reason = "a positive integer"
        if np.isfinite(float(first)) and float(first) > MAX_DIM:
            reason = f"a positive integer no larger than 2**53 ({MAX_DIM})"
        raise ValueError(f"{fn}: {name} must be {reason}, got {_show(first)}")
    return farr


def positive_float(fn: str, name: str, value: Any, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a finite positive float, or raise naming ``fn``/``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{fn}: {name} must be a number, got {_show(value)}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        kind = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"{fn}: {name} must be {kind} finite number, got {_show(value)}")
    return v


def broadcast(fn: str, **arrays: np.ndarray) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """Broadcast named arrays together; return flat contiguous copies and the common shape."""
    try:
        out = np.broadcast_arrays(*arrays.values())
    except ValueError as exc:
        shapes = ", ".join(f"{k}{tuple(v.shape)}" for k, v in arrays.items())
        raise ValueError(f"{fn}: arguments do not broadcast together: {shapes}") from exc
    shape = out[0].shape
    return [np.ascontiguousarray(a, dtype=np.float64).ravel() for a in out], shape


def one_of(fn: str, name: str, value: Any, choices: dict[str, Any]) -> Any:
    """Look ``value`` up case-insensitively in ``choices``; KeyError with close matches if absent."""
    if not isinstance(value, str):
        raise TypeError(f"{fn}: {name} must be a string, got {_show(value)}")
    key = value.strip().lower()
    if key in choices:
        return choices[key]
    import difflib

    close = difflib.get_close_matches(key, list(choices), n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise KeyError(
        f"{fn}: unknown {name} {value!r}{hint} (choices: {', '.join(sorted(choices))})"
    )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
