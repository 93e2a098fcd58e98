"""Assertions for your own pytest suites: is a measured kernel close enough to its roofline?

>>> import roofline as rl
>>> from roofline.testing import assert_efficiency
>>> e = rl.gemm(8192, 8192, 8192, dtype="bf16", hardware="H100 SXM")
>>> assert_efficiency(e, measured_s=1.6e-3, at_least=0.7)   # measured 1.6 ms: passes

Both helpers take the result first (an Estimate, a Float8Linear, a model estimate, a trace
report or anything with ``time_s`` / ``predicted_s``) and ``measured_s`` second; they raise
``AssertionError`` (so pytest shows the message as the failure, pointing at your test) and
never import torch. The pytest plugin (``roofline.pytest_plugin``, registered on install)
adds a ``roofline_hardware`` fixture and a ``roofline_gpu`` marker.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from ._errors import RooflineDeprecationWarning
from ._format import si

__all__ = ["assert_efficiency", "assert_within", "efficiency"]


def _time(fn: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{fn}: {name} must be a number of seconds, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{fn}: {name} must be a positive finite number of seconds, got {value!r}")
    return v


#: Attributes read for the predicted seconds of a result, in this order.
_TIME_ATTRS = ("time_s", "predicted_s")


def _predicted(fn: str, result: Any) -> tuple[float, str]:
    """Predicted seconds and a description of ``result``: an Estimate, a Float8Linear (its
    low-precision time), a model estimate, anything with a scalar ``time_s`` or
    ``predicted_s`` (a trace report), or a plain number of seconds."""
    t = result
    for attr in _TIME_ATTRS:
        if hasattr(result, attr):
            t = getattr(result, attr)
            break
    if hasattr(t, "shape") and getattr(t, "shape", ()) != ():
        raise ValueError(f"{fn}: result must be a scalar estimate, got one of shape {t.shape}")
    what = getattr(result, "label", "") or type(result).__name__
    if isinstance(t, bool) or not isinstance(t, numbers.Real):
        raise TypeError(
            f"{fn}: result must be an estimate (an object with time_s or predicted_s) or a "
            f"number of seconds, got {result!r}"
        )
    return _time(fn, "the predicted time", t), what


def _args(fn: str, result: Any, measured_s: Any) -> tuple[Any, float]:
    """(result, measured seconds): ``measured_s=None`` takes ``result.measured_s`` (a trace
    report carries its own); the old order ``(measured_s, estimate)`` is swapped, with a
    DeprecationWarning, when the first argument is a number and the second is not."""
    if _is_number(result) and measured_s is not None and not _is_number(measured_s):
        warnings.warn(
            f"{fn}(measured_s, estimate) is deprecated: pass the estimate first, "
            f"{fn}(estimate, measured_s=...)", RooflineDeprecationWarning, stacklevel=3,
        )
        result, measured_s = measured_s, result
    if measured_s is None:
        measured_s = getattr(result, "measured_s", None)
        if measured_s is None:
            raise TypeError(f"{fn}: measured_s is required (the result has no measured_s)")
    return result, _time(fn, "measured_s", measured_s)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def efficiency(result: Any, measured_s: float | None = None) -> float:
    """Predicted over measured time: 1.0 means the kernel runs exactly as fast as the model.

    Parameters
    ----------
    result : Estimate, Float8Linear, ModelEstimate, object with ``time_s`` or
        ``predicted_s``, or float
        The prediction (``rl.gemm(...)``, a float8 linear's low-precision time, a model
        estimate, a trace report, or seconds).
    measured_s : float, optional
        Measured time in seconds; default ``result.measured_s`` (a trace report's).

    Notes
    -----
    ``efficiency = predicted / measured_s``. With ``efficiency="peak"`` estimates this
    is the fraction of the datasheet roofline reached.
    """
    fn = "efficiency"
    result, meas = _args(fn, result, measured_s)
    pred, _ = _predicted(fn, result)
    return pred / meas


def _detail(estimate: Any, measured_s: float) -> str:
    parts = []
    flops = getattr(estimate, "flops", None)
    nbytes = getattr(estimate, "bytes", None)
    if isinstance(flops, numbers.Real) and float(flops) > 0:
        parts.append(f"achieved {si(float(flops) / measured_s, 'FLOP/s')}")
    if isinstance(nbytes, numbers.Real) and float(nbytes) > 0:
        parts.append(f"{si(float(nbytes) / measured_s, 'B/s')}")
    bound = getattr(estimate, "bound", None)
    if isinstance(bound, str):
        parts.append(f"the model says {bound}-bound")
    return "; ".join(parts)


def _positive(fn: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
        math.isfinite(float(value)) and float(value) > 0
    ):
        raise ValueError(f"{fn}: {name} must be a positive number, got {value!r}")
    return float(value)


def assert_efficiency(result: Any, measured_s: float | None = None,
                      at_least: float = 0.7) -> None:
    """Assert a measured kernel reaches at least ``at_least`` of its predicted speed.

    Parameters
    ----------
    result : Estimate, Float8Linear, ModelEstimate, object with ``time_s`` or
        ``predicted_s``, or float
        The prediction (a Float8Linear is judged by its low-precision time ``fp8_s``).
    measured_s : float, optional
        Measured time in seconds; default ``result.measured_s`` (a trace report's).
    at_least : float
        Required ``predicted / measured_s``, in (0, ∞) (0.7: within 70 % of the model).

    Raises
    ------
    AssertionError
        With the measured and predicted times, the efficiency, the achieved FLOP/s and
        bytes/s and the bound. The frames of this function are hidden from pytest's
        traceback, so the failure points at your test.

    Notes
    -----
    Passes when ``predicted / measured_s >= at_least``; a kernel faster than the model always
    passes. ``assert_efficiency(e, measured_s=t)`` is the order; the old
    ``assert_efficiency(t, e)`` still works and warns (DeprecationWarning).
    """
    __tracebackhide__ = True
    fn = "assert_efficiency"
    need = _positive(fn, "at_least", at_least)
    result, meas = _args(fn, result, measured_s)
    pred, what = _predicted(fn, result)
    eff = pred / meas
    if eff < need:
        detail = _detail(result, meas)
        raise AssertionError(
            f"{what}: measured {si(meas, 's')} vs predicted {si(pred, 's')}: efficiency "
            f"{eff:.1%} < required {need:.1%}"
            + (f" ({detail})" if detail else "")
        )


def assert_within(result: Any, measured_s: float | None = None, rel: float = 0.25) -> None:
    """Assert the prediction is within a relative tolerance of the measurement.

    Parameters
    ----------
    result : Estimate, Float8Linear, ModelEstimate, object with ``time_s`` or
        ``predicted_s``, or float
        The prediction.
    measured_s : float, optional
        Measured time in seconds; default ``result.measured_s`` (a trace report's).
    rel : float
        Allowed ``|predicted - measured| / measured``, > 0.

    Raises
    ------
    AssertionError
        With both times, the relative error and which way it is off (traceback hidden as in
        :func:`assert_efficiency`).
    """
    __tracebackhide__ = True
    fn = "assert_within"
    tol = _positive(fn, "rel", rel)
    result, meas = _args(fn, result, measured_s)
    pred, what = _predicted(fn, result)
    err = (pred - meas) / meas
    if abs(err) > tol:
        way = "over-predicts" if err > 0 else "under-predicts"
        raise AssertionError(
            f"{what}: predicted {si(pred, 's')} vs measured {si(meas, 's')}: the model "
            f"{way} by {abs(err):.1%} (allowed {tol:.1%})"
        )
