"""Core Hardware and Efficiency of the shape-aware ("calibrated", the default) model.

The parameters are the packaged ones with a Profile's fitted patch on top
(:func:`.documents.documents`): peaks scaled by the achievable fractions, the streaming and
GEMM globals of ``calibration.json``'s ``params`` and every area's implementation terms.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import _core
from ..hardware import PEAK_CLASSES
from . import attention, cast, gemm, host, row_ops
from .achievable import attention_fraction, compute_fractions
from .documents import documents

__all__ = ["apply_terms", "core_objects", "scaled_core_hardware", "shape_aware_efficiency",
           "shared_core_objects"]


def scaled_core_hardware(hw: Any, fractions: dict[str, float]) -> Any:
    """Core hardware whose peaks are scaled by per-class achievable fractions (1 if absent)."""
    peaks = [(getattr(hw, f"{c}_flops_per_s") or 0.0) * fractions.get(c, 1.0)
             for c in PEAK_CLASSES]
    return _core.Hardware(peaks, hw.mem_bytes_per_s, hw.l2_bytes or 0.0, int(hw.sms or 0),
                          hw.clock_hz or 0.0)


def shape_aware_efficiency(hw: Any, params: dict[str, float], attention_fraction: float) -> Any:
    """Core efficiency of the shape-aware model with the given fitted parameters."""
    p = params
    return _core.Efficiency(
        1.0, p["memory_fraction"], 0.0, False, True, p["gemm_latency_s"],
        p["memory_latency_s"], p["overlap_p"],
        _core.per_sm_bandwidth(p["sm_bandwidth_factor"], hw.mem_bytes_per_s, hw.sms or 0),
        attention_fraction=attention_fraction,
        decode_fraction=p.get("decode_fraction", 0.0),
        attention_softmax_flops=p.get("attention_softmax_flops", 0.0),
        attention_tile_overhead=p.get("attention_tile_overhead", 0.0),
    )


def apply_terms(ceff: Any, hw: Any, docs: dict[str, dict[str, Any]]) -> Any:
    """Set every area's terms for ``hw`` from ``docs`` ({area: terms document}) on ``ceff``."""
    ceff.gemm = gemm.core_terms(hw, docs["gemm"])
    ceff.attention = attention.core_terms(hw, docs["attention"])
    ceff.row_ops = row_ops.core_terms(hw, docs["row_ops"])
    ceff.cast = cast.core_terms(hw, docs["cast"])
    ceff.host = host.core_terms(hw, docs["host"])
    return ceff


def core_objects(hw: Any, per_call: bool = False) -> tuple[Any, Any]:
    """Core hardware (peaks scaled to their achievable values) and core efficiency of ``hw``
    (a Profile's fitted patch on top of the packaged parameters).

    Streaming kernels are priced at GPU time (:mod:`.timing`): the fitted per-call latency
    becomes :func:`roofline._core.gpu_streaming_latency_s` of it, and no kernel hides latency
    behind its predecessor's drain (``follow_on_s``, a saving of back-to-back host launches);
    fused attention calls take their GPU part of the call constants
    (:func:`.attention.gpu_time_terms`).
    ``per_call=True`` keeps the fitted per-call terms (rows timed per call by do_bench)."""
    cal, areas = documents(hw)
    fractions = compute_fractions(hw, cal)
    chw = scaled_core_hardware(hw, fractions)
    params = cal["params"]
    if not per_call:
        gap = host.core_terms(hw, areas["host"]).kernel_gap_s
        ramp = row_ops.core_terms(hw, areas["row_ops"]).small_kernel_ramp_s
        params = {**params, "memory_latency_s": _core.gpu_streaming_latency_s(
            params["memory_latency_s"], gap, ramp)}
    ceff = apply_terms(shape_aware_efficiency(hw, params, attention_fraction(hw, cal)), hw,
                       areas)
    if not per_call:
        terms = ceff.row_ops
        terms.follow_on_s = 0.0
        ceff.row_ops = terms
        ceff.attention = attention.gpu_time_terms(ceff.attention, areas["attention"], gap,
                                                  params["memory_latency_s"])
    return chw, cap_compute_scales(ceff, fractions)


#: Peak classes whose GEMMs take ``compute_scale_8`` (the core's low-bit GEMMs); the others
#: take ``compute_scale_16``.
_LOW_BIT_CLASSES = ("fp8", "int8", "fp4")


def cap_compute_scales(ceff: Any, fractions: dict[str, float]) -> Any:
    """Cap the GEMM compute scales so that no GEMM runs above its datasheet peak: a class's
    rate is ``peak · fraction · scale``, so ``scale <= 1 / fraction`` for every class it
    applies to (a fitted profile may raise a scale; the packaged ones are ~1.01)."""
    g = ceff.gemm
    for field, low in (("compute_scale_16", False), ("compute_scale_8", True)):
        top = max((f for c, f in fractions.items() if (c in _LOW_BIT_CLASSES) == low and f > 0),
                  default=0.0)
        if top > 0 and getattr(g, field) > 1.0 / top:
            setattr(g, field, 1.0 / top)
    ceff.gemm = g
    return ceff


@functools.lru_cache(maxsize=256)
def shared_core_objects(hw: Any, per_call: bool = False) -> tuple[Any, Any]:
    """:func:`core_objects`, cached per Hardware (or Profile) value and timing for the op
    functions (do not mutate). A Profile's patch is part of its value, so trial terms of a fit
    (passed as a Profile) are seen at once; after rewriting a packaged file call
    :func:`roofline._params.resolve.clear_caches`."""
    return core_objects(hw, per_call)
