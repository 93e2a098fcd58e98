"""The shape-aware ("calibrated") efficiency model: parameters fitted by benchmarks/calibrate.py.

The fit lives in ``data/calibration.json``: achievable fractions of the dense peak per
accelerator and peak class (from the best measured GEMMs), per-vendor fallbacks for the
accelerators the data does not cover, five global constants (streaming bandwidth
fraction and latency, GEMM latency, compute/memory overlap exponent, per-SM bandwidth), and
the attention terms: the rate of flash prefill/training kernels as a fraction of the GEMM rate
per accelerator (with vendor fallbacks), the rate of flash decode kernels, the exp/softmax
cost per score and the fixed cost of a flash work unit.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from . import _core
from .hardware import Hardware

_PATH = Path(__file__).with_name("data") / "calibration.json"
_CLASSES = ("fp64", "fp32", "tf32", "bf16", "fp8", "int8", "fp4")
#: Classes that borrow the fraction of a measured class: vector/TF32 math and fp64 from bf16,
#: integer and fp4 tensor math from fp8.
_BORROW = {"fp64": "bf16", "fp32": "bf16", "tf32": "bf16", "int8": "fp8", "fp4": "fp8"}
#: Fraction used when neither the accelerator nor its vendor has any measurement.
_LAST_RESORT = 0.7


@functools.lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    """The fitted parameters (loaded once)."""
    with open(_PATH) as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def compute_fractions(hw: Hardware, doc: dict[str, Any] | None = None) -> dict[str, float]:
    """Achievable fraction of the dense peak per class for ``hw``.

    Measured fraction of this accelerator where the calibration data has it (for classes it
    lacks, its die sibling's: H800 and H200 borrow H100 SXM's), else the vendor's median,
    else 0.7; classes without
    measurements borrow bf16's (fp64, fp32, tf32) or fp8's (int8, fp4) fraction. ``doc`` is
    the calibration document to read (default: the packaged one).
    """
    doc = data() if doc is None else doc
    fitted = doc["achievable_compute_fraction"]
    # A die's sibling (same SMs, clocks, tensor cores) lends the classes this entry lacks.
    own = {**fitted.get(same_silicon(hw), {}), **fitted.get(hw.name, {})}
    vendor = doc["fallback_compute_fraction"].get(hw.vendor, {})

    def pick(cls: str) -> float:
        if cls in own:
            return float(own[cls])
        if cls in vendor:
            return float(vendor[cls])
        return _LAST_RESORT

    out = {}
    for cls in _CLASSES:
        if cls in own or cls in vendor:
            out[cls] = pick(cls)
        else:
            out[cls] = pick(_BORROW.get(cls, "bf16"))
    return out


#: Accelerators built on the same die, SM count and clocks as a calibrated one: H800 (NVLink
#: cut) and H200 / H200 NVL (HBM3e; peaks per their own entries) are GH100 with 132 SMs, as
#: the H100 SXM. Fractions of the peak are properties of the die and its kernels.
_SIBLINGS = {"H800": "H100 SXM", "H200": "H100 SXM", "H200 NVL": "H100 SXM"}


def same_silicon(hw: Any) -> str:
    """Name of the calibrated accelerator on the same die as ``hw`` (its own name if none)."""
    name = getattr(hw, "name", "") or ""
    return _SIBLINGS.get(name, name)


def attention_fraction(hw: Hardware, doc: dict[str, Any] | None = None) -> float:
    """Rate of flash prefill/training kernels as a fraction of the GEMM rate on ``hw``.

    Fitted value of this accelerator (H800 and H200 borrow H100 SXM's), else its vendor's median,
    else the median of all fitted values; 1.0 when the calibration file has none. ``doc`` as
    for :func:`compute_fractions`.
    """
    doc = data() if doc is None else doc
    own = doc.get("attention_fraction", {})
    if same_silicon(hw) in own:
        return float(own[same_silicon(hw)])
    vendor = doc.get("fallback_attention_fraction", {})
    if hw.vendor in vendor:
        return float(vendor[hw.vendor])
    return float(doc.get("attention_fraction_median", 1.0))


def scaled_core_hardware(hw: Hardware, fractions: dict[str, float]) -> Any:
    """Core hardware whose peaks are scaled by per-class achievable fractions (1 if absent)."""
    peaks = [(getattr(hw, f"{c}_flops_per_s") or 0.0) * fractions.get(c, 1.0) for c in _CLASSES]
    return _core.Hardware(peaks, hw.mem_bytes_per_s, hw.l2_bytes or 0.0, int(hw.sms or 0),
                          hw.clock_hz or 0.0)


def shape_aware_efficiency(hw: Hardware, params: dict[str, float],
                           attention_fraction: float) -> Any:
    """Core efficiency of the shape-aware model with the given fitted parameters."""
    p = params
    sm_bw = p["sm_bandwidth_factor"] * hw.mem_bytes_per_s / hw.sms if hw.sms else 0.0
    return _core.Efficiency(
        1.0, p["memory_fraction"], 0.0, False, True, p["gemm_latency_s"],
        p["memory_latency_s"], p["overlap_p"], sm_bw,
        attention_fraction=attention_fraction,
        decode_fraction=p.get("decode_fraction", 0.0),
        attention_softmax_flops=p.get("attention_softmax_flops", 0.0),
        attention_tile_overhead=p.get("attention_tile_overhead", 0.0),
    )


def core_objects(hw: Hardware) -> tuple[Any, Any]:
    """Core hardware (peaks scaled to their achievable values) and core efficiency.

    The parameters are the packaged ones, with a calibrated profile's fitted patch on top
    (``roofline.calibration.documents``).
    """
    from ._terms import apply
    from .calibration.documents import documents

    cal, areas = documents(hw)
    chw = scaled_core_hardware(hw, compute_fractions(hw, cal))
    ceff = shape_aware_efficiency(hw, cal["params"], attention_fraction(hw, cal))
    return chw, apply(ceff, hw, areas)


def shared_core_objects(hw: Hardware) -> tuple[Any, Any]:
    """:func:`core_objects`, cached per accelerator for the op functions (do not mutate).

    Building the core objects costs more than a scalar estimate; the op functions call this.
    The key includes the loaders of the fitted files, so a fit that swaps a loader (e.g.
    ``benchmarks/fit_row_ops.py``) sees its trial terms; after rewriting a fitted file, call
    ``shared_core_objects.cache_clear()`` along with the loaders' ``cache_clear()``.
    """
    from . import _terms

    return _shared(hw, _terms.data, data)


@functools.lru_cache(maxsize=256)
def _shared(hw: Hardware, terms_loader: Any, calibration_loader: Any) -> tuple[Any, Any]:
    return core_objects(hw)


shared_core_objects.cache_clear = _shared.cache_clear  # type: ignore[attr-defined]
