"""Fit the default efficiency model's few parameters from published measurements.

Writes ``python/roofline/data/calibration.json``; rerun it whenever the model or the data
change and commit both. The fit never stores a measured time: it produces

1. per accelerator and peak class, the achievable fraction of the dense peak, from
   ``gemm_max_achievable.csv`` (the best GEMM of a brute-force shape sweep), divided by the
   model's own efficiency at that shape so that the model reproduces the ceiling;
2. per vendor and class, the median of those fractions: the fallback for accelerators the
   file does not list;
3. ``memory_fraction`` and ``memory_latency_s`` of streaming kernels, from
   ``norm_softmax_h100.csv`` and ``fp8_quantize_h100.csv`` (H100 SXM);
4. ``gemm_latency_s``, ``overlap_p`` (the p-norm that combines compute with operand reads)
   and ``sm_bandwidth_factor`` (DRAM bandwidth one busy SM sustains, in units of
   bandwidth / SMs) from ``gemm_fp8_dense_h800.csv`` (DeepGEMM on H800);
5. the attention terms from ``attention_fwd_bwd_a100_h100.csv``, FlashAttention-2 rows only
   (the best kernel in those charts): ``attention_softmax_flops`` (exp/softmax work per score,
   in FLOPs; what makes head dim 64 slower than 128) and ``attention_tile_overhead`` (fixed
   cost of a work unit, in KV tiles; what makes short sequences slower) on a grid, and per
   accelerator ``attention_fraction`` (flash rate / GEMM rate) as the median ratio of the
   model at fraction 1 to the measurement; vendor fallbacks are medians;
6. ``decode_fraction`` (flash decode rate / GEMM rate) from FlashMLA's compute-bound headline
   on H800 (660 TFLOPS, the 2025-04 kernel), read as the maximum over the configurations its
   test sweeps (see ``mla_sweep``).

7. then the implementation-aware terms of each area (``benchmarks/fit_<area>.py``, in the order
   of ``SCRIPT_AREAS``), fitted on our own GPU measurements (``gpu_h100_calibration.jsonl``):
   what cuBLAS, SDPA's backends, aten / Inductor row kernels, torchao's compiled casts and the host
   launch path actually do. Each writes ``python/roofline/data/terms/<area>.json``.

Each step minimises the median absolute relative error of predicted kernel times on a small
grid. Run: ``python benchmarks/calibrate.py [--data data/measurements]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
from _measurements import MAX_ACHIEVABLE_NAMES, read

import roofline as rl
from roofline import _core
from roofline._params.shape_aware import scaled_core_hardware, shape_aware_efficiency

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "python" / "roofline" / "data" / "calibration.json"




def core_hw(hw: rl.Hardware, fractions: dict[str, float] | None = None) -> Any:
    """Core hardware whose peaks are scaled by per-class achievable fractions."""
    return scaled_core_hardware(hw, fractions or {})


def core_eff(p: dict[str, float], hw: rl.Hardware, attention_fraction: float = 1.0) -> Any:
    # Before the decode step is fitted, decode runs at the full attention rate.
    return shape_aware_efficiency(hw, {"decode_fraction": 1.0, **p}, attention_fraction)


#: attention_fwd_bwd_a100_h100.csv's GPU names -> our canonical names.
ATTENTION_GPUS = {"A100 80GB SXM4": "A100 SXM 80GB", "H100 80GB SXM5": "H100 SXM"}


def attention_fwd_bwd(hw: rl.Hardware, fractions: dict[str, float], p: dict[str, float],
                      attn_fraction: float, batch: np.ndarray, heads: np.ndarray,
                      seqlen: np.ndarray, head_dim: np.ndarray, causal: bool,
                      flash: bool = True) -> np.ndarray:
    """Forward + backward time of the FlashAttention benchmark shapes (bf16, MHA)."""
    chw, ceff = core_hw(hw, fractions), core_eff(p, hw, attn_fraction)
    total = np.zeros(len(batch))
    for backward in (False, True):
        cols = _core.attention_sweep(batch, heads, heads, seqlen, seqlen, head_dim, head_dim,
                                     False, causal, flash, backward, _core.DType.bf16, chw, ceff)
        total += np.asarray(cols[0])
    return total


def fa2_rows(data: Path) -> dict[str, list[tuple[float, float, float, float, bool, float]]]:
    """Per accelerator: (batch, heads, seqlen, head_dim, causal, seconds) of FA2 fwd+bwd."""
    out: dict[str, list[tuple[float, float, float, float, bool, float]]] = {}
    for r in read(data / "attention_fwd_bwd_a100_h100.csv"):
        if r["impl"] != "FlashAttention-2" or not r["derived_time_ms"]:
            continue
        out.setdefault(ATTENTION_GPUS[r["gpu"]], []).append(
            (float(r["batch"]), float(r["nheads"]), float(r["seqlen_q"]), float(r["headdim"]),
             r["causal"] == "True", float(r["derived_time_ms"]) * 1e-3))
    return out


def fa2_predict(name: str, rows: list[tuple[float, float, float, float, bool, float]],
                p: dict[str, float], fractions: dict[str, float],
                attn_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(predicted, measured) seconds of one accelerator's FA2 rows."""
    hw = rl.hardware(name)
    pred: list[float] = []
    meas: list[float] = []
    for causal in (False, True):
        sel = [r for r in rows if r[4] == causal]
        if not sel:
            continue
        b, h, s, d = (np.array([r[i] for r in sel]) for i in range(4))
        pred.extend(attention_fwd_bwd(hw, fractions, p, attn_fraction, b, h, s, d, causal))
        meas.extend(r[5] for r in sel)
    return np.array(pred), np.array(meas)


#: FlashMLA's test sweep (tests/test_flash_mla.py, per the measurement file's notes):
#: batch 128, mean cached tokens 4096 / 8192, 16-128 query heads, 1-2 queries, causal.
MLA_SWEEP = [(128.0, sk, hq, sq) for sk in (4096.0, 8192.0) for hq in (16.0, 32.0, 64.0, 128.0)
             for sq in (1.0, 2.0)]


def mla_sweep(chw: Any, ceff: Any) -> tuple[float, float]:
    """Largest (GB/s, TFLOPS) the model predicts over MLA_SWEEP, in FlashMLA's counting.

    FlashMLA's test counts FLOPs = 2·b·s_q·s_k·h_q·(576 + 512) and bytes = 2·(b·s_k·576 +
    b·s_q·h_q·(576 + 512)) (cache once, Q and O).
    """
    b, sk, hq, sq = (np.array([c[i] for c in MLA_SWEEP]) for i in range(4))
    cols = _core.attention_sweep(b, hq, np.ones_like(b), sq, sk, np.full_like(b, 576.0),
                                 np.full_like(b, 512.0), True, True, True, False,
                                 _core.DType.bf16, chw, ceff)
    t = np.asarray(cols[0])
    flops = 2 * b * sq * sk * hq * (576 + 512)
    nbytes = 2 * (b * sk * 576 + b * sq * hq * (576 + 512))
    return float(np.max(nbytes / t) / 1e9), float(np.max(flops / t) / 1e12)


def gemm_times(hw: rl.Hardware, fractions: dict[str, float], p: dict[str, float],
               m: np.ndarray, k: np.ndarray, n: np.ndarray, a: Any, b: Any, out: Any,
               batch: np.ndarray | None = None) -> np.ndarray:
    ones = np.ones_like(m) if batch is None else batch
    cols = _core.gemm_sweep(m, k, n, ones, a, b, out, False, core_hw(hw, fractions),
                            core_eff(p, hw), 1)
    return np.asarray(cols[0])


def memory_times(hw: rl.Hardware, p: dict[str, float], read_b: np.ndarray,
                 written_b: np.ndarray) -> np.ndarray:
    cols = _core.cost_sweep(np.zeros_like(read_b), read_b, written_b, _core.PeakClass.bf16, 1.0,
                            core_hw(hw), core_eff(p, hw), 1)
    return np.asarray(cols[0])


def median_error(pred: np.ndarray, meas: np.ndarray) -> float:
    return float(np.median(np.abs(pred / meas - 1.0)))


def streaming_rows(data: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes read, bytes written, measured seconds) of the H100 streaming kernels."""
    rd, wr, t = [], [], []
    for r in read(data / "norm_softmax_h100.csv"):
        elems = float(r["batch_M"]) * float(r["reduction_N"])
        rd.append(2 * elems)
        wr.append(2 * elems)
        t.append(4 * elems / (float(r["measured_gbps"]) * 1e9))
    for r in read(data / "fp8_quantize_h100.csv"):
        # The source's GB/s counts bf16 read + fp8 write + fp32 scales: bytes = GB/s * time.
        total = float(r["measured_gbps"]) * 1e9 * float(r["measured_us"]) * 1e-6
        rd.append(total * 2 / 3)
        wr.append(total / 3)
        t.append(float(r["measured_us"]) * 1e-6)
    return np.array(rd), np.array(wr), np.array(t)


def deepgemm_rows(data: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rows = read(data / "gemm_fp8_dense_h800.csv")
    f = [[float(r[c]) for r in rows] for c in ("M_per_group", "K", "N", "derived_time_us")]
    return np.array(f[0]), np.array(f[1]), np.array(f[2]), np.array(f[3]) * 1e-6


def achievable(data: Path, p: dict[str, float]) -> dict[str, dict[str, float]]:
    """Step 1: per accelerator and class, the achievable fraction of the dense peak.

    fraction = measured FLOP/s / model FLOP/s at fraction 1, at each best-of-sweep shape of
    ``gemm_max_achievable.csv``, under the model parameters ``p`` and the hardware fields
    of ``data/hardware.csv`` (SMs, clock, peaks, bandwidth: the tile, wave and latency terms
    see them), capped at 1; the largest over an accelerator's rows of a class. Rerun it when
    any of those change (GB200's entry went stale when it gained its 152 SMs, notes §42);
    tests/test_ceiling_fits.py checks the packaged values against it.
    """
    out: dict[str, dict[str, float]] = {}
    for r in read(data / "gemm_max_achievable.csv"):
        name = MAX_ACHIEVABLE_NAMES.get(r["gpu"])
        if name is None:
            continue
        hw = rl.hardware(name)
        cls = "fp8" if r["dtype"].startswith("fp8") else "bf16"
        dt = _core.DType.fp8_e4m3 if cls == "fp8" else _core.DType.bf16
        m, n, k = (np.array([float(r[c])]) for c in ("M", "N", "K"))
        flops = 2 * m[0] * n[0] * k[0]
        ideal = flops / gemm_times(hw, {}, p, m, k, n, dt, dt, dt)[0]  # model at fraction 1
        frac = float(r["measured_tflops"]) * 1e12 / ideal
        out.setdefault(name, {})
        out[name][cls] = round(max(out[name].get(cls, 0.0), min(frac, 1.0)), 4)
    return out


def fallback_fractions(fractions: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Step 2: per vendor and class, the median of ``achievable``'s fractions."""
    fallback: dict[str, dict[str, float]] = {}
    for vendor in ("NVIDIA", "AMD", "Intel"):
        for cls in ("bf16", "fp8"):
            vals = [v[cls] for name, v in fractions.items()
                    if rl.hardware(name).vendor == vendor and cls in v]
            if vals:
                fallback.setdefault(vendor, {})[cls] = round(statistics.median(vals), 4)
    return fallback


def fit(data: Path) -> dict[str, Any]:
    params = {"memory_fraction": 0.9, "memory_latency_s": 0.0, "gemm_latency_s": 0.0,
              "overlap_p": 0.0, "sm_bandwidth_factor": 0.0}

    # 3. streaming kernels
    h100 = rl.hardware("H100 SXM")
    rd, wr, t = streaming_rows(data)
    best = min(
        (median_error(memory_times(h100, {**params, "memory_fraction": mf,
                                           "memory_latency_s": lat}, rd, wr), t), mf, lat)
        for mf in np.arange(0.80, 0.96, 0.01) for lat in np.arange(0.0, 10.01e-6, 0.25e-6)
    )
    params["memory_fraction"] = round(float(best[1]), 3)
    params["memory_latency_s"] = round(float(best[2]), 9)

    # 4. GEMM globals on DeepGEMM (H800 = H100 SXM silicon: it takes the H100 SXM fractions)
    m, k, n, t = deepgemm_rows(data)
    h800 = rl.hardware("H800")
    a, b, out = _core.DType.fp8_block_1x128, _core.DType.fp8_block_128x128, _core.DType.bf16
    grid = itertools.product([0.0, 1e-6, 2e-6, 3e-6, 4e-6], [1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0],
                             [0.0, 2.0, 4.0, 8.0])
    scored = []
    for lat, p_exp, smf in grid:
        trial = {**params, "gemm_latency_s": lat, "overlap_p": p_exp, "sm_bandwidth_factor": smf}
        fr = achievable(data, trial).get("H100 SXM", {})
        scored.append((median_error(gemm_times(h800, fr, trial, m, k, n, a, b, out), t),
                       lat, p_exp, smf))
    best_g = min(scored)
    params.update(gemm_latency_s=best_g[1], overlap_p=best_g[2], sm_bandwidth_factor=best_g[3])

    # 1. achievable fractions at the fitted GEMM globals
    fractions = achievable(data, params)

    # 5. attention terms on FlashAttention-2 fwd+bwd (A100 SXM, H100 SXM)
    fa2 = fa2_rows(data)
    scored_a = []
    for soft, t0 in itertools.product(np.arange(0.0, 201.0, 10.0), np.arange(0.0, 3.01, 0.25)):
        trial = {**params, "attention_softmax_flops": float(soft),
                 "attention_tile_overhead": float(t0)}
        attn: dict[str, float] = {}
        errs = []
        for name, rows in fa2.items():
            pred, meas = fa2_predict(name, rows, trial, fractions[name], 1.0)
            attn[name] = float(np.median(pred / meas))
            pred, meas = fa2_predict(name, rows, trial, fractions[name], attn[name])
            errs.extend(np.abs(pred / meas - 1.0))
        scored_a.append((float(np.median(errs)), float(soft), float(t0), attn))
    best_a = min(scored_a, key=lambda x: x[:3])
    params.update(attention_softmax_flops=best_a[1], attention_tile_overhead=best_a[2])
    attention_fraction = {k: round(v, 4) for k, v in best_a[3].items()}

    # 6. decode fraction from FlashMLA's 660 TFLOPS headline (H800 = H100 SXM silicon)
    h800 = rl.hardware("H800")
    dec = 1.0
    for _ in range(5):  # fixed point: the compute term scales with 1 / decode_fraction
        trial = {**params, "decode_fraction": dec}
        _, tflops = mla_sweep(core_hw(h800, fractions["H100 SXM"]), core_eff(trial, h800))
        dec = min(1.0, dec * 660.0 / tflops)
    params["decode_fraction"] = round(dec, 4)

    fallback = fallback_fractions(fractions)
    attn_fallback = {}
    for vendor in ("NVIDIA", "AMD", "Intel"):
        vals = [v for name, v in attention_fraction.items() if rl.hardware(name).vendor == vendor]
        if vals:
            attn_fallback[vendor] = round(statistics.median(vals), 4)
    return {
        "schema": "roofline.calibration/1",
        "about": "Fitted by benchmarks/calibrate.py from shared/data/measurements; see README.",
        "params": params,
        "achievable_compute_fraction": fractions,
        "fallback_compute_fraction": fallback,
        "attention_fraction": attention_fraction,
        "fallback_attention_fraction": attn_fallback,
        "attention_fraction_median": round(statistics.median(attention_fraction.values()), 4),
        "fit_median_error": {
            "streaming (norm_softmax_h100 + fp8_quantize_h100)": round(float(best[0]), 4),
            "gemm_fp8_dense_h800": round(float(best_g[0]), 4),
            "attention_fwd_bwd_a100_h100 (FlashAttention-2 rows)": round(best_a[0], 4),
        },
    }


#: Implementation-aware areas with a benchmarks/fit_<area>.py, fitted after calibration.json
#: in this order: streaming row kernels build on step 3's latency, GEMMs on the achievable
#: fractions, attention on the FlashAttention-2 fractions, casts on the streaming and GEMM
#: terms, host time on the rest.
SCRIPT_AREAS = ("row_ops", "gemm", "attention", "cast", "host")


def _reload_fits() -> None:
    """Forget loaded fits so that the next step sees what the previous one wrote."""
    from roofline._params.resolve import clear_caches

    clear_caches()


def fit_areas(data: Path, areas: tuple[str, ...] = SCRIPT_AREAS) -> None:
    """Run ``benchmarks/fit_<area>.py``'s ``fit(data)`` for each area (each writes its JSON)."""
    import importlib

    for area in areas:
        module = importlib.import_module(f"fit_{area}")
        _reload_fits()
        print(f"fitting {area} terms ...", flush=True)
        module.fit(data)
    _reload_fits()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=ROOT / "data" / "measurements")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--areas", nargs="*", default=list(SCRIPT_AREAS),
                        help="implementation-aware areas to refit after calibration.json "
                             f"(default: all of {', '.join(SCRIPT_AREAS)}; none: --areas)")
    args = parser.parse_args()
    result = fit(args.data)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("params", "fit_median_error")}, indent=2))
    print(f"wrote {args.out}")
    unknown = sorted(set(args.areas) - set(SCRIPT_AREAS))
    if unknown:
        parser.error(f"--areas: unknown {', '.join(unknown)} "
                     f"(choose from {', '.join(SCRIPT_AREAS)})")
    fit_areas(args.data, tuple(a for a in SCRIPT_AREAS if a in args.areas))


if __name__ == "__main__":
    main()
