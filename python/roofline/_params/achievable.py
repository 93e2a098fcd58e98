"""Achievable fractions of an accelerator, looked up in a calibration document.

``calibration.json`` holds achievable fractions of the dense peak per accelerator and peak
class (from the best measured GEMMs) with per-vendor fallbacks, and the rate of flash
prefill/training kernels as a fraction of the GEMM rate per accelerator (with vendor
fallbacks). Accelerators on a calibrated one's die borrow its values (:func:`same_silicon`).
"""

from __future__ import annotations

from typing import Any

from ..hardware import PEAK_CLASSES
from . import packaged

__all__ = ["attention_fraction", "compute_fractions", "same_silicon"]

#: Classes that borrow the fraction of a measured class: vector/TF32 math and fp64 from bf16,
#: integer and fp4 tensor math from fp8.
_BORROW = {"fp64": "bf16", "fp32": "bf16", "tf32": "bf16", "int8": "fp8", "fp4": "fp8"}
#: Fraction used when neither the accelerator nor its vendor has any measurement.
_LAST_RESORT = 0.7

#: Accelerators built on the same die, SM count and clocks as a calibrated one: H800 (NVLink
#: cut) and H200 / H200 NVL (HBM3e; peaks per their own entries) are GH100 with 132 SMs, as
#: the H100 SXM. Fractions of the peak are properties of the die and its kernels.
_SIBLINGS = {"H800": "H100 SXM", "H200": "H100 SXM", "H200 NVL": "H100 SXM"}

#: Accelerators on a calibrated one's die whose vendor peaks are quoted at another clock: the
#: GB300 is the B300's Blackwell Ultra die (sm103) with 2500 / 5000 dense bf16 / fp8 TFLOPS
#: against 2250 / 4500. What carries over is the measured rate (fraction x peak), so the
#: fraction is the sibling's x its peak / this peak (GB200 against B200 shows it: measured
#: 0.729 / 0.723 vs B200's 0.812 / 0.791 x 0.9 = 0.731 / 0.712).
_RATE_SIBLINGS = {"GB300": "B300"}


def same_silicon(hw: Any) -> str:
    """Name of the calibrated accelerator on the same die as ``hw`` (its own name if none)."""
    name = getattr(hw, "name", "") or ""
    return _SIBLINGS.get(name, name)


def compute_fractions(hw: Any, doc: dict[str, Any] | None = None) -> dict[str, float]:
    """Achievable fraction of the dense peak per class for ``hw``.

    Measured fraction of this accelerator where the calibration data has it (for classes it
    lacks, its die sibling's: H800 and H200 borrow H100 SXM's; GB300 takes B300's measured
    rate over its own peak), else the vendor's median,
    else 0.7; classes without measurements borrow bf16's (fp64, fp32, tf32) or fp8's (int8,
    fp4) fraction. ``doc`` is the calibration document to read (default: the packaged one).
    """
    doc = packaged.calibration() if doc is None else doc
    fitted = doc["achievable_compute_fraction"]
    # A die's sibling (same SMs, clocks, tensor cores) lends the classes this entry lacks.
    own = {**fitted.get(same_silicon(hw), {}), **fitted.get(hw.name, {})}
    rate_sibling = _RATE_SIBLINGS.get(getattr(hw, "name", "") or "")
    if rate_sibling is not None and rate_sibling in fitted:
        from ..hardware import hardware

        sib = hardware(rate_sibling)
        for cls, frac in fitted[rate_sibling].items():
            mine = getattr(hw, f"{cls}_flops_per_s", None)
            theirs = getattr(sib, f"{cls}_flops_per_s", None)
            if cls not in own and mine and theirs:
                own[cls] = float(frac) * float(theirs) / float(mine)
    vendor = doc["fallback_compute_fraction"].get(hw.vendor, {})

    def pick(cls: str) -> float:
        if cls in own:
            return float(own[cls])
        if cls in vendor:
            return float(vendor[cls])
        return _LAST_RESORT

    out = {}
    for cls in PEAK_CLASSES:
        if cls in own or cls in vendor:
            out[cls] = pick(cls)
        else:
            out[cls] = pick(_BORROW.get(cls, "bf16"))
    return out


def attention_fraction(hw: Any, doc: dict[str, Any] | None = None) -> float:
    """Rate of flash prefill/training kernels as a fraction of the GEMM rate on ``hw``.

    Fitted value of this accelerator (H800 and H200 borrow H100 SXM's), else its vendor's
    median, else the median of all fitted values; 1.0 when the calibration file has none.
    ``doc`` as for :func:`compute_fractions`.
    """
    doc = packaged.calibration() if doc is None else doc
    own = doc.get("attention_fraction", {})
    if same_silicon(hw) in own:
        return float(own[same_silicon(hw)])
    vendor = doc.get("fallback_attention_fraction", {})
    if hw.vendor in vendor:
        return float(vendor[hw.vendor])
    return float(doc.get("attention_fraction_median", 1.0))
