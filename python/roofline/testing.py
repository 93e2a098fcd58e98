"""Assertions for your own pytest suites: is a measured kernel close enough to its roofline?

>>> import roofline as rl
>>> from roofline.testing import assert_efficiency
>>> e = rl.gemm(8192, 8192, 8192, dtype="bf16", hardware="H100 SXM")
>>> assert_efficiency(1.6e-3, e, at_least=0.7)      # measured 1.6 ms: passes

Both helpers raise ``AssertionError`` (so pytest shows the message as the failure) and never
import torch.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ._format import si

__all__ = ["assert_efficiency", "assert_within", "efficiency"]


def _time(fn: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{fn}: {name} must be a number of seconds, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{fn}: {name} must be a positive finite number of seconds, got {value!r}")
    return v


def _predicted(fn: str, estimate: Any) -> tuple[float, str]:
    """Predicted seconds and a description of ``estimate``: an Estimate (scalar), anything
    with a scalar ``time_s`` (a model estimate), or a plain number of seconds."""
    t = getattr(estimate, "time_s", estimate)
    if hasattr(t, "shape") and getattr(t, "shape", ()) != ():
        raise ValueError(f"{fn}: estimate must be a scalar estimate, got one of shape {t.shape}")
    what = getattr(estimate, "label", "") or type(estimate).__name__
    return _time(fn, "estimate", t), what


def efficiency(measured_s: float, estimate: Any) -> float:
    """Predicted over measured time: 1.0 means the kernel runs exactly as fast as the model.

    Parameters
    ----------
    measured_s : float
        Measured time in seconds.
    estimate : Estimate, object with ``time_s``, or float
        The prediction (``rl.gemm(...)``, a model estimate, or seconds).

    Notes
    -----
    ``efficiency = estimate.time_s / measured_s``. With ``efficiency="peak"`` estimates this
    is the fraction of the datasheet roofline reached.
    """
    fn = "efficiency"
    pred, _ = _predicted(fn, estimate)
    return pred / _time(fn, "measured_s", measured_s)


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


def assert_efficiency(measured_s: float, estimate: Any, at_least: float = 0.7) -> None:
    """Assert a measured kernel reaches at least ``at_least`` of its predicted speed.

    Parameters
    ----------
    measured_s : float
        Measured time in seconds.
    estimate : Estimate, object with ``time_s``, or float
        The prediction.
    at_least : float
        Required ``estimate.time_s / measured_s``, in (0, ∞) (0.7: within 70 % of the model).

    Raises
    ------
    AssertionError
        With the measured and predicted times, the efficiency, the achieved FLOP/s and
        bytes/s and the bound.

    Notes
    -----
    Passes when ``estimate.time_s / measured_s >= at_least``; a kernel faster than the
    model always passes.
    """
    fn = "assert_efficiency"
    if isinstance(at_least, bool) or not isinstance(at_least, numbers.Real) or not (
        math.isfinite(float(at_least)) and float(at_least) > 0
    ):
        raise ValueError(f"{fn}: at_least must be a positive number, got {at_least!r}")
    meas = _time(fn, "measured_s", measured_s)
    pred, what = _predicted(fn, estimate)
    eff = pred / meas
    if eff < at_least:
        detail = _detail(estimate, meas)
        raise AssertionError(
            f"{what}: measured {si(meas, 's')} vs predicted {si(pred, 's')}: efficiency "
            f"{eff:.1%} < required {float(at_least):.1%}"
            + (f" ({detail})" if detail else "")
        )


def assert_within(estimate: Any, measured_s: float, rel: float = 0.25) -> None:
    """Assert the prediction is within a relative tolerance of the measurement.

    Parameters
    ----------
    estimate : Estimate, object with ``time_s``, or float
        The prediction.
    measured_s : float
        Measured time in seconds.
    rel : float
        Allowed ``|predicted - measured| / measured``, > 0.

    Raises
    ------
    AssertionError
        With both times, the relative error and which way it is off.
    """
    fn = "assert_within"
    if isinstance(rel, bool) or not isinstance(rel, numbers.Real) or not (
        math.isfinite(float(rel)) and float(rel) > 0
    ):
        raise ValueError(f"{fn}: rel must be a positive number, got {rel!r}")
    meas = _time(fn, "measured_s", measured_s)
    pred, what = _predicted(fn, estimate)
    err = (pred - meas) / meas
    if abs(err) > rel:
        way = "over-predicts" if err > 0 else "under-predicts"
        raise AssertionError(
            f"{what}: predicted {si(pred, 's')} vs measured {si(meas, 's')}: the model "
            f"{way} by {abs(err):.1%} (allowed {float(rel):.1%})"
        )
