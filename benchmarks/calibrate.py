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
   bandwidth / SMs) from ``gemm_fp8_dense_h800.csv`` (DeepGEMM on H800).

Each step minimises the median absolute relative error of predicted kernel times on a small
grid. Run: ``python benchmarks/calibrate.py [--data ../shared/data/measurements]``.
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "python" / "roofline" / "data" / "calibration.json"




def core_hw(hw: rl.Hardware, fractions: dict[str, float] | None = None) -> Any:
    """Core hardware whose peaks are scaled by per-class achievable fractions."""
    fr = fractions or {}
    peaks = [
        (getattr(hw, f"{c}_flops_per_s") or 0.0) * fr.get(c, 1.0)
        for c in ("fp64", "fp32", "tf32", "bf16", "fp8", "int8", "fp4")
    ]
    return _core.Hardware(peaks, hw.mem_bytes_per_s, hw.l2_bytes or 0.0, int(hw.sms or 0),
                          hw.clock_hz or 0.0)


def core_eff(p: dict[str, float], hw: rl.Hardware) -> Any:
    sm_bw = p["sm_bandwidth_factor"] * hw.mem_bytes_per_s / hw.sms if hw.sms else 0.0
    return _core.Efficiency(1.0, p["memory_fraction"], 0.0, False, True, p["gemm_latency_s"],
                            p["memory_latency_s"], p["overlap_p"], sm_bw)


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

    # 1. achievable fractions (with the GEMM globals at their current values; refined below)
    def achievable(p: dict[str, float]) -> dict[str, dict[str, float]]:
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

    # 4. GEMM globals on DeepGEMM (H800 = H100 SXM silicon: it takes the H100 SXM fractions)
    m, k, n, t = deepgemm_rows(data)
    h800 = rl.hardware("H800")
    a, b, out = _core.DType.fp8_block_1x128, _core.DType.fp8_block_128x128, _core.DType.bf16
    grid = itertools.product([0.0, 1e-6, 2e-6, 3e-6, 4e-6], [1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0],
                             [0.0, 2.0, 4.0, 8.0])
    scored = []
    for lat, p_exp, smf in grid:
        trial = {**params, "gemm_latency_s": lat, "overlap_p": p_exp, "sm_bandwidth_factor": smf}
        fr = achievable(trial).get("H100 SXM", {})
        scored.append((median_error(gemm_times(h800, fr, trial, m, k, n, a, b, out), t),
                       lat, p_exp, smf))
    best_g = min(scored)
    params.update(gemm_latency_s=best_g[1], overlap_p=best_g[2], sm_bandwidth_factor=best_g[3])

    fractions = achievable(params)
    fallback: dict[str, dict[str, float]] = {}
    for vendor in ("NVIDIA", "AMD", "Intel"):
        for cls in ("bf16", "fp8"):
            vals = [v[cls] for name, v in fractions.items()
                    if rl.hardware(name).vendor == vendor and cls in v]
            if vals:
                fallback.setdefault(vendor, {})[cls] = round(statistics.median(vals), 4)
    return {
        "schema": "roofline.calibration/1",
        "about": "Fitted by benchmarks/calibrate.py from shared/data/measurements; see README.",
        "params": params,
        "achievable_compute_fraction": fractions,
        "fallback_compute_fraction": fallback,
        "fit_median_error": {
            "streaming (norm_softmax_h100 + fp8_quantize_h100)": round(float(best[0]), 4),
            "gemm_fp8_dense_h800": round(float(best_g[0]), 4),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=ROOT.parent / "shared" / "data" / "measurements")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    result = fit(args.data)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("params", "fit_median_error")}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
