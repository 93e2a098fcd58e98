"""Argument checks at the boundary: every public function checks its inputs here before calling
C++ (names the argument and the value in the error)."""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any

import numpy as np

from . import _core
from ._errors import ArgumentTypeError, ArgumentValueError

#: Largest dimension accepted: beyond 2**53 a float64 no longer holds every integer.
MAX_DIM = 2**53

ArrayLike = Any

#: A scalar dimension: op functions return ``Estimate[float]`` when every dimension is one.
Scalar = int | float | np.integer | np.floating


def positive_int_array(fn: str, name: str, value: ArrayLike) -> np.ndarray:
    """Return ``value`` as a float64 array of positive integers, or raise naming ``fn``/``name``.

    Scalars give 0-d arrays. Booleans, strings, complex numbers and objects raise
    ``TypeError``; zero, negative, NaN, infinite, non-integral or > 2**53 values and empty
    arrays raise ``ValueError``. The message names the first bad element (and its index).
    """
    return _int_array(fn, name, value, minimum=1)


def nonnegative_int_array(fn: str, name: str, value: ArrayLike) -> np.ndarray:
    """As :func:`positive_int_array`, but zero is allowed."""
    return _int_array(fn, name, value, minimum=0)


def _int_array(fn: str, name: str, value: ArrayLike, *, minimum: int) -> np.ndarray:
    what = "a positive integer" if minimum > 0 else "a non-negative integer"
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(fn, name, f"must be {what}, got bool {bool(value)!r}")
    if isinstance(value, (str, bytes)):
        raise ArgumentTypeError(fn, name, f"must be {what}, got string {value!r}")
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Real):
        raise ArgumentTypeError(fn, name, f"must be {what}, got {_show(value)}")
    if isinstance(value, numbers.Real) and not isinstance(value, (int, float, np.number)):
        value = float(value)  # e.g. fractions.Fraction: checked as the float it stands for
    if isinstance(value, (list, tuple)) and contains_bool(value):
        # numpy would silently turn [True, 2] into [1, 2]
        raise ArgumentTypeError(fn, name,
                                f"must be {what} or an array of them, got {_show(value)}")
    # numpy.ma is looked up, not imported (no masked array exists before someone imports
    # it), and read with getattr: another thread may be importing it right now (a first
    # pandas import does), when the module is in sys.modules but its names are not yet set.
    masked = getattr(sys.modules.get("numpy.ma.core"), "MaskedArray", None)
    if masked is not None and isinstance(value, masked) and bool(np.any(value.mask)):
        raise ArgumentValueError(fn, name, f"must not have masked elements, got {_show(value)}")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged nested lists, exotic objects
        raise ArgumentTypeError(
            fn, name, f"must be {what} or an array of them, got {_show(value)}") from exc
    if arr.dtype.kind == "O" and arr.size and all(is_int(v) for v in arr.flat):
        # Python ints beyond int64 (e.g. 2**70) land in object arrays: check them exactly.
        _check_ints(fn, name, arr, what, minimum)
        return arr.astype(np.float64)
    if arr.dtype.kind not in "iuf":
        raise ArgumentTypeError(
            fn, name, f"must be {what} or an array of them, got {_show(value)} "
            f"(dtype {arr.dtype})")
    if arr.size == 0:
        raise ArgumentValueError(fn, name, f"must not be an empty array, got {_show(value)}")
    farr = arr.astype(np.float64)
    index = _first_bad(farr.reshape(-1), arr.reshape(-1) if arr.dtype.kind in "iu" else None,
                       minimum)
    if index >= 0:
        _raise_bad(fn, name, arr, index, arr.flat[index].item(), what)
    return farr


def checked_int_arrays(minimum: int, *values: np.ndarray) -> list[np.ndarray] | None:
    """The 1-d numeric arrays ``values`` as float64, or None unless every element is an
    integer in [minimum, MAX_DIM] (the arrays :func:`positive_int_array` /
    :func:`nonnegative_int_array` accept and return, checked in one compiled pass each):
    the internal callers' shortcut, which falls back to the full check (and its message)
    on None."""
    out = []
    for v in values:
        if v.ndim != 1 or v.size == 0 or v.dtype.kind not in "iuf":
            return None
        f = v.astype(np.float64)
        if _first_bad(f, v if v.dtype.kind in "iu" else None, minimum) >= 0:
            return None
        out.append(f)
    return out


def _first_bad(flat: np.ndarray, ints: np.ndarray | None, minimum: int) -> int:
    """Index of the first element of ``flat`` (float64) that is not an integer in
    [minimum, MAX_DIM] (NaN and infinities included; ``ints``, the integer array it came
    from, also above MAX_DIM), or -1: one compiled pass over the values
    (``_core.first_bad_extent``), plus one numpy pass over integer input."""
    index = int(_core.first_bad_extent(flat, float(minimum), float(MAX_DIM)))
    if ints is not None:
        above = np.flatnonzero(ints > MAX_DIM)
        if above.size and (index < 0 or above[0] < index):
            index = int(above[0])
    return index


def contains_bool(value: list[Any] | tuple[Any, ...]) -> bool:
    """True when a (nested) list or tuple holds a bool, which numpy would turn into 0 or 1."""
    return any(
        isinstance(v, (bool, np.bool_)) or (isinstance(v, (list, tuple)) and contains_bool(v))
        for v in value
    )


def is_int(v: Any) -> bool:
    """True for a Python or numpy integer that is not a bool."""
    return isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_))


def positive_int(fn: str, name: str, value: Any) -> int:
    """Return ``value`` (a Python or numpy integer, not a bool) as an int >= 1, or raise naming
    ``fn``/``name``: TypeError for anything else, ValueError below 1."""
    if not is_int(value):
        raise ArgumentTypeError(fn, name, f"must be a positive integer, got {value!r}")
    if int(value) < 1:
        raise ArgumentValueError(fn, name, f"must be a positive integer, got {value!r}")
    return int(value)


def _check_ints(fn: str, name: str, arr: np.ndarray, what: str, minimum: int) -> None:
    for index, v in enumerate(arr.flat):
        if int(v) < minimum or int(v) > MAX_DIM:
            _raise_bad(fn, name, arr, index, int(v), what)


def _raise_bad(fn: str, name: str, arr: np.ndarray, index: int, first: Any, what: str) -> None:
    reason = what
    too_big = isinstance(first, int) or (isinstance(first, float) and math.isfinite(first))
    if too_big and first > MAX_DIM:
        reason = f"{what} no larger than 2**53 ({MAX_DIM})"
    where = ""
    if arr.ndim:
        pos = np.unravel_index(index, arr.shape)
        where = f" (at {name}[{', '.join(str(int(i)) for i in pos)}])"
    raise ArgumentValueError(fn, name, f"must be {reason}, got {_show(first)}{where}")


#: Bounds of the real-valued inputs (rates, times, fractions), chosen so that every estimate
#: stays a finite positive float: rates (FLOP/s, bytes/s) up to 1e30, times up to 1e6 s, and
#: nothing positive below 1e-30 (subnormals such as 5e-324 would turn a quotient into inf).
MAX_REAL = 1e30
MIN_POSITIVE = 1e-30


def positive_float(fn: str, name: str, value: Any, *, allow_zero: bool = False,
                   low: float = MIN_POSITIVE, high: float = MAX_REAL) -> float:
    """Return ``value`` as a finite positive float in ``[low, high]`` (or 0 where allowed), or
    raise naming ``fn``/``name``: TypeError for a non-number, ValueError otherwise (integers
    too large for a float included)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(fn, name, f"must be a number, got {_show(value)}")
    try:
        v = float(value)
    except (OverflowError, ValueError):
        v = math.inf
    kind = "a non-negative" if allow_zero else "a positive"
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ArgumentValueError(fn, name, f"must be {kind} finite number, got {_show(value)}")
    if v != 0 and not (low <= v <= high):
        raise ArgumentValueError(
            fn, name, f"must be {kind} number in [{low:g}, {high:g}], got {_show(value)}")
    return v


def finite_result(fn: str, time_s: Any) -> None:
    """Raise ValueError when an estimate is not a finite positive time: the inputs combine to
    a result beyond float range (e.g. 2**53-sized dimensions on a 1 FLOP/s accelerator)."""
    t = np.asarray(time_s, dtype=np.float64)
    bad = ~np.isfinite(t) | (t < 0)
    if bad.any():
        raise ValueError(
            f"{fn}: the inputs give a time outside float range ({t.ravel()[np.flatnonzero(bad)[0]]}"
            f" s): sizes, rates or efficiencies are too extreme together"
        )


def flag(fn: str, name: str, value: Any) -> bool:
    """Return ``value`` as a bool; a Python or numpy bool only, else TypeError naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(fn, name, f"must be a bool, got {value!r}")
    return bool(value)


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
    """Look ``value`` up case-insensitively in ``choices``; else raise
    :class:`~roofline.UnknownNameError` (a KeyError and a ValueError) with close matches."""
    if not isinstance(value, str):
        raise ArgumentTypeError(fn, name, f"must be a string, got {_show(value)}")
    key = value.strip().lower()
    if key in choices:
        return choices[key]
    from ._errors import UnknownNameError, close_matches

    close = close_matches(key, choices)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownNameError(
        f"{fn}: unknown {name} {value!r}{hint} (choices: {', '.join(sorted(choices))})", close,
        argument=name, function=fn,
    )


def _show(value: Any) -> str:
    if isinstance(value, np.generic):  # numpy 2 reprs read np.int64(0); show the plain value
        value = value.item()
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
