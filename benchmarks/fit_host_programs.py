"""Derive the eager-program host terms (units of eager_launch_s) and score every eager row.

The host of an eager PyTorch program runs, per step, one dispatch per aten op called from
Python, the Python of every ``nn.Module`` call and once the entry call's own Python (see
``roofline/torch/_host.py``). Derivation:

- class ratios from the 2-layer HF ``LlamaForCausalLM`` H200 traces (``data/programs/h200/
  traces``, rows without ``_L4``): top-level ``cpu_op`` events are classed ``gemm``
  (``aten::linear`` / ``matmul`` / ``mm`` / ``addmm`` / ``bmm``), ``attention`` (SDPA),
  ``backward`` (``autograd::engine::evaluate_function``), ``kernel`` (a ``cuda_runtime`` launch
  in its span), else ``view``; ``rel_c`` = median profiled CPU time per call; ``rel_module`` =
  median over the host-bound decode traces of (step span - sum_c n_c rel_c) / module calls.
  Only the ratios are kept: the profiler and that process's slow host inflate the scale;
- the scale from ``probe.jsonl``'s HF decode rows at 1 and 2 layers ONLY (one process, 7
  interleaved rounds, so drift cancels): with op terms ``rel_c / bare`` (``bare`` = the
  probe's 100-add chain / 100, the bare eager op) the model's host time is ``H1``; relative
  least squares of ``wall = s H1 + f`` over the 4 rows gives ``s`` and the entry call ``f``;
  ``op_c_launches = s rel_c / bare``, ``step_call_launches = f / bare``;
- held out: the probe's 4- and 8-layer rows and the call-D ``_L4`` eager decode rows. The
  2-layer ``programs.jsonl`` rows ran in a process whose host was ~1.5x slower.

Run: ``PYTHONPATH=python python benchmarks/fit_host_programs.py [--write]`` (prints the terms
and the table of rows, fit and held out; ``--write`` keeps them in ``host.json``).
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
PROBE = os.path.join(gp.DATA, "probe.jsonl")
GEMM = {"aten::linear", "aten::matmul", "aten::mm", "aten::addmm", "aten::bmm"}
FIELD = {"view": "op_view_launches", "kernel": "op_kernel_launches", "gemm": "op_gemm_launches",
         "attention": "op_attention_launches", "backward": "op_backward_launches",
         "module": "module_call_launches"}
ORDER = ("view", "kernel", "gemm", "attention", "module", "backward")  # rl.torch's CLASSES
FIT_LAYERS = (1, 2)  # probe rows that set the scale; 4 and 8 layers are held out
PROBE_CFG = {"model": "LlamaForCausalLM", "hidden": 4096, "intermediate": 14336, "heads": 32,
             "kv_heads": 8, "vocab": 128256, "phase": "decode", "batch": 1, "kv_len": 4097,
             "max_cache_len": 4097, "runtime": "eager"}


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
    return float(sum(r.host[ORDER.index("module")] for r in te.records if r.host))


def relative_costs() -> tuple[dict[str, float], int, int]:
    """Profiled host time per call of each class (s) from the 2-layer traces: their ratios are
    kept, the absolute scale is not (the profiler and that process's slow host inflate it)."""
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
    rel = {c: statistics.median(v) for c, v in pooled.items()}
    rel["module"] = statistics.median(
        (span - sum(n * rel[c] for c, n in counts.items())) / module_calls(r["config"])
        for r, counts, span in decode)
    return rel, sum(map(len, pooled.values())), len(decode)


def probe() -> tuple[list[tuple[str, int, dict[str, Any], float]], float]:
    """The probe's HF decode rows (name, layers, config, wall_s) and its bare per-op cost (s):
    the wall of the 100-add chain / 100, the same measurement as gpu_launch_overhead."""
    rows, bare = [], float("nan")
    with open(PROBE) as f:
        for r in map(json.loads, f):
            if r["name"] == "host_add_chain_100":
                bare = r["wall_s"] / 100
            elif r["name"].startswith(("host_dynamic_L", "host_static_L")):
                layers = int(r["name"].rsplit("L", 1)[1])
                cache = "DynamicCache" if "dynamic" in r["name"] else "StaticCache"
                rows.append((r["name"], layers, dict(PROBE_CFG, layers=layers, cache=cache),
                             r["wall_s"]))
    return rows, bare


def store(terms: dict[str, float], note: dict[str, str] | None = None) -> None:
    """Write terms (and a source note) into host.json, keeping every other term."""
    with open(TERMS) as f:
        doc = json.load(f)
    for k in list(doc["terms"]):
        if k.startswith("op_") and k.endswith("_s") or k == "module_call_s":
            del doc["terms"][k]  # the per-second names this file used before
    doc["terms"].update(terms)
    doc["source"].update(note or {})
    with open(TERMS, "w") as f:
        f.write(json.dumps(doc, indent=1) + "\n")
    from roofline._params import packaged
    from roofline._params.resolve import clear_caches

    packaged.clear()
    clear_caches()


def eager_launch_s() -> float:
    from roofline._params import packaged

    return float(packaged.terms("host")["terms"]["eager_launch_s"])


def fit() -> tuple[dict[str, float], dict[str, str], dict[str, float]]:
    """The terms (in eager launches), a source note, and the fit's figures.

    The model's host time of a host-bound step is linear in the terms: with every op term at
    ``rel_c / bare`` launches and no step term, ``rl.torch.estimate`` gives a host time ``H1``
    (at the packaged ``eager_launch_s`` E; ``H1 x bare / E`` on the probe's machine). Over the
    probe's 1- and 2-layer rows, relative least squares of ``wall = s H1 bare/E + f`` gives the
    scale ``s`` and the step's entry cost ``f``; then ``op_c_launches = s rel_c / bare`` and
    ``step_call_launches = f / bare``.
    """
    rel, ncalls, ndecode = relative_costs()
    rows, bare = probe()
    store({FIELD[c]: rel[c] / bare for c in FIELD} | {"step_call_launches": 0.0})
    e = eager_launch_s()
    a, y = [], []
    for _, layers, cfg, wall in rows:
        if layers in FIT_LAYERS:
            a.append(gp.torch_estimate(cfg, "H200").wall.host_s * bare / e)
            y.append(wall)
    # relative least squares of y = s a + f: minimise sum ((s a + f) / y - 1)^2
    saa = sum((ai / yi) ** 2 for ai, yi in zip(a, y, strict=True))
    sa1 = sum(ai / yi**2 for ai, yi in zip(a, y, strict=True))
    s11 = sum(1 / yi**2 for yi in y)
    sa = sum(ai / yi for ai, yi in zip(a, y, strict=True))
    s1 = sum(1 / yi for yi in y)
    det = saa * s11 - sa1 * sa1
    scale, fixed = (sa * s11 - s1 * sa1) / det, (saa * s1 - sa1 * sa) / det
    terms = {FIELD[c]: round(scale * rel[c] / bare, 4) for c in FIELD}
    terms["step_call_launches"] = round(fixed / bare, 3)
    note = {"programs": (
        f"benchmarks/fit_host_programs.py: ratios of the median profiled CPU time per "
        f"top-level op class over the 2-layer HF Llama eager traces (data/programs/h200, "
        f"{ncalls} calls; module calls: the step span outside ops over {ndecode} host-bound "
        f"decode traces); absolute scale {scale:.3f} and the step's entry call "
        f"{fixed * 1e6:.0f} us from the probe's 1- and 2-layer decode rows (probe.jsonl, one "
        f"process, interleaved), in units of that machine's bare eager op "
        f"({bare * 1e6:.2f} us, host_add_chain_100); 4/8-layer probe rows and the _L4 "
        f"program rows held out")}
    return terms, note, {"scale": scale, "fixed_s": fixed, "bare_s": bare, "eager_s": e}


def table(bare: float) -> dict[str, list[float]]:
    """Print the model beside every eager row; the |errors| by group."""
    e = eager_launch_s()
    errs: dict[str, list[float]] = defaultdict(list)
    print(f"\n{'row':36s} {'set':>8s} {'gpu ms':>7s} {'wall ms':>8s} {'pred ms':>8s} "
          f"{'err':>6s} {'err@bare':>8s}")
    rows, _ = probe()
    for name, layers, cfg, wall in rows:
        pred = gp.torch_estimate(cfg, "H200").wall_s
        group = "probe fit" if layers in FIT_LAYERS else "probe L4/L8"
        err, err_b = pred / wall - 1, pred * bare / e / wall - 1
        errs[group].append(abs(err))
        errs[group + " @bare"].append(abs(err_b))
        print(f"{name:36s} {group:>8s} {'':>7s} {wall * 1e3:8.3f} {pred * 1e3:8.3f} "
              f"{err:+6.0%} {err_b:+8.0%}")
    for r in eager_rows():
        cfg = r["config"]
        pred = gp.torch_estimate(cfg, "H200").wall_s
        err = pred / r["wall_s"] - 1
        group = "L4 (D)" if r["name"].endswith("_L4") else "L2 (B)"
        if cfg["phase"] == "decode" and cfg["batch"] <= 16:
            errs[group].append(abs(err))
        print(f"{r['name']:36s} {group:>8s} {r['gpu_s'] * 1e3:7.3f} {r['wall_s'] * 1e3:8.3f} "
              f"{pred * 1e3:8.3f} {err:+6.0%}")
    print("\nmedian |err| (programs.jsonl groups: eager decode batch <= 16; @bare: the model "
          "with eager_launch_s = the probe's bare op)")
    for k, v in errs.items():
        print(f"  {k:20s} {statistics.median(v):6.1%} over {len(v)} rows")
    return errs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true",
                    help="store the fitted terms in host.json (else restore the old file)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    with open(TERMS) as f:
        before = f.read()
    try:
        terms, note, figs = fit()
        store(terms, note)
        print(f"scale {figs['scale']:.4f}, step entry {figs['fixed_s'] * 1e6:.1f} us, probe's "
              f"bare op {figs['bare_s'] * 1e6:.2f} us, packaged eager_launch_s "
              f"{figs['eager_s'] * 1e6:.2f} us")
        for k, v in terms.items():
            print(f"{k:22s} {v:8.3f} launches = {v * figs['eager_s'] * 1e6:8.2f} us")
        table(figs["bare_s"])
    finally:
        if not args.write:
            with open(TERMS, "w") as f:
                f.write(before)

if __name__ == "__main__":
    main()
