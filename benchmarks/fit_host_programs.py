"""Derive the eager-program host terms from the 2-layer HF Llama traces; score every eager row.

The host of an eager PyTorch program runs, per step, one dispatch per aten op called from
Python and the Python of every ``nn.Module`` call (see ``roofline/torch/_host.py``). This
script reads those costs off the H200 profiler traces of the 2-layer HF ``LlamaForCausalLM``
(``data/programs/h200/traces``, rows without ``_L4``) and nothing else:

- top-level ``cpu_op`` events (not nested in another op of the thread) are the ops Python
  called; each is classed by what it ran: ``gemm`` (``aten::linear`` / ``matmul`` / ``mm`` /
  ``addmm`` / ``bmm``), ``attention`` (``aten::scaled_dot_product_attention``), ``backward``
  (``autograd::engine::evaluate_function``), ``kernel`` (a ``cuda_runtime`` launch inside its
  span), else ``view``. ``op_<class>_s`` = median CPU duration per call of the class over the
  2-layer eager traces (decode, prefill, train);
- ``module_call_s``: the host time of a step not spent inside top-level ops (HF's Python,
  ``nn.Module.__call__``), per module call: over the host-bound 2-layer eager decode traces
  (profiled step span > 1.5 x the kernels' time), median of ``(span - sum_c n_c x op_c_s) /
  module calls`` (module calls per step counted by ``rl.torch.estimate`` of the same module);
- the profiler inflates host time (it records every op and launch); every term is scaled by
  ``r`` = median over the same host-bound decode rows of the un-profiled wall per step
  (``programs.jsonl`` ``wall_s``) / the profiled step span. ``r`` ~ 0.65.

The 4-layer rows (``_L4``) are held out. The VM's CPU ran at different speeds in the two
processes (the 4-layer run's per-op costs are ~0.6-0.8x the 2-layer run's), so host figures
carry up to ~2x machine noise.

Run: ``PYTHONPATH=python python benchmarks/fit_host_programs.py [--write]`` (``--write``
stores the terms in ``python/roofline/data/terms/host.json`` before scoring).
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import os
import statistics
import sys
import warnings
from collections import defaultdict
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpu_programs as gp  # noqa: E402

TERMS = os.path.join(HERE, "..", "python", "roofline", "data", "terms", "host.json")
GEMM = {"aten::linear", "aten::matmul", "aten::mm", "aten::addmm", "aten::bmm"}
FIELD = {"view": "op_view_s", "kernel": "op_kernel_s", "gemm": "op_gemm_s",
         "attention": "op_attention_s", "backward": "op_backward_s"}


def trace_calls(path: str) -> tuple[dict[str, list[float]], float, float]:
    """Per-class CPU durations (s) of the top-level ops, the profiled span and kernel time."""
    with gzip.open(path) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    ops = sorted((e for e in ev if e.get("cat") == "cpu_op"), key=lambda e: (e["ts"], -e["dur"]))
    launches = sorted(e["ts"] for e in ev if e.get("cat") == "cuda_runtime"
                      and "Launch" in e["name"])
    top, end = [], -1.0
    for e in ops:
        if e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e["dur"]
    calls: dict[str, list[float]] = defaultdict(list)
    for e in top:
        name = e["name"]
        k = bisect.bisect_left(launches, e["ts"])
        launched = k < len(launches) and launches[k] <= e["ts"] + e["dur"]
        cls = ("backward" if name.startswith("autograd::engine") else "gemm" if name in GEMM
               else "attention" if "scaled_dot_product" in name
               else "kernel" if launched else "view")
        calls[cls].append(e["dur"] * 1e-6)
    span = (top[-1]["ts"] + top[-1]["dur"] - top[0]["ts"]) * 1e-6
    kernels = sum(e["dur"] for e in ev if e.get("cat") == "kernel") * 1e-6
    return calls, span, kernels


def eager_rows() -> list[dict[str, Any]]:
    return [r for r in gp.rows() if r["config"].get("model") == "LlamaForCausalLM"
            and r["config"]["runtime"] == "eager"]


def module_calls(cfg: dict[str, Any]) -> float:
    """nn.Module calls per step, as rl.torch.estimate counts them."""
    te = gp.torch_estimate(cfg, "H200")
    return float(sum(r.host[4] for r in te.records if r.host))


def fit() -> tuple[dict[str, float], dict[str, Any]]:
    """The terms from the 2-layer traces and a note of what they came from."""
    pooled: dict[str, list[float]] = defaultdict(list)
    decode = []
    for r in eager_rows():
        if r["name"].endswith("_L4"):
            continue
        calls, span, kern = trace_calls(os.path.join(gp.DATA, "traces", r["trace"]))
        for c, v in calls.items():
            pooled[c].extend(v)
        steps = r.get("trace_steps", 1)
        if r["config"]["phase"] == "decode" and span > 1.5 * kern:
            decode.append((r, {c: len(v) / steps for c, v in calls.items()}, span / steps))
    med = {c: statistics.median(v) for c, v in pooled.items()}
    ratio = statistics.median(r["wall_s"] / span for r, _, span in decode)
    rest = [(span - sum(n * med[c] for c, n in counts.items())) / module_calls(r["config"])
            for r, counts, span in decode]
    terms = {FIELD[c]: round(ratio * med[c], 8) for c in FIELD}
    terms["module_call_s"] = round(ratio * statistics.median(rest), 8)
    note = {"programs": (
        f"benchmarks/fit_host_programs.py: median CPU time per top-level op class over the "
        f"2-layer HF Llama eager traces (data/programs/h200, {sum(map(len, pooled.values()))} "
        f"calls), module_call_s the step span outside ops per module call over "
        f"{len(decode)} host-bound decode traces, all x {ratio:.3f} (un-profiled wall / "
        f"profiled step span); 4-layer rows held out; the VM's CPU speed varied ~2x between "
        f"runs")}
    return terms, note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    terms, note = fit()
    for k, v in terms.items():
        print(f"{k:16s} {v * 1e6:8.2f} us")
    if args.write:
        with open(TERMS) as f:
            doc = json.load(f)
        doc["terms"].update(terms)
        doc["source"].update(note)
        with open(TERMS, "w") as f:
            f.write(json.dumps(doc, indent=1) + "\n")
        from roofline._params import packaged

        packaged.clear()
    print(f"\n{'program':36s} {'set':>5s} {'gpu ms':>8s} {'wall ms':>8s} {'pred ms':>8s} "
          f"{'err':>6s}")
    errs: dict[str, list[float]] = defaultdict(list)
    for r in eager_rows():
        cfg = r["config"]
        pred = gp.torch_estimate(cfg, "H200").wall_s
        err = pred / r["wall_s"] - 1
        held = "test" if r["name"].endswith("_L4") else "fit"
        host_bound = cfg["phase"] == "decode" and cfg["batch"] <= 16
        if host_bound:
            errs[held].append(abs(err))
        print(f"{r['name']:36s} {held:>5s} {r['gpu_s'] * 1e3:8.3f} {r['wall_s'] * 1e3:8.3f} "
              f"{pred * 1e3:8.3f} {err:+6.0%}")
    for k, v in errs.items():
        print(f"median |err| eager decode batch <= 16 ({k}): {statistics.median(v):.1%} "
              f"over {len(v)} rows")


if __name__ == "__main__":
    main()
