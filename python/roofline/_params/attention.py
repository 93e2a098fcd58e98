"""Fitted AttentionTerms for an accelerator from the attention terms document.

The terms describe the implementations ``F.scaled_dot_product_attention`` dispatches to
(FlashAttention-2, cuDNN, memory-efficient) as physics on top of the accelerator's own GEMM rate,
SM count and bandwidth: each implementation's rate as a fraction of the GEMM rate (set by the
tensor-core instruction path it uses on that architecture), its tile shapes, whether it splits
the KV loop or packs GQA heads in decode, and a fixed GPU time per call.
``data/terms/attention.json`` (written by ``benchmarks/fit_attention.py``) holds:

- ``universal``: terms of the software, the same on every GPU (tiles, split-KV, call times, the
  backward / decode rates *relative* to the forward rate of the same instruction path; cuDNN's
  decode call time and its TMA loads' bandwidth relative to the streaming rate; the bandwidth
  one memory-efficient CTA sustains alone);
- ``paths``: per instruction path (``mma_sync`` = Ampere-style ``mma.sync`` code, what FA2 and
  the CUTLASS memory-efficient kernels run on every NVIDIA GPU; ``wgmma`` = Hopper/Blackwell
  native warpgroup MMA, what cuDNN runs on sm90/sm100), the forward fraction of the GEMM rate;
- ``universal.math``: ``strided_element_flops``, the element rate of aten's non-vectorized
  elementwise kernel (SDPA's math path broadcasts its mask and row flags) in fp32 FLOP-equivalents
  per element, read off an H100 profiler trace;
- ``architectures``: which path each backend takes per architecture, and for ``mma_sync`` which
  measured accelerator's FlashAttention-2 fraction (``calibration.json``'s ``attention_fraction``)
  stands for the architecture (Hopper: H100 SXM, Ampere: A100 SXM 80GB).

Nothing is per GPU: an H200 gets the H100's terms (same SMs and clocks; its larger bandwidth
enters through the hardware entry), a B200 the Hopper-path values scaled by its own peaks.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from . import packaged
from .achievable import compute_fractions
from .architecture import CUDNN_FIRST, architecture, sfu_doubled
from .fields import fill

__all__ = ["GPU_CALL_FIELDS", "core_terms", "gpu_time_terms", "softmax_flops_scale"]


def _flash_fraction(hw: Any, arch: str, doc: dict[str, Any]) -> float:
    """FlashAttention-2's forward rate vs the GEMM rate on the architecture's mma.sync path.

    Where ``mma.sync`` is the native tensor-core path (Ampere, Ada, consumer Blackwell, ROCm's
    stand-in) the reference GPU's fraction of the GEMM rate carries over: peaks scale with SMs
    and clocks like the kernel does. On wgmma-class architectures (Hopper, datacenter
    Blackwell) the legacy path has its own per-SM, per-clock throughput, which the reference
    (H100 SXM) measures (``_core.flash_fraction_per_sm_clock``). A B200 thus gets FA2 at ~1.2x
    the H100's speed (its SMs and clock), not at its 2.3x larger tcgen05 peak. The reference's
    fraction is the packaged one (a profile's patch does not move it).
    """
    from ..hardware import hardware

    refs = doc.get("mma_sync_reference", {})
    ref_name = refs.get(arch, refs.get("default"))
    calibration = packaged.calibration()
    fitted = calibration.get("attention_fraction", {})
    if ref_name not in fitted:
        return float(calibration.get("attention_fraction_median", 0.0))
    fraction = float(fitted[ref_name])
    if arch not in CUDNN_FIRST:
        return fraction
    ref = hardware(ref_name)
    return float(_core.flash_fraction_per_sm_clock(
        fraction, float(ref.bf16_flops_per_s or 0.0), compute_fractions(ref).get("bf16", 1.0),
        ref.sms or 0, ref.clock_hz or 0.0, float(hw.bf16_flops_per_s or 0.0),
        compute_fractions(hw).get("bf16", 1.0), hw.sms or 0, hw.clock_hz or 0.0))


def _softmax_scale(hw: Any) -> float:
    """``hw``'s bf16 GEMM rate per SM and clock relative to the H100 SXM's (achievable
    fractions included): the softmax runs on the SMs' special-function and FP32 units, whose
    rate per SM and clock is the same on every Hopper, so its cost in bf16 GEMM
    FLOP-equivalents shrinks where the tensor cores are cut (H20: about a quarter). An unknown
    clock counts as the H100's."""
    from ..hardware import hardware

    ref = hardware("H100 SXM")

    def per_sm_clock(h: Any) -> float:
        rate = float(h.bf16_flops_per_s or 0.0) * compute_fractions(h).get("bf16", 1.0)
        sms = float(h.sms or ref.sms or 1)
        clock = float(h.clock_hz or ref.clock_hz or 1.0)
        return rate / (sms * clock)

    base = per_sm_clock(ref)
    return per_sm_clock(hw) / base if base > 0 else 1.0


def softmax_flops_scale(hw: Any) -> float:
    """Factor on the standard attention model's softmax cost per score (bf16 GEMM
    FLOP-equivalents, ``attention_softmax_flops``, fitted on an H100) for ``hw``.

    Blackwell (sm100) doubled the tensor cores' rate per SM and clock over Hopper but kept the
    SFU count per SM (the exponentials) and the shared memory bandwidth (FlashAttention-4,
    Together AI's blog: B200 BF16 1 -> 2.25 PFLOP/s with both unchanged), so the same
    exponentials cost :func:`_softmax_scale` (the tensor rate per SM and clock against the
    H100's) as many FLOP-equivalents; Blackwell Ultra's doubled SFU throughput (compute
    capability 10.3: :func:`~.architecture.sfu_doubled`) halves that.
    Other architectures keep the fitted value (1.0)."""
    if architecture(hw) != "blackwell":
        return 1.0
    return _softmax_scale(hw) / (2.0 if sfu_doubled(hw) else 1.0)


def _fa3(doc: dict[str, Any], wg: float, scale: float = 1.0) -> dict[str, Any]:
    """FlashAttention-3's terms: the wgmma path's fraction of the GEMM rate times the share its
    warp-specialized pipeline keeps, the softmax work left exposed per score (bf16
    FLOP-equivalents on an H100, times ``scale`` = :func:`_softmax_scale`), the backward's rate
    relative to the forward, call times, TMA and paged (cp.async) bandwidth scales. Tiles come
    from the core's ``fa3_tile`` per head dim."""
    return dict(fraction=wg * float(doc["ratio"]), bwd_fraction=wg * float(doc["ratio"]) *
                float(doc["bwd_ratio"]), decode_fraction=wg * float(doc["ratio"]),
                softmax_flops=float(doc["softmax_flops"]) * scale, call_s=float(doc["call_s"]),
                bwd_call_s=float(doc["bwd_call_s"]), decode_call_s=float(doc["decode_call_s"]),
                bandwidth_scale=float(doc["bandwidth_scale"]),
                paged_bandwidth_scale=float(doc["paged_bandwidth_scale"]))


def _flashinfer(uni: dict[str, Any], wg: float, mma: float, fa2_bwd: float,
                native: bool, scale: float = 1.0) -> dict[str, Any]:
    """FlashInfer's terms: prefill = FA3's kernels on Hopper (tiles from ``fa3_tile``, q_tile
    left 0), FA2's elsewhere; decode = its mma.sync kernel with GQA heads packed into 16-row
    tiles, split-KV, pages gathered with cp.async."""
    doc = uni["flashinfer"]
    out = _fa3(uni["fa3"], wg, scale) if native else dict(uni["flash"]["tiles"], fraction=mma,
                                                    bwd_fraction=mma * fa2_bwd,
                                                    call_s=uni["flash"]["call_s"])
    out.pop("bandwidth_scale", None)
    out.update(decode_rows=float(doc["decode_rows"]),
               decode_fraction=mma * float(doc["decode_ratio"]),
               decode_call_s=float(doc["decode_call_s"]),
               paged_bandwidth_scale=float(uni["fa3"]["paged_bandwidth_scale"]))
    if not native:
        out.update(q_tile=128.0, kv_tile=64.0)
    return out


def core_terms(hw: Any, doc: dict[str, Any]) -> Any:
    """The core AttentionTerms for hw from the fitted document doc (all zero when doc is empty)."""
    terms = _core.AttentionTerms()
    if not doc:
        return terms
    arch = architecture(hw)
    if arch == "other":
        return terms  # no SDPA CUDA backends: every backend keeps the standard model
    uni = doc["universal"]
    # A calibrated profile measures FA2's fraction on its own device (roofline.calibration).
    mma = float(doc["flash_fraction"]) if "flash_fraction" in doc else _flash_fraction(hw, arch,
                                                                                       doc)
    # The native path (wgmma on Hopper, tcgen05 on Blackwell) runs at its own fraction of the
    # GEMM rate; elsewhere cuDNN runs mma.sync kernels like FlashAttention-2.
    native = arch in CUDNN_FIRST
    wg = float(doc["paths"]["wgmma"]["fraction"]) if native else mma
    # FA2 on a native-MMA architecture is mma.sync code on hardware built for wgmma: its
    # backward (five GEMMs, more live registers) loses more than its forward.
    fa2_bwd = float(uni["flash"]["bwd_ratio_mma_on_wgmma"]) if native else 1.0
    flash = dict(uni["flash"]["tiles"])
    if not native:
        # The backward's per-unit cost (K/V loads, dK/dV writes: memory latency) was measured in
        # units of a block's compute time on Hopper; where a block computes ~3x slower per SM
        # (Ampere, Ada) it is about one block, the standard model's value set by the README fit.
        flash.pop("bwd_tile_overhead", None)
    flash.update(fraction=mma, bwd_fraction=mma * fa2_bwd, call_s=uni["flash"]["call_s"],
                 bwd_call_s=uni["flash"]["bwd_call_s"])
    cudnn = dict(uni["cudnn"]["tiles"]) if native else {
        k: v for k, v in flash.items() if k in uni["flash"]["tiles"]}
    cudnn.update(fraction=wg, bwd_fraction=wg * float(uni["cudnn"]["bwd_ratio"] if native
                                                      else fa2_bwd),
                 decode_fraction=wg * float(uni["cudnn"]["decode_ratio"]),
                 call_s=uni["cudnn"]["call_s"], bwd_call_s=uni["cudnn"]["bwd_call_s"],
                 decode_call_s=uni["cudnn"].get("decode_call_s", 0.0),
                 bandwidth_scale=uni["cudnn"].get("bandwidth_scale", 0.0) if native else 0.0)
    if arch == "blackwell":
        # cuDNN's sm100 kernels: the exposed softmax work per score (exp on the MUFU units, row
        # max / sum and conversions on the FP32 pipes) was measured in H100 bf16 GEMM
        # FLOP-equivalents; those units did not double per SM and clock with tcgen05's MMA, so
        # in this GPU's GEMM FLOP-equivalents it costs _softmax_scale times more (as for FA3).
        # Blackwell Ultra (sm103: B300, GB300) doubles the SFU's MUFU.EX2 rate per SM and clock
        # over sm100 (NVIDIA, "Making Softmax More Efficient with NVIDIA Blackwell Ultra"): the
        # exposed softmax, bound by those exponentials, takes half as long
        # (softmax_flops_scale; data/hardware-notes.md §8).
        cudnn.update(softmax_flops=float(packaged.calibration()["params"].get(
            "attention_softmax_flops", 0.0)) * softmax_flops_scale(hw))
    eff = dict(uni["efficient"]["tiles"])
    eff.update(fraction=mma * float(uni["efficient"]["ratio"]),
               bwd_fraction=mma * float(uni["efficient"]["ratio"]) * fa2_bwd,
               decode_fraction=mma * float(uni["efficient"]["decode_ratio"]),
               call_s=uni["efficient"]["call_s"],
               cta_bytes_per_s=uni["efficient"].get("cta_bytes_per_s", 0.0))
    if arch == "rocm":
        # SDPA's efficient backend on ROCm is AOTriton: its backward runs bwd_preprocess, a
        # dK/dV kernel over KV tiles and a separate dQ kernel over query tiles (no atomics).
        eff.update(separate_dq=1.0)
    fill(terms.flash, flash)
    fill(terms.cudnn, cudnn)
    fill(terms.efficient, eff)
    if "flash_triton" in uni:
        # Tri Dao's Triton FlashAttention (2022): FA2's work units (tiles, passes) at the share
        # of FA2's forward + backward rate it reached on the same A100 (FA2's README charts);
        # the same mma.sync-era code, so the same share elsewhere.
        rho = float(uni["flash_triton"]["ratio"])
        fill(terms.flash_triton, dict(flash, fraction=flash["fraction"] * rho,
                                      bwd_fraction=flash["bwd_fraction"] * rho))
    if "flex" in uni:
        # PyTorch FlexAttention (Inductor's Triton template, torch 2.8): FA2's work units at
        # the published share of FA2's rate, forward and backward apart
        # (benchmarks/flex_attention.py: tritonbench's H100 forward, PyTorch's benchmark
        # backward; data/measurements/flex_attention_published.csv).
        fx = uni["flex"]
        fill(terms.flex, dict(flash, fraction=flash["fraction"] * float(fx["fwd_ratio"]),
                              bwd_fraction=flash["bwd_fraction"] * float(fx["bwd_ratio"])))
    if "fa3" in uni:
        scale = _softmax_scale(hw)
        fill(terms.fa3, _fa3(uni["fa3"], wg if native else mma, scale))
        hopper = arch == "hopper"  # FlashInfer's FA3-derived prefill is an sm90 kernel
        fill(terms.flashinfer, _flashinfer(uni, wg if hopper else mma, mma, fa2_bwd, hopper,
                                           scale))
    # SDPA's math path: aten's non-vectorized elementwise kernels, in fp32 FLOP-equivalents per
    # element (scaled by each accelerator's own fp32 rate through the estimate).
    terms.strided_element_flops = float(uni.get("math", {}).get("strided_element_flops", 0.0))
    return terms


#: The call constants of one implementation's terms (``AttentionBackendTerms``).
GPU_CALL_FIELDS = ("call_s", "bwd_call_s", "decode_call_s")

#: Kernels of one backward call the core prices on their own: the fused kernel, and for
#: FlashAttention-2 / cuDNN its dot(dO, O) pre-pass and its dQ conversion (the CUTLASS
#: memory-efficient backward computes both inside its one kernel). A forward or decode call:
#: the fused kernel alone.
_PRICED_BWD = {"flash": 3, "cudnn": 3, "efficient": 1, "flash_triton": 3, "flex": 3}


def gpu_time_terms(terms: Any, doc: dict[str, Any], kernel_gap_s: float,
                   kernel_s: float) -> Any:
    """``terms`` (core AttentionTerms) with the fixed parts of SDPA's fused implementations
    (FlashAttention-2, cuDNN, memory-efficient) at GPU time, from what each one launches.

    ``call_s``, ``bwd_call_s``, ``decode_call_s`` and the fused kernel's ``gemm_latency_s``
    were fitted on rows timed per call (``triton.testing.do_bench``), so they hold the host's
    time to issue the SDPA call as well as the kernels' own fixed GPU time. On the GPU (a trace,
    a program, a CUDA graph) only the latter remains: every launched kernel costs at least a
    kernel's minimum time on the chip, ``kernel_gap_s`` (the host terms' back-to-back kernel
    span, measured on CUDA-graph chains), and its work beyond that is priced by its tiles (the
    fused kernel's work units, their per-unit overhead) or its bytes (streaming kernels). So at
    GPU time

    - the fused kernel's fixed time is ``kernel_latency_s = kernel_s``, the GPU time of a kernel
      that loads from DRAM, as every streaming kernel takes it
      (:func:`roofline._core.gpu_streaming_latency_s`: ``kernel_gap_s`` plus the DRAM
      pipeline's ramp), not the GEMM's per-call ``gemm_latency_s``;
    - the call constant of a direction is ``(launches - priced) * kernel_gap_s``: the small
      kernels the backend launches per call that the core does not price on its own
      (``universal.gpu_launches``, counted on the H200 profiler rows of
      ``data/programs/h200/small_kernels.jsonl``: cuDNN's memsets and its decode
      ``lean_reduction_kernel``, FA2's split-KV combine and its backward's two
      ``contiguous`` copies, the memory-efficient backward's workspace fill); ``priced`` is
      1 for a forward or decode call, :data:`_PRICED_BWD` for a backward.

    The engine kernels (``fa3``, ``flashinfer``) keep their constants (no trace of them says
    how much is the host's). An implementation without call constants (all zero) keeps them;
    an empty ``doc``, one without ``gpu_launches`` or a non-positive time leaves ``terms``
    as they are (per-call values everywhere)."""
    launches = doc.get("universal", {}).get("gpu_launches", {}) if doc else {}
    if not launches or kernel_gap_s <= 0.0 or kernel_s <= 0.0:
        return terms
    for name in ("flash", "cudnn", "efficient", "flash_triton", "flex"):
        backend = getattr(terms, name)
        counts = launches.get(name)
        if counts is None or not any(getattr(backend, f) > 0.0 for f in GPU_CALL_FIELDS):
            continue
        priced = {"fwd": 1, "decode": 1, "bwd": _PRICED_BWD[name]}
        extra = {d: max(0.0, float(counts[d]) - priced[d]) for d in priced}
        backend.kernel_latency_s = kernel_s
        backend.call_s = extra["fwd"] * kernel_gap_s
        backend.bwd_call_s = extra["bwd"] * kernel_gap_s
        backend.decode_call_s = extra["decode"] * kernel_gap_s
        setattr(terms, name, backend)
    return terms
