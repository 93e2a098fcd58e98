"""Fit the GEMM terms (GemmTerms) of the default model on the H100 cuBLAS / grouped GEMM rows.

Usage: ``python benchmarks/fit_gemm.py`` (writes python/roofline/data/terms/gemm.json).

The terms are a handful of physical constants, never per-shape values: the GPU time of one
library call (fixed from a back-to-back measurement, see LATENCY_S), the extra time of a
rowwise epilogue, its split-K limit and its narrowest tile, the fraction of the streaming
bandwidth a GEMM's K-loop pipeline reaches, the rate of unaligned (non-TMA) GEMMs, the GPU's
clock drop under sustained tensor load (fraction and time constant, searched jointly), the
grouped kernel's rate and latency, and the per-call overhead of do_bench timing (added by the
validation predictor only). They are chosen by coordinate descent over small grids, minimising
the mean over GEMM families of (median + p90 / 4) absolute relative error, so no single family
or outlier decides them. The published GEMM files enter the loss as two more families (DeepGEMM
on H800, which the terms leave alone, and the best-of-sweep ceilings). For every accelerator
with a ceiling the fit also writes the compute scale that makes the model with the terms
reproduce it (the achievable fractions of calibration.json are not refitted).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from roofline import _core  # noqa: E402
from roofline._dtypes import default_out  # noqa: E402
from roofline._dtypes import dtype as parse_dtype  # noqa: E402
from roofline._params.shape_aware import core_objects  # noqa: E402
from roofline.hardware import hardware  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from _measurements import MAX_ACHIEVABLE_NAMES, gpu_rows, read  # noqa: E402

DATA = ROOT / "data" / "measurements"
OUT = ROOT / "python" / "roofline" / "data" / "terms" / "gemm.json"

#: The families this fit sees (the noise rows are bf16 GEMMs measured twice).
FAMILIES = (
    "gpu_gemm_bf16", "gpu_gemm_fp32", "gpu_gemm_tf32", "gpu_gemm_fp8_tensorwise",
    "gpu_gemm_fp8_rowwise", "gpu_grouped_gemm_bf16", "gpu_grouped_gemm_fp8",
    "gpu_grouped_gemm_counts", "gpu_noise_gemm_rep0", "gpu_noise_gemm_rep1",
)

#: Search grids per term (coordinate descent visits them in this order, three sweeps).
GRIDS: dict[str, list[float]] = {
    "call_overhead_s": [x * 1e-6 for x in np.arange(0.0, 4.01, 0.25)],
    "rowwise_latency_s": [x * 1e-6 for x in np.arange(0.0, 6.01, 0.25)],
    "memory_fraction": list(np.arange(0.70, 1.001, 0.01)),
    "rowwise_max_splits": [0.0, 1.0, 2.0, 4.0],
    "unaligned_fraction": [0.0] + list(np.arange(0.1, 1.001, 0.05)),
    "grouped_compute_fraction": list(np.arange(0.60, 1.001, 0.01)),
    "grouped_latency_s": [x * 1e-6 for x in np.arange(0.0, 20.01, 0.5)],
    "rowwise_min_tile_n": [0.0, 64.0, 128.0, 192.0, 256.0],
}


#: GPU time of a tiny library GEMM inside a stream of kernels (launch, prologue, epilogue):
#: sglang PR #17801 measured 8 back-to-back decode projection GEMMs on H100 at 38.8 us, 4.85 us
#: each, of which ~0.3 us is their weight traffic. Per-call timing (do_bench: events around
#: one call) adds ``call_overhead_s`` on top, which only the validation predictor adds.
LATENCY_S = 4.1e-6

#: Tensor power density of the GPU the clock drop is fitted on (H100 SXM: dense bf16 FLOP/s per
#: watt of board power); other GPUs scale the drop's depth by theirs (_core.gemm_throttle_fraction).
REF_FLOPS_PER_W = 989.5e12 / 700.0

#: Most coordinate-descent sweeps (each visits every grid; the fit stops at the first sweep that
#: changes nothing).
SWEEPS = 10

#: The clock-drop terms, searched jointly (either alone does nothing).
THROTTLE_FRACTIONS = [0.0] + [float(x) for x in np.arange(0.70, 0.991, 0.01)]
THROTTLE_TIMES = [x * 1e-6 for x in (25, 50, 100, 150, 200, 300, 400, 600, 800, 1000, 1500,
                                     2000, 3000, 5000)]


def published_rows(data_dir: Path) -> list[dict[str, Any]]:
    """DeepGEMM H800 and best-of-sweep rows in this script's row format (guards of the fit)."""
    rows: list[dict[str, Any]] = []
    for r in read(data_dir / "gemm_fp8_dense_h800.csv"):
        rows.append({"family": "published: gemm_fp8_dense_h800", "op": "gemm", "hw": "H800",
                     "args": {"m": float(r["M_per_group"]), "k": float(r["K"]),
                              "n": float(r["N"]), "dtype": "fp8_block_1x128",
                              "b_dtype": "fp8_block_128x128"},
                     "measured": float(r["derived_time_us"]) * 1e-6})
    for r in read(data_dir / "gemm_max_achievable.csv"):
        name = MAX_ACHIEVABLE_NAMES.get(r["gpu"])
        if name is None:
            continue
        m, n, k = float(r["M"]), float(r["N"]), float(r["K"])
        fp8 = r["dtype"].startswith("fp8")
        dt = "fp8" if fp8 else "bf16"
        rows.append({"family": "published: gemm_max_achievable", "op": "gemm", "hw": name,
                     "cls": "fp8" if fp8 else "bf16",
                     "args": {"m": m, "k": k, "n": n, "dtype": dt, "out_dtype": dt},
                     "measured": 2 * m * n * k / (float(r["measured_tflops"]) * 1e12)})
    return rows


def load_rows(data_dir: Path) -> list[dict[str, Any]]:
    """The rows of our GEMM families from gpu_h100_calibration.jsonl."""
    return gpu_rows(data_dir, FAMILIES)


def _scaling(r: dict[str, Any]) -> Any:
    fam = r["family"]
    if fam.endswith("_rowwise") or fam == "gpu_grouped_gemm_fp8":
        return _core.Scaling.rowwise
    if fam.endswith("_tensorwise"):
        return _core.Scaling.tensorwise
    return _core.Scaling.none


_CORE: dict[str, tuple[Any, Any]] = {}


def core(name: str, terms: Any) -> tuple[Any, Any]:
    """Core hardware and default efficiency of accelerator ``name`` with GemmTerms ``terms``."""
    if name not in _CORE:
        _CORE[name] = core_objects(hardware(name))
    chw, ceff = _CORE[name]
    if terms.throttle_fraction > 0:  # the clock drop scales with each GPU's power density
        hw = hardware(name)
        fitted = terms.throttle_fraction
        terms.throttle_fraction = _core.gemm_throttle_fraction(
            fitted, REF_FLOPS_PER_W, hw.bf16_flops_per_s or 0.0, hw.tdp_w or 0.0)
        ceff.gemm = terms
        terms.throttle_fraction = fitted
    else:
        ceff.gemm = terms
    return chw, ceff


def predict(rows: list[dict[str, Any]], terms: Any) -> np.ndarray:
    """Predicted seconds of every row (H100 SXM unless the row names its hardware)."""
    out = np.empty(len(rows))
    one = np.ones(1)
    for i, r in enumerate(rows):
        chw, ceff = core(r.get("hw", "H100 SXM"), terms)
        a = r["args"]
        dt = parse_dtype("fit", a["dtype"])
        dt_b = parse_dtype("fit", a.get("b_dtype", a["dtype"]))
        o = parse_dtype("fit", a["out_dtype"]) if "out_dtype" in a else default_out(dt)
        sc = _scaling(r)
        if r["op"] == "gemm":
            cols = _core.gemm_sweep(one * a["m"], one * a["k"], one * a["n"], one, dt, dt_b, o,
                                    False, chw, ceff, 1, sc)
        elif "counts" in a:
            cnt = np.asarray(a["counts"], dtype=float)[None, :]
            cols = _core.grouped_gemm_counts_sweep(cnt, np.zeros(1), one * a["k"], one * a["n"],
                                                   dt, dt, o, _core.GroupedLayout.contiguous,
                                                   chw, ceff, sc)
        else:
            cols = _core.grouped_gemm_sweep(one * a["m_per_group"], one * a["k"], one * a["n"],
                                            one * a["groups"], dt, dt, o, chw, ceff, sc)
        out[i] = cols[0][0]
    return out


def family_errors(rows: list[dict[str, Any]], pred: np.ndarray) -> dict[str, tuple[float, ...]]:
    """(median, p90, bias) of the relative error per family."""
    meas = np.array([r["measured"] for r in rows])
    fam = np.array([r["family"] for r in rows])
    rel = pred / meas - 1.0
    res: dict[str, tuple[float, ...]] = {}
    for f in dict.fromkeys(fam):
        sel = fam == f
        if sel.any():
            e = np.abs(rel[sel])
            res[f] = (float(np.median(e)), float(np.percentile(e, 90)),
                      float(np.median(rel[sel])))
    return res


def loss(errs: dict[str, tuple[float, ...]]) -> float:
    """Mean over families of median + p90 / 4 (the noise repeats count as one family)."""
    vals = [m + p / 4 for f, (m, p, _) in errs.items() if f != "gpu_noise_gemm_rep1"]
    return float(np.mean(vals))


def core_terms(t: dict[str, float]) -> Any:
    """The core GemmTerms with the values t."""
    g = _core.GemmTerms()
    for f, v in t.items():
        setattr(g, f, v)
    return g


def compute_scales(rows: list[dict[str, Any]], t: dict[str, float]
                   ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Per accelerator and class, the tensor-rate multiplier that makes the model with terms
    t reproduce its best-of-sweep ceiling (the rows that set calibration.json's achievable
    fractions; the fastest of an accelerator's rows, as calibrate.py takes the largest
    fraction), and the vendor medians for accelerators without a ceiling.

    Rerun (after calibrate.py's ``achievable``) whenever the hardware fields, peaks or GEMM
    model change; tests/test_ceiling_fits.py checks the packaged scales against it."""
    ceil = [r for r in rows if "cls" in r]
    scales: dict[str, dict[str, float]] = {}
    for r in ceil:
        scales.setdefault(r["hw"], {})[r["cls"]] = 1.0
    for _ in range(4):  # fixed point: latency and clock drop do not scale with the rate
        pred = np.empty(len(ceil))
        for i, r in enumerate(ceil):
            s = scales[r["hw"]]
            pred[i] = predict([r], core_terms(dict(t, compute_scale_16=s.get("bf16", 1.0),
                                                     compute_scale_8=s.get("fp8", 1.0))))[0]
        need: dict[tuple[str, str], float] = {}
        for r, p in zip(ceil, pred, strict=True):
            key = (r["hw"], r["cls"])
            need[key] = max(need.get(key, 0.0), p / r["measured"])
        for (hw_name, cls), ratio in need.items():
            scales[hw_name][cls] = scales[hw_name][cls] * ratio
    fallback: dict[str, dict[str, float]] = {}
    for vendor in ("NVIDIA", "AMD", "Intel"):
        for cls in ("bf16", "fp8"):
            vals = [v[cls] for name, v in scales.items()
                    if hardware(name).vendor == vendor and cls in v]
            if vals:
                fallback.setdefault(vendor, {})[cls] = round(float(np.median(vals)), 4)
    return ({k: {c: round(x, 4) for c, x in v.items()} for k, v in scales.items()}, fallback)


def with_scales(rows: list[dict[str, Any]], t: dict[str, float]) -> np.ndarray:
    """Predictions of rows under terms t, each on its accelerator with its compute scales
    (our do_bench rows with the per-call overhead of the measurement added)."""
    overhead = t.get("call_overhead_s", 0.0)
    t = {f: v for f, v in t.items() if f != "call_overhead_s"}
    own, fallback = compute_scales(rows, t)
    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        name = r.get("hw", "H100 SXM")
        key = "H100 SXM" if name == "H800" else name
        vendor = hardware(name).vendor
        s = {c: own.get(key, {}).get(c, fallback.get(vendor, {}).get(c, 1.0))
             for c in ("bf16", "fp8")}
        out[i] = predict([r], core_terms(dict(t, compute_scale_16=s["bf16"],
                                              compute_scale_8=s["fp8"])))[0]
        if "hw" not in r:
            out[i] += overhead
    return out


def fit(data_dir: Path = DATA, write: bool = True) -> dict[str, Any]:
    """Fit GemmTerms on data_dir's H100 rows; write data/terms/gemm.json; return the document."""
    rows = load_rows(data_dir) + published_rows(data_dir)
    terms = {f: 0.0 for f in GRIDS}
    terms.update(latency_s=LATENCY_S, throttle_fraction=0.0, throttle_time_s=0.0)

    def evaluate(t: dict[str, float]) -> float:
        return loss(family_errors(rows, with_scales(rows, t)))

    best = evaluate(terms)
    steps: list[list[dict[str, float]]] = [[{f: float(v)} for v in grid]
                                           for f, grid in GRIDS.items()]
    steps.append([{"throttle_fraction": fr, "throttle_time_s": tau}
                  for fr in THROTTLE_FRACTIONS for tau in THROTTLE_TIMES])
    for _ in range(SWEEPS):  # until a sweep changes nothing
        before = best
        for step in steps:
            start = dict(terms)
            for change in step:
                trial = dict(start, **change)
                val = evaluate(trial)
                if val < best - 1e-12:
                    best, terms = val, trial
        if best >= before - 1e-12:
            break
    errs = family_errors(rows, with_scales(rows, terms))
    overhead = terms.pop("call_overhead_s")
    own, fallback = compute_scales(rows, terms)
    doc = {
        "source": "benchmarks/fit_gemm.py on gpu_h100_calibration.jsonl (H100 SXM, torch 2.11, "
                  "cuBLAS nvjet / torch._grouped_mm, do_bench per-call times)",
        "terms": {f: round(v, 10) for f, v in terms.items()},
        "vendor_overrides": {},
        "throttle_reference_flops_per_w": REF_FLOPS_PER_W,
        "measurement": {"per_call_overhead_s": round(overhead, 10),
                        "about": "added by roofline.validation's GEMM predictor to rows timed "
                                 "per call (do_bench): events around one call; not GPU time"},
        "compute_scale": own,
        "fallback_compute_scale": fallback,
        "fit_errors": {f: {"median": round(m, 4), "p90": round(p, 4), "bias": round(b, 4)}
                       for f, (m, p, b) in errs.items()},
    }
    if write:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


if __name__ == "__main__":
    d = fit()
    print(json.dumps(d["terms"], indent=2))
    for f, e in d["fit_errors"].items():
        print(f"{f:28s} median {e['median']:6.1%}  p90 {e['p90']:6.1%}  bias {e['bias']:+6.1%}")
