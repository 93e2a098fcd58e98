"""GemmTerms of an accelerator from the gemm terms document.

The document (``data/terms/gemm.json``, written by ``benchmarks/fit_gemm.py``) holds
``"terms"``: the universal values (fitted on the H100 cuBLAS / torch._grouped_mm rows of
``gpu_h100_calibration.jsonl``) and ``"vendor_overrides"``: per-vendor replacements where the
software stack differs (none fitted yet: no non-NVIDIA measurements). Every term is either a
time of the host/driver/kernel structure (latencies, in seconds) or a fraction of a rate the
hardware entry already scales (bandwidth, tensor peak), so they transfer to GPUs without
measurements through the hardware entry's own bandwidth, SMs and peaks.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from .achievable import same_silicon
from .fields import fill

__all__ = ["FIELDS", "SCALE_FIELDS", "core_terms", "values"]

#: GemmTerms fields and what they mean (see cpp/include/roofline/terms/gemm.hpp).
FIELDS = (
    "latency_s",
    "rowwise_latency_s",
    "memory_fraction",
    "throttle_fraction",
    "throttle_time_s",
    "rowwise_max_splits",
    "rowwise_min_tile_n",
    "unaligned_fraction",
    "compute_scale_16",
    "compute_scale_8",
    "grouped_compute_fraction",
    "grouped_latency_s",
)

#: The compute-scale field of each class calibration.json measures.
SCALE_FIELDS = {"bf16": "compute_scale_16", "fp8": "compute_scale_8"}


def values(hw: Any, doc: dict[str, Any]) -> dict[str, float]:
    """The term values for ``hw``: universal terms, the vendor's overrides, compute scales.

    The clock-drop fraction is scaled to ``hw``'s tensor power density (dense bf16 FLOP/s per
    watt of board power) relative to the GPU it was fitted on (``_core.gemm_throttle_fraction``).
    The compute scales follow the achievable fractions they correct (see
    :func:`roofline._params.achievable.compute_fractions`): the accelerator's own where
    gemm_max_achievable.csv measured that class, else its die sibling's (H800, H200 and
    H200 NVL take H100 SXM's), else its vendor's median, else 1.
    """
    out = {f: float(doc.get("terms", {}).get(f, 0.0)) for f in FIELDS}
    vendor = getattr(hw, "vendor", "") or ""
    for f, v in doc.get("vendor_overrides", {}).get(vendor, {}).items():
        if f in out:
            out[f] = float(v)
    out["throttle_fraction"] = _core.gemm_throttle_fraction(
        out["throttle_fraction"], float(doc.get("throttle_reference_flops_per_w", 0.0)),
        getattr(hw, "bf16_flops_per_s", None) or 0.0, getattr(hw, "tdp_w", None) or 0.0)
    scales = doc.get("compute_scale", {})
    # A die's sibling lends the classes this entry lacks, as for the achievable fractions.
    own = {**scales.get(same_silicon(hw), {}), **scales.get(getattr(hw, "name", ""), {})}
    fallback = doc.get("fallback_compute_scale", {}).get(vendor, {})
    for cls, field in SCALE_FIELDS.items():
        if cls in own:
            out[field] = float(own[cls])
        elif cls in fallback:
            out[field] = float(fallback[cls])
    return out


def core_terms(hw: Any, doc: dict[str, Any]) -> Any:
    """The core GemmTerms for hw from the fitted document doc (all zero when it is empty)."""
    return fill(_core.GemmTerms(), values(hw, doc))
