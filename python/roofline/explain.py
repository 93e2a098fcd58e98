"""Measured against modeled: what a kernel's measured time means against its roofline.

``rl.explain(estimate, measured_s)`` turns a measured kernel time into achieved FLOP/s and
bytes/s, the fraction of the datasheet peaks they reach, the fraction of the model's
prediction the kernel reaches, and a short plain-language reading.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ._errors import ArgumentTypeError, ArgumentValueError
from ._format import si
from .estimate import Estimate
from .hardware import PEAK_CLASSES, Hardware, HardwareLike
from .hardware import hardware as lookup_hardware

__all__ = ["Explanation", "ImpossibleMeasurementWarning", "explain", "pct_text", "peak_meta"]

Number = float | np.ndarray

#: pct_of_model within [100 - _CLOSE, 100 + _CLOSE] percent reads as "at the prediction".
_CLOSE = 10.0
#: pct_of_model below this reads as "far below the model".
_FAR = 50.0
#: pct_of_model below this: the measurement is over 1000x the model; the units are suspect.
_UNITS = 0.1


class ImpossibleMeasurementWarning(UserWarning):
    """A measured time faster than the datasheet roofline allows (more than 10 % under it):
    the timing or the units are wrong, or the kernel does less work than counted."""


def pct_text(pct: float) -> str:
    """A percentage for people: ``"28.2 %"``; above 10,000 % as a multiple (``"694,487x"``);
    below 0.1 % with two significant digits (``"0.0000053 %"``), never a bare ``"0.0 %"``."""
    if pct >= 1e4:
        return f"{pct / 100:,.0f}x"
    if 0 < pct < _UNITS:
        return f"{np.format_float_positional(pct, precision=2, fractional=False, trim='-')} %"
    return f"{pct:.1f} %"

_WHERE_TO_LOOK = {
    "memory": (
        "uncoalesced or strided loads, too few CTAs in flight to cover DRAM latency (a small "
        "grid), traffic the byte count leaves out (re-reads, padding, spills), a slow "
        "timing method, or other kernels sharing HBM at the same time"
    ),
    "compute": (
        "tile or wave quantization, non-tensor-core work the FLOP count leaves out (softmax, "
        "scaling, conversions), low clocks under power throttling, or other kernels sharing "
        "the SMs at the same time"
    ),
    "overhead": (
        "launch latency and synchronization between kernels: fuse kernels or capture a CUDA "
        "graph; time the kernel alone, not the launch"
    ),
}


def peak_meta(hw: Hardware, core_dtype: Any) -> dict[str, Any]:
    """The datasheet peaks an op runs against, stored in :attr:`Estimate.meta`.

    Parameters
    ----------
    hw : Hardware
        The accelerator of the estimate.
    core_dtype : roofline._core.DType
        The format whose peak class the op's FLOPs run at.

    Returns
    -------
    dict
        ``peak_class`` (e.g. ``"fp8"``), ``peak_flops_per_s`` (dense datasheet peak of that
        class, or None) and ``mem_bytes_per_s`` (datasheet DRAM bandwidth).
    """
    from . import _core

    cls = str(_core.peak_class(core_dtype).name)
    return {
        "peak_class": cls,
        "peak_flops_per_s": getattr(hw, f"{cls}_flops_per_s", None),
        "mem_bytes_per_s": hw.mem_bytes_per_s,
    }


def _scalar_or_array(a: Any) -> Number:
    arr = np.asarray(a)
    return arr.item() if arr.ndim == 0 else arr


@dataclass(frozen=True, eq=False)
class Explanation:
    """A measured kernel time set against the roofline and the model's prediction.

    Every ``pct_*`` field is a percentage (``28.2`` means 28.2 %). Fields are floats for a
    scalar estimate and measurement, numpy arrays of their broadcast shape otherwise.

    Attributes
    ----------
    label, hardware : str
        What was measured and on which accelerator.
    measured_s, predicted_s : float or ndarray
        The measured time and the model's prediction (``estimate.time_s``), in seconds.
    roofline_s : float or ndarray
        The datasheet roofline, ``max(flops / peak_flops_per_s, bytes / mem_bytes_per_s)``:
        no kernel doing this work and moving these bytes can be faster.
    flops, bytes : float or ndarray
        The work and the DRAM traffic the estimate counts.
    peak_class : str
        Peak class the FLOPs are set against (``"bf16"``, ``"fp8"``, ...).
    peak_flops_per_s, mem_bytes_per_s : float
        The dense datasheet peak of that class and the datasheet DRAM bandwidth.
    achieved_flops_per_s, achieved_bytes_per_s : float or ndarray
        ``flops / measured_s`` and ``bytes / measured_s``.
    pct_of_peak_flops, pct_of_peak_bandwidth : float or ndarray
        The achieved rates in percent of the datasheet peaks.
    model_pct_of_peak_flops, model_pct_of_peak_bandwidth : float or ndarray
        The same percentages at the predicted time: what the model expects the kernel to reach.
    pct_of_roofline : float or ndarray
        ``100 * roofline_s / measured_s``: how close the kernel is to the speed of light.
    pct_of_model : float or ndarray
        ``100 * predicted_s / measured_s``: 100 means the kernel runs as fast as the model
        predicts, 50 that it takes twice as long, above 100 that it beats the model.
    bound : str or ndarray
        What limits the kernel under the model: ``"compute"``, ``"memory"`` or ``"overhead"``.
    reading : str or ndarray
        One plain-language sentence per element.
    beats_roofline : bool or ndarray
        True where the measurement is more than 10 % faster than the datasheet roofline
        (``pct_of_roofline > 110``): physically impossible for the counted work, so the
        timing, its units or the shape is wrong (or caches served the bytes). ``explain``
        also warns (:class:`ImpossibleMeasurementWarning`) and ``roofline explain`` exits 1.
    """

    label: str
    hardware: str
    measured_s: Number
    predicted_s: Number
    roofline_s: Number
    flops: Number
    bytes: Number
    peak_class: str
    peak_flops_per_s: float
    mem_bytes_per_s: float
    achieved_flops_per_s: Number
    achieved_bytes_per_s: Number
    pct_of_peak_flops: Number
    pct_of_peak_bandwidth: Number
    model_pct_of_peak_flops: Number
    model_pct_of_peak_bandwidth: Number
    pct_of_roofline: Number
    pct_of_model: Number
    bound: str | np.ndarray
    reading: str | np.ndarray
    beats_roofline: bool | np.ndarray = False

    def to_dict(self) -> dict[str, Any]:
        """Every field as a plain dict (floats and strings, or numpy arrays)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __repr__(self) -> str:
        where = f" on {self.hardware}" if self.hardware else ""
        what = self.label or "kernel"
        if np.ndim(self.measured_s) != 0 or np.ndim(self.predicted_s) != 0:
            pm = np.asarray(self.pct_of_model)
            return (
                f"Explanation({what}{where}: shape {np.shape(pm)}, pct_of_model "
                f"{float(pm.min()):.1f} .. {float(pm.max()):.1f} %)"
            )
        flag = "IMPOSSIBLE (faster than the roofline): " if self.beats_roofline else ""
        return (
            f"Explanation({flag}{what}{where}: measured {si(float(self.measured_s), 's')}, "
            f"predicted {si(float(self.predicted_s), 's')} ({pct_text(float(self.pct_of_model))}"
            f" of model), roofline {si(float(self.roofline_s), 's')}; "
            f"{si(float(self.achieved_flops_per_s), 'FLOP/s')} = "
            f"{pct_text(float(self.pct_of_peak_flops))} of the {self.peak_class} peak, "
            f"{si(float(self.achieved_bytes_per_s), 'B/s')} = "
            f"{pct_text(float(self.pct_of_peak_bandwidth))} of the bandwidth; {self.reading})"
        )

    def _repr_html_(self) -> str:
        from ._html import result_html

        if np.ndim(self.measured_s) != 0 or np.ndim(self.predicted_s) != 0:
            return result_html(repr(self), [])
        return result_html(
            ("IMPOSSIBLE: " if self.beats_roofline else "")
            + f"{self.label or 'kernel'} on {self.hardware}: measured against modeled", [
                ("measured", si(float(self.measured_s), "s")),
                ("predicted", f"{si(float(self.predicted_s), 's')} "
                              f"({pct_text(float(self.pct_of_model))} of it reached)"),
                ("roofline", f"{si(float(self.roofline_s), 's')} "
                             f"({pct_text(float(self.pct_of_roofline))} of it reached)"),
                ("achieved FLOP/s", f"{si(float(self.achieved_flops_per_s), 'FLOP/s')} "
                 f"({pct_text(float(self.pct_of_peak_flops))} of the {self.peak_class} peak)"),
                ("achieved bytes/s", f"{si(float(self.achieved_bytes_per_s), 'B/s')} "
                 f"({pct_text(float(self.pct_of_peak_bandwidth))} of the bandwidth)"),
                ("bound", str(self.bound)), ("reading", str(self.reading))])


def _measured(value: Any) -> np.ndarray:
    fn, name = "explain", "measured_s"
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise ArgumentTypeError(fn, name, f"must be a positive number of seconds, got {value!r}")
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Real):
        raise ArgumentTypeError(fn, name, f"must be a real number of seconds, got {value!r}")
    try:
        arr = np.asarray(value)
    except Exception:
        raise ArgumentTypeError(fn, name, f"must be a number or an array of numbers, got "
                        f"{value!r}") from None
    if arr.dtype.kind not in "iuf":
        raise ArgumentTypeError(fn, name, f"must be a number or an array of numbers, got {value!r}")
    arr = arr.astype(np.float64)
    if arr.size == 0:
        raise ArgumentValueError(fn, name, f"must not be empty, got {value!r}")
    bad = ~np.isfinite(arr) | (arr < 1e-15) | (arr > 1e9)
    if bad.any():
        first = arr.ravel()[int(np.flatnonzero(bad.ravel())[0])].item()
        raise ValueError(
            f"{fn}: {name} must be a finite number of seconds in [1e-15, 1e9], got {first!r}"
        )
    return arr


def _peaks(estimate: Estimate[Any], hardware: HardwareLike, dtype: Any
           ) -> tuple[str, str, float, float]:
    """(hardware name, peak class, peak FLOP/s, bandwidth) for the estimate."""
    meta = estimate.meta or {}
    if hardware is not None:
        hw: Hardware | None = lookup_hardware(hardware)
    elif "mem_bytes_per_s" in meta and dtype is None:
        hw = None
    elif estimate.hardware and "+" not in estimate.hardware:
        hw = lookup_hardware(estimate.hardware)
    else:
        raise ValueError(
            f"explain: the estimate names no single accelerator (hardware={estimate.hardware!r})"
            "; pass hardware="
        )
    if dtype is not None:
        from . import _core
        from ._dtypes import dtype as parse_dtype

        cls = str(_core.peak_class(parse_dtype("explain", dtype)).name)
    elif "peak_class" in meta:
        cls = str(meta["peak_class"])
    else:
        raise ValueError(
            "explain: the estimate does not say which peak its FLOPs run at (a sum or a "
            "multiple of estimates keeps no such record); pass dtype=, e.g. dtype='bf16'"
        )
    if cls not in PEAK_CLASSES:
        raise ValueError(f"explain: unknown peak class {cls!r}")
    if hw is None:
        name = estimate.hardware
        peak = meta.get("peak_flops_per_s")
        bw = float(meta["mem_bytes_per_s"])
    else:
        name = hw.name
        peak = getattr(hw, f"{cls}_flops_per_s")
        bw = hw.mem_bytes_per_s
    if not peak:
        raise ValueError(
            f"explain: {name} has no {cls} peak in the database; pass "
            f"hardware=hw.replace({cls}_flops_per_s=...)"
        )
    return name, cls, float(peak), float(bw)


def _whole(pct: float) -> str:
    """``"27%"`` in the usual range; :func:`pct_text` for the extremes."""
    return f"{pct:.0f}%" if 0.5 <= pct < 1e4 else pct_text(pct)


def _reading(bound: str, pct_model: float, pct_roof: float, pct_flops: float, pct_bw: float,
             model_flops: float, model_bw: float, peak_class: str) -> str:
    if bound == "memory":
        head = (f"memory-bound; reaches {_whole(pct_bw)} of the memory bandwidth; the model "
                f"expects {model_bw:.0f}%")
    elif bound == "compute":
        head = (f"compute-bound; reaches {_whole(pct_flops)} of the dense {peak_class} peak; "
                f"the model expects {model_flops:.0f}%")
    else:
        head = "launch/latency-bound (the model's fixed per-kernel time dominates)"
    if pct_roof > 100.0 + _CLOSE:
        tail = (f"IMPOSSIBLE: faster than the datasheet roofline allows ({pct_text(pct_roof)} of "
                "it): the timing or its units are wrong (an asynchronous launch timed, "
                "microseconds passed as seconds), or the kernel moves fewer bytes or does less "
                "work than counted (L2 hits, reuse across calls)")
    elif pct_model < _UNITS:
        tail = (f"the measurement is {100.0 / pct_model:,.0f}x the model's prediction: check "
                "its units (measured_s is in seconds) and that it times this one kernel")
    elif pct_model > 100.0 + _CLOSE:
        tail = (f"{pct_model:.0f}% of the model's prediction: faster than modeled, so the "
                "model's efficiency terms are conservative here (or data stayed in L2)")
    elif pct_model >= 100.0 - _CLOSE:
        tail = (f"{pct_model:.0f}% of the model's prediction: as fast as expected; to go "
                "faster, change the work (fewer bytes: fusion, lower precision; fewer FLOPs)")
    elif pct_model >= _FAR:
        tail = (f"{pct_model:.0f}% of the model's prediction (it takes "
                f"{100.0 / pct_model:.1f}x as long): look for {_WHERE_TO_LOOK[bound]}")
    else:
        tail = (f"only {pct_model:.0f}% of the model's prediction (it takes "
                f"{100.0 / pct_model:.1f}x as long): look for {_WHERE_TO_LOOK[bound]}")
    return f"{head}: {tail}"


def explain(estimate: Estimate[Any], measured_s: Any, hardware: HardwareLike = None, *,
            dtype: Any = None) -> Explanation:
    """Set a measured kernel time against its roofline and the model's prediction.

    Parameters
    ----------
    estimate : Estimate
        The model's estimate of the kernel (``rl.gemm``, ``rl.attention``, ...). Arrays work:
        ``measured_s`` broadcasts against the estimate's shape.
    measured_s : float or array_like
        Measured kernel time in seconds (positive, finite).
    hardware : Hardware or str, optional
        Accelerator whose datasheet peaks the rates are set against. Default: the peaks the
        estimate recorded (``estimate.meta``), else the accelerator named by
        ``estimate.hardware``.
    dtype : str, optional
        Format whose peak class the FLOPs run at. Needed only for estimates that do not record
        it (sums and multiples of estimates); overrides the recorded class otherwise.

    Returns
    -------
    Explanation
        Achieved FLOP/s and bytes/s, percentages of the peaks, of the roofline and of the
        model, the bound and a one-sentence reading.

    Raises
    ------
    TypeError
        ``estimate`` is not an Estimate, or ``measured_s`` is not a number / numeric array.
    ValueError
        ``measured_s`` not positive and finite, shapes that do not broadcast, or no peak to
        compare with (pass ``dtype=`` or ``hardware=``).

    Notes
    -----
    ``achieved = flops / measured_s`` and ``bytes / measured_s``, with the FLOPs and bytes the
    estimate counts (each operand crossing DRAM once). ``pct_of_model = 100 · predicted_s /
    measured_s``. The roofline is the datasheet's: ``max(flops / peak, bytes / bandwidth)``
    with dense peaks, no efficiency factor, no launch floor. The reading names the bound
    under the model and where to look when the kernel is slower than predicted.

    Examples
    --------
    >>> import roofline as rl
    >>> e = rl.gemm(256, 7168, 4096, dtype="fp8", out_dtype="fp32", batch=2, hardware="H800")
    >>> x = rl.explain(e, 78e-6)
    >>> round(x.pct_of_peak_bandwidth)
    27
    """
    if not isinstance(estimate, Estimate):
        raise TypeError(f"explain: estimate must be an rl.Estimate, got {estimate!r}")
    meas = _measured(measured_s)
    name, cls, peak, bw = _peaks(estimate, hardware, dtype)
    try:
        shape = np.broadcast_shapes(estimate.shape, meas.shape)
    except ValueError:
        raise ValueError(
            f"explain: measured_s of shape {meas.shape} does not broadcast with the estimate's "
            f"shape {estimate.shape}"
        ) from None
    pred = np.broadcast_to(np.asarray(estimate.time_s, dtype=np.float64), shape)
    flops = np.broadcast_to(np.asarray(estimate.flops, dtype=np.float64), shape)
    nbytes = np.broadcast_to(np.asarray(estimate.bytes, dtype=np.float64), shape)
    bound = np.broadcast_to(np.asarray(estimate.bound), shape)
    t = np.broadcast_to(meas, shape)
    roof = np.maximum(flops / peak, nbytes / bw)
    ach_f, ach_b = flops / t, nbytes / t
    pct_f, pct_b = 100.0 * ach_f / peak, 100.0 * ach_b / bw
    mod_f, mod_b = 100.0 * flops / pred / peak, 100.0 * nbytes / pred / bw
    pct_roof, pct_model = 100.0 * roof / t, 100.0 * pred / t
    beats = np.asarray(pct_roof > 100.0 + _CLOSE)
    if beats.any():
        worst = float(np.max(pct_roof))
        warnings.warn(
            f"explain: {estimate.label or 'kernel'}: the measurement is faster than the "
            f"datasheet roofline allows ({pct_text(worst)} of it); check the timing and its "
            "units (seconds)", ImpossibleMeasurementWarning, stacklevel=2)
    readings = np.array(
        [
            _reading(str(b), float(pm), float(pr), float(pf), float(pb), float(mf), float(mb),
                     cls)
            for b, pm, pr, pf, pb, mf, mb in zip(
                bound.ravel(), pct_model.ravel(), pct_roof.ravel(), pct_f.ravel(),
                pct_b.ravel(), mod_f.ravel(), mod_b.ravel(), strict=True,
            )
        ],
        dtype=object,
    ).reshape(shape)
    return Explanation(
        label=estimate.label,
        hardware=name,
        measured_s=_scalar_or_array(t),
        predicted_s=_scalar_or_array(pred),
        roofline_s=_scalar_or_array(roof),
        flops=_scalar_or_array(flops),
        bytes=_scalar_or_array(nbytes),
        peak_class=cls,
        peak_flops_per_s=peak,
        mem_bytes_per_s=bw,
        achieved_flops_per_s=_scalar_or_array(ach_f),
        achieved_bytes_per_s=_scalar_or_array(ach_b),
        pct_of_peak_flops=_scalar_or_array(pct_f),
        pct_of_peak_bandwidth=_scalar_or_array(pct_b),
        model_pct_of_peak_flops=_scalar_or_array(mod_f),
        model_pct_of_peak_bandwidth=_scalar_or_array(mod_b),
        pct_of_roofline=_scalar_or_array(pct_roof),
        pct_of_model=_scalar_or_array(pct_model),
        bound=str(bound.item()) if bound.ndim == 0 else bound.copy(),
        reading=str(readings.item()) if readings.ndim == 0 else readings,
        beats_roofline=bool(beats.item()) if beats.ndim == 0 else beats,
    )
