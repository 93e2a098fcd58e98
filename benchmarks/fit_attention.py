"""Fit the attention implementation terms (data/terms/attention.json) on measured SDPA rows.

Families (``gpu_h100_calibration.jsonl``): ``gpu_attention_{flash,cudnn}[_bwd]``,
``gpu_attention_materialized``, ``gpu_decode_{flash,cudnn,efficient}``, ``gpu_sdpa_default``;
plus the xformers (memory-efficient, CUTLASS) rows of ``attention_fwd_bwd_a100_h100.csv`` for
the efficient prefill rate. Each group of terms is set by a small grid search minimising the
median absolute relative error of the families it acts on (no per-shape tables): the cuDNN
(wgmma) fraction and its backward / decode ratios, FlashAttention-2's backward ratio on
wgmma hardware, the efficient kernel's rates, and one fixed GPU time per call per backend (cuDNN
decode: its own call time and its loads' bandwidth vs the streaming rate, fitted on median +
p90 / 4 since they act on the smallest and the largest rows). The
efficient kernel's per-CTA bandwidth (``CTA_BYTES_PER_S``) is set from its tile and the DRAM
latency, not fitted.

The math path's one term, ``universal.math.strided_element_flops``, is not fitted on these rows:
it is the element rate of aten's non-vectorized TensorIterator kernel (``elementwise_kernel<128,
4>``, what a broadcast or strided operand selects), read off the H100 profiler trace
``tests/data/traces/encoder_layer_train.json.gz`` (median over its launches with two tensor
inputs) and stored as fp32 FLOP-equivalents per element (the H100's achievable fp32 rate / that
rate), so it scales with an accelerator's SMs and clock.

Run: ``python benchmarks/fit_attention.py [--data DIR]`` (writes the JSON and prints errors).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from _measurements import gpu_rows  # noqa: E402

import roofline as rl  # noqa: E402
from roofline import _core  # noqa: E402
from roofline._params import attention as terms_mod  # noqa: E402
from roofline._params.shape_aware import core_objects  # noqa: E402
from roofline.trace._load import load as load_trace  # noqa: E402

OUT = ROOT / "python" / "roofline" / "data" / "terms" / "attention.json"
DATA = ROOT / "data" / "measurements"
TRACE = "encoder_layer_train.json.gz"
FAMILIES = ("gpu_attention_flash", "gpu_attention_flash_bwd", "gpu_attention_cudnn",
            "gpu_attention_cudnn_bwd", "gpu_attention_materialized", "gpu_decode_flash",
            "gpu_decode_cudnn", "gpu_decode_efficient", "gpu_sdpa_default")

#: Bandwidth one CUTLASS memory-efficient CTA sustains alone on an SM (not fitted): its loop
#: loads a K/V block (~32 KiB of bf16 at head_dim 128) and only then computes on it, so a CTA
#: has about one block in flight per DRAM round trip (~650 ns on HBM3): 32 KiB / 650 ns.
#: It bounds decode with fewer (sequence, head) pairs than SMs (one CTA per SM, nothing to
#: hide the loads behind), where the kernel runs without split-KV.
CTA_BYTES_PER_S = 50e9

#: Starting document: tiles read from the kernels that ran (cuDNN sm90 prefill
#: ``..._64x128x128_4x1`` / decode ``..._16x128x128_1x``; CUTLASS memory-efficient sm80 kernels
#: use 64 x 64 blocks for head dims <= 128, no split-KV, one query head per tile).
BASE: dict[str, Any] = {
    "schema": "roofline.terms.attention/1",
    "mma_sync_reference": {"hopper": "H100 SXM", "blackwell": "H100 SXM",
                           "blackwell_consumer": "A100 SXM 80GB", "ada": "A100 SXM 80GB",
                           "ampere": "A100 SXM 80GB", "volta": "A100 SXM 80GB",
                           "rocm": "H100 SXM", "default": "A100 SXM 80GB"},
    "paths": {"wgmma": {"fraction": 0.8}},
    "universal": {
        "flash": {"tiles": {}, "call_s": 0.0, "bwd_call_s": 0.0,
                  "bwd_ratio_mma_on_wgmma": 1.0},
        "cudnn": {"tiles": {"q_tile": 128.0, "decode_rows": 16.0}, "bwd_ratio": 1.0,
                  "decode_ratio": 1.0, "call_s": 0.0, "bwd_call_s": 0.0, "decode_call_s": 0.0,
                  "bandwidth_scale": 1.0},
        "efficient": {"tiles": {"q_tile": 64.0, "kv_tile": 64.0, "no_split_kv": 1.0,
                                "no_pack_gqa": 1.0},
                      "ratio": 0.7, "decode_ratio": 0.3, "call_s": 0.0,
                      "cta_bytes_per_s": CTA_BYTES_PER_S},
        "math": {"strided_element_flops": 0.0},
        # kernels launched per call at GPU time (not fitted: counted on the H200 profiler rows
        # of data/programs/h200/small_kernels.jsonl, see the document's gpu_call_notes and
        # _params/attention.gpu_time_terms)
        "gpu_launches": {"flash": {"fwd": 1, "bwd": 5, "decode": 2},
                         "cudnn": {"fwd": 2, "bwd": 4, "decode": 2},
                         "efficient": {"fwd": 1, "bwd": 2, "decode": 1},
                         # flash_attn_triton.py: the forward kernel; the backward's do.o
                         # pre-pass, the fp32 dq buffer's zero_ (autotune pre_hook), the
                         # kernel, the dq copy_ (counted from the source, not a trace)
                         "flash_triton": {"fwd": 1, "bwd": 4, "decode": 1},
                         # FlexAttention (torch 2.8): the template kernel; the backward's
                         # delta pre-pass (sum(o*do) minus the LSE gradient) and the template
                         # kernel (dQ and dK/dV programs, no fp32 dQ conversion)
                         "flex": {"fwd": 1, "bwd": 2, "decode": 1}},
        "flash_triton": {"ratio": 1.0},
        "flex": {"fwd_ratio": 1.0, "bwd_ratio": 1.0},
    },
}


def triton_ratio(data_dir: Path = DATA) -> float:
    """Tri Dao's Triton FlashAttention against FlashAttention-2 on the same GPU: the median, over
    the A100 shapes of ``attention_fwd_bwd_a100_h100.csv`` (FA2's README charts) where both
    were measured, of the Triton kernel's forward + backward TFLOPS over FA2's (21 shapes:
    head dim 64 / 128, causal or not, 512-16k tokens; 0.42-0.68, lower for long sequences
    and head dim 128)."""
    meas: dict[tuple[str, str, str, str], dict[str, float]] = {}
    with open(data_dir / "attention_fwd_bwd_a100_h100.csv") as f:
        for r in csv.DictReader(f):
            if r["gpu"].startswith("A100") and r["measured_tflops"]:
                key = (r["headdim"], r["causal"], r["seqlen_q"], r["seqlen_kv"])
                meas.setdefault(key, {})[r["impl"]] = float(r["measured_tflops"])
    ratios = [m["FlashAttention Triton"] / m["FlashAttention-2"] for m in meas.values()
              if "FlashAttention Triton" in m and "FlashAttention-2" in m]
    return float(np.median(ratios))


def flex_ratios(data_dir: Path = DATA) -> tuple[float, float]:
    """PyTorch FlexAttention against FlashAttention-2 on the same GPU: the medians of FA2's
    time over flex's, forward over the H100 rows and backward over all backward rows, of
    ``flex_attention_published.csv`` (tritonbench's H100 forward sweep, pytorch/benchmark
    #2443: 0.92-1.14, flex ahead from 2k tokens; PyTorch's score_mod.py A6000 backward,
    pytorch/pytorch #137036: 0.867, the one published backward pair found)."""
    fwd: list[float] = []
    bwd: list[float] = []
    with open(data_dir / "flex_attention_published.csv") as f:
        for r in csv.DictReader(f):
            ratio = float(r["fa2_ms"]) / float(r["flex_ms"])
            if r["pass"] == "bwd":
                bwd.append(ratio)
            elif r["gpu"] == "H100" and r["causal"] == "False":
                fwd.append(ratio)
    return round(float(np.median(fwd)), 4), round(float(np.median(bwd)), 4)


def strided_element_flops(data_dir: Path = DATA, hw_name: str = "H100 SXM") -> float:
    """fp32 FLOP-equivalents of one element of aten's non-vectorized elementwise kernel.

    Median element rate (elements / kernel time) of the ``elementwise_kernel<128, 4>`` launches
    of the profiler trace whose op takes two tensor inputs (add, add_ with a broadcast bias or a
    transposed operand, dropout backward): their bf16 traffic moves at 1.4-1.9 TB/s, well below
    the DRAM rate, so the rate is the kernel's per-element offset arithmetic. Returned as the
    accelerator's achievable fp32 rate divided by that element rate (0 without the trace).
    """
    from roofline._params.achievable import compute_fractions

    path = data_dir.parent / "traces" / TRACE
    if not path.exists():
        return 0.0
    events = load_trace(path)[0]["traceEvents"]
    ops: dict[Any, dict[str, Any]] = {}
    for ev in events:
        if ev.get("cat") == "cpu_op":
            ops.setdefault(ev["args"].get("External id"), ev)
    rates = []
    for ev in events:
        if ev.get("cat") != "kernel" or not ev["name"].startswith(
                "void at::native::elementwise_kernel<128, 4"):
            continue
        op = ops.get(ev["args"].get("External id"))
        if op is None:
            continue
        strides = [s for s in op["args"].get("Input Strides", []) if s and any(s)]
        dims = [d for d in op["args"].get("Input Dims", []) if d]
        if len(strides) < 2 or not dims or ev["dur"] <= 0:
            continue
        rates.append(math.prod(dims[0]) / (ev["dur"] * 1e-6))
    if not rates:
        return 0.0
    hw = rl.hardware(hw_name)
    fp32 = float(hw.fp32_flops_per_s or 0.0) * compute_fractions(hw).get("fp32", 1.0)
    return fp32 / float(np.median(rates))


def rows(data: Path) -> list[dict[str, Any]]:
    return gpu_rows(data, FAMILIES)


_BACKEND = {"flash": "flash", "cudnn": "cudnn", "efficient": "efficient", "math": "math"}


def predict(doc: dict[str, Any], rs: list[dict[str, Any]], hw_name: str = "H100 SXM") -> np.ndarray:
    """Predicted seconds of each row with the terms of ``doc`` (through the public API)."""
    hw = rl.hardware(hw_name)
    terms = terms_mod.core_terms(hw, doc)
    chw, ceff = core_objects(hw)
    ceff.attention = terms
    out = []
    from roofline._dtypes import dtype as parse_dtype
    from roofline.ops.attention import _CORE_BACKEND, _prepare, attention_backend

    for r in rs:
        a = dict(r["args"])
        kvh = a.get("kv_heads", a["heads"])
        d = a["head_dim"]
        dv = a.get("v_head_dim", d)
        arrays, _ = _prepare("fit", a["batch"], a["heads"], a["q_len"], a["kv_len"], d, kvh, dv,
                             False)
        dt = parse_dtype("fit", a.get("dtype", "bf16"))
        bwd = bool(a.get("backward", False))
        name = r.get("backend") or str(attention_backend(
            a["batch"], a["heads"], a["q_len"], a["kv_len"], d, kv_heads=kvh, v_head_dim=dv,
            causal=bool(a.get("causal")), backward=bwd, dtype=a.get("dtype", "bf16"),
            hardware=hw))
        cols = _core.attention_sweep(*arrays, False, bool(a.get("causal")), name != "math", bwd,
                                     dt, chw, ceff, _CORE_BACKEND[name])
        out.append(float(cols[0][0]))
    return np.array(out)


def errors(doc: dict[str, Any], rs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    pred = predict(doc, rs)
    meas = np.array([r["measured"] for r in rs])
    err = pred / meas - 1.0
    fams = np.array([r["family"] for r in rs])
    return {f: err[fams == f] for f in FAMILIES if (fams == f).any()}


def med(x: np.ndarray) -> float:
    return float(np.median(np.abs(x))) if len(x) else 0.0


def xformers_rows(data: Path) -> list[tuple[str, float, float, float, float, bool, float]]:
    out = []
    gpus = {"A100 80GB SXM4": "A100 SXM 80GB", "H100 80GB SXM5": "H100 SXM"}
    with open(data / "attention_fwd_bwd_a100_h100.csv") as f:
        for r in csv.DictReader(f):
            if r["impl"] == "xformers" and r["derived_time_ms"]:
                out.append((gpus[r["gpu"]], float(r["batch"]), float(r["nheads"]),
                            float(r["seqlen_q"]), float(r["headdim"]), r["causal"] == "True",
                            float(r["derived_time_ms"]) * 1e-3))
    return out


def xformers_error(doc: dict[str, Any], xs: list[Any]) -> float:
    errs = []
    for name, b, h, s, d, causal, t in xs:
        hw = rl.hardware(name)
        chw, ceff = core_objects(hw)
        ceff.attention = terms_mod.core_terms(hw, doc)
        tot = 0.0
        for bwd in (False, True):
            cols = _core.attention_sweep(*(np.array([x]) for x in (b, h, h, s, s, d, d)), False,
                                         causal, True, bwd, _core.DType.bf16, chw, ceff,
                                         _core.AttentionBackend.efficient)
            tot += float(cols[0][0])
        errs.append(abs(tot / t - 1.0))
    return float(np.median(errs))


def _set(doc: dict[str, Any], path: str, value: float) -> dict[str, Any]:
    new = json.loads(json.dumps(doc))
    node = new
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    return new


def search(doc: dict[str, Any], rs: list[dict[str, Any]], grid: dict[str, list[float]],
           families: tuple[str, ...], tail: float = 0.0) -> dict[str, Any]:
    """Best joint values of the ``grid`` paths for the median error over ``families`` (plus
    ``tail`` x the 90th percentile, for terms that act on a family's smallest rows)."""
    sel = [r for r in rs if r["family"] in families]
    best: tuple[float, dict[str, Any]] | None = None
    for values in itertools.product(*grid.values()):
        trial = doc
        for path, v in zip(grid, values, strict=True):
            trial = _set(trial, path, v)
        e = errors(trial, sel)
        score = float(np.mean([med(e[f]) + tail * float(np.percentile(np.abs(e[f]), 90))
                               for f in families if f in e]))
        if best is None or score < best[0]:
            best = (score, trial)
    assert best is not None
    return best[1]


def _rounded(x: Any) -> Any:
    """Floats to 4 significant digits (grid values carry float noise)."""
    if isinstance(x, float):
        return float(f"{x:.4g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    return x


def fit(data_dir: Path = DATA) -> dict[str, Any]:
    """Fit the terms on ``data_dir``'s measurements, write data/terms/attention.json, return it."""
    rs = rows(data_dir)
    doc = json.loads(json.dumps(BASE))
    us = 1e-6
    doc = _set(doc, "universal.math.strided_element_flops", strided_element_flops(data_dir))
    doc = _set(doc, "universal.flash_triton.ratio", triton_ratio(data_dir))
    fx_fwd, fx_bwd = flex_ratios(data_dir)
    doc = _set(doc, "universal.flex.fwd_ratio", fx_fwd)
    doc = _set(doc, "universal.flex.bwd_ratio", fx_bwd)
    # The efficient kernel's rate first (published xFormers rows): its decode terms below are
    # fitted on top of it, so they must see the rate the file ends up with.
    xs = xformers_rows(data_dir)
    best = min((xformers_error(_set(doc, "universal.efficient.ratio", v), xs), v)
               for v in np.round(np.arange(0.3, 1.001, 0.05), 3))
    doc = _set(doc, "universal.efficient.ratio", float(best[1]))
    for _ in range(2):  # two rounds: the call times and the rates interact weakly
        doc = search(doc, rs, {
            "paths.wgmma.fraction": list(np.round(np.arange(0.6, 1.001, 0.02), 3)),
            "universal.cudnn.tiles.q_tile": [64.0, 128.0],
            "universal.cudnn.call_s": [x * us for x in (0, 2, 4, 6, 8, 10, 12)],
        }, ("gpu_attention_cudnn",))
        doc = search(doc, rs, {
            "universal.cudnn.bwd_ratio": list(np.round(np.arange(0.6, 1.201, 0.02), 3)),
            "universal.cudnn.tiles.bwd_tile_overhead": [0.0, 1.5, 2.0, 3.0, 4.0],
            "universal.cudnn.bwd_call_s": [x * us for x in (0, 5, 10, 15, 20, 30)],
        }, ("gpu_attention_cudnn_bwd",))
        doc = search(doc, rs, {
            "universal.cudnn.decode_ratio": [0.25, 0.5, 0.75, 1.0],
            "universal.cudnn.tiles.decode_rows": [16.0, 64.0],
            "universal.cudnn.decode_call_s": [x * us for x in (0, 2, 4, 6, 8, 10, 12, 14)],
            "universal.cudnn.bandwidth_scale": list(np.round(np.arange(1.0, 1.081, 0.01), 3)),
        }, ("gpu_decode_cudnn",), tail=0.25)
        doc = search(doc, rs, {
            "universal.flash.call_s": [x * us for x in (0, 5, 10, 15, 20, 25, 30)],
        }, ("gpu_attention_flash", "gpu_decode_flash"))
        doc = search(doc, rs, {
            "universal.flash.bwd_ratio_mma_on_wgmma": list(np.round(np.arange(0.7, 1.001, 0.02),
                                                                    3)),
            "universal.flash.tiles.bwd_tile_overhead": [0.0, 1.5, 2.0, 3.0, 4.0],
            "universal.flash.bwd_call_s": [x * us for x in (0, 5, 10, 15, 20, 30)],
        }, ("gpu_attention_flash_bwd",))
        doc = search(doc, rs, {
            "universal.efficient.decode_ratio": list(np.round(np.arange(0.05, 0.601, 0.025), 3)),
            "universal.efficient.call_s": [x * us for x in (0, 5, 10, 15, 20, 25, 30)],
        }, ("gpu_decode_efficient",))
    e = errors(doc, rs)
    doc["fit_median_error"] = {f: round(med(v), 4) for f, v in e.items()}
    doc["fit_median_error"]["attention_fwd_bwd xformers (efficient)"] = round(best[0], 4)
    OUT.write_text(json.dumps(_rounded(doc), indent=2) + "\n")
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    doc = fit(args.data)
    rs = rows(args.data)
    e = errors(doc, rs)
    for f, v in e.items():
        print(f"{f:32s} {len(v):3d} rows  median {100 * med(v):5.1f}%  "
              f"p90 {100 * float(np.percentile(np.abs(v), 90)):5.1f}%  "
              f"bias {100 * float(np.median(v)):+5.1f}%")
    print(json.dumps({k: doc[k] for k in ("paths", "universal")}, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
