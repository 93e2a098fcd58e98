"""Fit the host (launch) terms from measured launch chains and compiled float8 linears.

Writes ``python/roofline/data/terms/host.json``. Run: ``python benchmarks/fit_host.py
[--data data/measurements]``.

Every term is a property of the CPU, the driver and PyTorch, not of the GPU's peaks, so one
set of values serves every accelerator (``core_terms`` gives the same terms to all). Each
term is read off the data by one physical relation, never fitted to a table of rows:

- ``kernel_gap_s``: GPU spacing of back-to-back tiny kernels = median of ``graph_s / N``
  over the CUDA-graph chains with N >= 10 (a graph issues all N at once; the GPU runs them
  back to back).
- ``graph_launch_s``: the shortest graph replay measured (a one-kernel graph): the floor of
  one replay.
- ``kernel_latency_s``: the shortest eager chain measured (one tiny kernel between two
  events): the floor of one launch on an idle stream.
- ``eager_launch_s``: host time per eager op = median over the eager chains with N >= 2 of
  ``(measured - kernel_gap_s) / (N - 1)`` (the wall of N tiny kernels whose host issue is
  the bottleneck is ``(N - 1)`` launch gaps plus the last kernel).
- ``compiled_launch_s``: host time per kernel of a ``torch.compile`` wrapper =
  ``eager_launch_s`` x (median spacing of kernel launches inside the compiled regions of the
  float8 trace / median spacing of launches in the eager encoder-layer trace). Both traces
  ran under the same profiler, whose per-launch cost cancels in the ratio to first order.
- ``compiled_call_s``: host time to enter one region of a compiled training step (forward,
  and backward through the autograd engine), from the ``wall_s`` of the torch.compile'd
  float8 linears that do_bench repeated: kernels from the default model plus the two
  gradient-accumulation adds the benchmark ran, do_bench's L2 flush (a 256 MiB write, the
  elementwise model) as the head kernel that hides host time, ``looped_wall_time(...,
  "compiled", regions=2, head_s=flush)`` (the validation predictor's ``do_bench_wall``);
  chosen on a 10 µs grid to minimise the median plus the 90th percentile of the relative
  error against ``wall_s``.
- ``compiled_region_s``: host time of one call of a no-grad compiled region beyond its kernel
  launches (Dynamo guards, the Inductor wrapper, output allocation), from the standalone
  compiled fp8 casts that do_bench repeated back to back: the host runs ahead, so a call
  costs ``max(GPU, compiled_region_s + kernels x compiled_launch_s)`` with the default
  model's kernels (``repeated_wall_time``); chosen on a 0.1 µs grid as above.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from _measurements import GPU_FILE, gpu_rows

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "python" / "roofline" / "data" / "terms" / "host.json"
CALIBRATION = GPU_FILE


def _rows(data_dir: Path, family: str) -> list[dict[str, Any]]:
    return gpu_rows(data_dir, (family,))


def _chain_terms(rows: list[dict[str, Any]]) -> dict[str, float]:
    graphs = [(r["args"]["kernels"], r["graph_s"]) for r in rows if r.get("graph_s")]
    gap = statistics.median(g / n for n, g in graphs if n >= 10)
    eager = [(r["args"]["kernels"], r["measured"]) for r in rows]
    per_op = statistics.median((m - gap) / (n - 1) for n, m in eager if n >= 2)
    return {
        "eager_launch_s": per_op,
        "graph_launch_s": min(g for _, g in graphs),
        "kernel_gap_s": gap,
        "kernel_latency_s": min(m for _, m in eager),
    }


def _p90(values: list[float]) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))]


def _launch_spacings(path: Path, inside: str | None) -> list[float]:
    """Gaps (s) between consecutive kernel launches of a trace (within annotations named
    ``inside`` when given)."""
    from roofline.trace._load import load

    events = load(path)[0]["traceEvents"]
    launch = sorted(e["ts"] for e in events if e.get("ph") == "X"
                    and e.get("cat") in ("cuda_runtime", "cuda_driver")
                    and any(w in e["name"] for w in ("Launch", "Memset", "Memcpy")))
    if inside is None:
        windows = [(launch[0], launch[-1])] if launch else []
    else:
        windows = [(e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "user_annotation" and inside in e["name"]]
    gaps: list[float] = []
    for a, b in windows:
        ts = [t for t in launch if a <= t <= b]
        gaps += [(y - x) * 1e-6 for x, y in zip(ts, ts[1:], strict=False)]
    return gaps


def _compiled_launch_ratio(trace_dir: Path) -> tuple[float, str]:
    """Compiled-wrapper launch spacing over eager launch spacing, from the two traces."""
    compiled = _launch_spacings(trace_dir / "float8_tensorwise_linear_16384x4096x14336.json.gz",
                                "CompiledFxGraph")
    eager = _launch_spacings(trace_dir / "encoder_layer_train.json.gz", None)
    c, e = statistics.median(compiled), statistics.median(eager)
    return c / e, (f"traces: median launch spacing {c * 1e6:.1f} us in compiled regions "
                   f"({len(compiled)} gaps), {e * 1e6:.1f} us eager ({len(eager)} gaps), "
                   "under the profiler")


#: The end-to-end linear families whose host terms this script fits and holds out.
LINEAR_FAMILIES = ("gpu_linear_train_bf16", "gpu_float8_training_speedup",
                   "gpu_float8_inference_speedup")


class _Call:
    """One measured do_bench time of a compiled linear call: its modeled kernels and flush
    (the default model, terms aside), its kind, and the shape's half for holding out."""

    def __init__(self, row: dict[str, Any], recipe: str, mode: str, measured: float) -> None:
        from roofline.ops.registry.measured.float8 import do_bench_forward, do_bench_step

        a = row["args"]
        one = dict(row, args={**a, "recipe": recipe})
        step = do_bench_step if mode == "training" else do_bench_forward
        self.times, self.flush, _ = step(one, row["hardware"], "default")
        self.training = mode == "training"
        self.torchao = recipe != "bf16"
        self.measured = measured
        self.shape = (mode, int(a["m"]), int(a["k"]), int(a["n"]))

    def predict(self, terms: Any) -> float:
        from roofline.ops.registry.measured.float8 import do_bench_wall

        return do_bench_wall(self.times, self.flush, terms, self.torchao, self.training)


def _linear_calls(data_dir: Path) -> dict[str, list[tuple[str, _Call, _Call | None, float]]]:
    """Per family: (label, call, bf16 call or None, measured) where measured is the call time
    (gpu_linear_train_bf16) or the bf16 / float8 speedup (the speedup families, each with
    both calls)."""
    out: dict[str, list[tuple[str, _Call, _Call | None, float]]] = {}
    for r in _rows(data_dir, "gpu_linear_train_bf16"):
        out.setdefault(r["family"], []).append(
            (r["family"], _Call(r, "bf16", "training", r["measured"]), None, r["measured"]))
    for fam, mode in (("gpu_float8_training_speedup", "training"),
                      ("gpu_float8_inference_speedup", "inference")):
        for r in _rows(data_dir, fam):
            rec = r["args"]["recipe"]
            out.setdefault(fam, []).append(
                (f"{fam} ({rec})", _Call(r, rec, mode, r["fp8_s"]),
                 _Call(r, "bf16", mode, r["bf16_s"]), r["measured"]))
    return out


def _halves(calls: dict[str, list[tuple[str, _Call, _Call | None, float]]]) -> dict[Any, int]:
    """Half (0 or 1) of each shape: alternate over the sorted distinct shapes of each mode, so a
    shape's bf16 and float8 calls (and both recipes) fall in the same half."""
    shapes = sorted({c.shape for rows in calls.values() for _, c, _, _ in rows})
    half: dict[Any, int] = {}
    for mode in ("training", "inference"):
        for i, sh in enumerate(s for s in shapes if s[0] == mode):
            half[sh] = i % 2
    return half


def _fit_grid(calls: list[_Call], terms: Any, name: str, step_us: float,
              top_us: float) -> float:
    """The value of terms.name on a step_us grid in [0, top_us] that minimises the median plus
    the 90th percentile of the relative error of the calls' do_bench times (no calls: the
    value terms already has)."""
    if not calls:
        return float(getattr(terms, name))
    best: tuple[float, float] | None = None
    for i in range(int(round(top_us / step_us)) + 1):
        setattr(terms, name, i * step_us * 1e-6)
        errs = [abs(c.predict(terms) / c.measured - 1.0) for c in calls]
        score = statistics.median(errs) + _p90(errs)
        if best is None or score < best[0] - 1e-12:
            best = (score, i * step_us * 1e-6)
    assert best is not None
    setattr(terms, name, best[1])
    return best[1]


def _fit_linear(calls: dict[str, list[tuple[str, _Call, _Call | None, float]]],
                base: dict[str, float], keep: Any = None) -> dict[str, float]:
    """Fit, in order, each from one kind of call (the rows whose shape ``keep`` accepts):
    ``compiled_call_s`` from the compiled bf16 training calls (forward + backward regions),
    ``compiled_forward_s`` from the compiled bf16 inference calls, ``torchao_call_s`` from
    the torchao calls of both modes (training: each of its two regions; inference: its one)."""
    from roofline import _core

    terms = _core.HostTerms()
    for k, v in base.items():
        setattr(terms, k, v)
    ok = keep or (lambda c: True)
    every = [x for rows in calls.values() for _, c, b, _ in rows for x in (c, b)
             if x is not None and ok(x)]
    train_bf16 = [c for c in every if c.training and not c.torchao]
    infer_bf16 = [c for c in every if not c.training and not c.torchao]
    lowp = [c for c in every if c.torchao]
    return {
        "compiled_call_s": _fit_grid(train_bf16, terms, "compiled_call_s", 5, 3000),
        "compiled_forward_s": _fit_grid(infer_bf16, terms, "compiled_forward_s", 1, 1000),
        "torchao_call_s": _fit_grid(lowp, terms, "torchao_call_s", 1, 1000),
    }


def _scores(calls: dict[str, list[tuple[str, _Call, _Call | None, float]]], terms: Any,
            keep: Any) -> dict[str, tuple[int, float]]:
    """Per label: (rows, median relative error) over the rows whose shape ``keep`` accepts."""
    errs: dict[str, list[float]] = {}
    for rows in calls.values():
        for label, c, b, measured in rows:
            if not keep(c):
                continue
            pred = c.predict(terms) if b is None else b.predict(terms) / c.predict(terms)
            errs.setdefault(label, []).append(abs(pred / measured - 1.0))
    return {k: (len(v), statistics.median(v)) for k, v in sorted(errs.items())}


def held_out(calls: dict[str, list[tuple[str, _Call, _Call | None, float]]],
             base: dict[str, float]) -> list[tuple[str, int, float, int, float]]:
    """Fit on each half of the shapes, score on the other: per label (rows, median error)
    scored on half 1 (fitted on half 0) and on half 0 (fitted on half 1)."""
    from roofline import _core

    half = _halves(calls)
    out: dict[str, list[Any]] = {}
    for fit_half in (0, 1):
        fitted = _fit_linear(calls, base, lambda c, h=fit_half: half[c.shape] == h)
        terms = _core.HostTerms()
        for k, v in {**base, **fitted}.items():
            setattr(terms, k, v)
        for label, (n, med) in _scores(calls, terms,
                                       lambda c, h=fit_half: half[c.shape] != h).items():
            out.setdefault(label, []).extend([n, med])
    return [(k, *v) for k, v in out.items()]


def _cast_kernel_s(row: dict[str, Any]) -> list[float]:
    """Modeled GPU times of the kernels of one standalone compiled cast row (default model)."""
    from roofline import _core
    from roofline._params.resolve import resolve

    a = row["args"]
    _, chw, ceff = resolve(row["hardware"], "default")
    gran = getattr(_core.CastGranularity,
                   "tensorwise" if a["granularity"] == "tensorwise" else "rowwise")
    rows = _core.float8_cast_kernels(float(a["rows"]), float(a["cols"]), gran, False, chw, ceff)
    return [float(k["time_s"]) for k in rows]


def _compiled_region(rows: list[dict[str, Any]], base: dict[str, float]) -> dict[str, Any]:
    """``compiled_region_s`` from the standalone compiled casts: do_bench repeats one no-grad
    compiled call, so a call costs max(GPU, region + kernels x compiled_launch_s)."""
    from roofline import _core

    terms = _core.HostTerms()
    for k, v in base.items():
        setattr(terms, k, v)
    kernels = [_cast_kernel_s(r) for r in rows]

    def errors() -> list[float]:
        return [abs(_core.repeated_wall_time(ks, _core.LaunchMode.compiled, 1, terms)[0]
                    / r["measured"] - 1.0) for ks, r in zip(kernels, rows, strict=True)]

    best: tuple[float, float] | None = None
    for tenth_us in range(0, 2001):
        terms.compiled_region_s = tenth_us * 1e-7
        errs = errors()
        score = statistics.median(errs) + _p90(errs)
        if best is None or score < best[0] - 1e-12:
            best = (score, tenth_us * 1e-7)
    assert best is not None
    terms.compiled_region_s = best[1]
    errs = errors()
    return {"compiled_region_s": best[1], "median_error": statistics.median(errs),
            "p90_error": _p90(errs)}


def fit(data_dir: Path) -> dict[str, Any]:
    """Fit the host terms from ``data_dir`` and write them to ``data/terms/host.json``."""
    chains = _rows(data_dir, "gpu_launch_overhead")
    if not chains:
        raise ValueError(f"fit_host: no gpu_launch_overhead rows in {data_dir / CALIBRATION}")
    terms = _chain_terms(chains)
    trace_dir = ROOT / "tests" / "data" / "traces"  # the two H100 traces, in the repository
    if (trace_dir / "encoder_layer_train.json.gz").exists():
        ratio, trace_note = _compiled_launch_ratio(trace_dir)
    else:
        ratio, trace_note = 1.0, "traces absent: compiled launch = eager launch"
    terms["compiled_launch_s"] = terms["eager_launch_s"] * ratio
    calls = _linear_calls(data_dir)
    table = held_out(calls, terms) if calls else []
    terms.update(_fit_linear(calls, terms) if calls else {
        "compiled_call_s": 0.0, "compiled_forward_s": 0.0, "torchao_call_s": 0.0})
    casts = _rows(data_dir, "gpu_cast_fp8_tensorwise") + _rows(data_dir, "gpu_cast_fp8_rowwise")
    region = _compiled_region(casts, terms) if casts else {
        "compiled_region_s": 0.0, "median_error": float("nan"), "p90_error": float("nan")}
    terms["compiled_region_s"] = region["compiled_region_s"]
    kept = json.loads(OUT.read_text()) if OUT.exists() else {}
    doc = {
        "about": ("Host (launch) terms: CPU, driver and PyTorch costs, the same for every "
                  "accelerator. Fitted by benchmarks/fit_host.py; see docs/model.md, "
                  "'Host overhead'."),
        "source": {
            "chains": f"{CALIBRATION} family gpu_launch_overhead ({len(chains)} rows)",
            "compiled_launch": trace_note,
            "compiled": (f"{CALIBRATION} families {', '.join(LINEAR_FAMILIES)} "
                         f"({sum(len(v) for v in calls.values())} rows): compiled_call_s from "
                         "the bf16 training calls, compiled_forward_s from the bf16 inference "
                         "calls, torchao_call_s from the torchao calls; held out (fit on half "
                         "the shapes, score the other), median error: " + "; ".join(
                             f"{k} {a:.3f} / {b:.3f}" for k, _, a, _, b in table)),
            "compiled_region": (f"{CALIBRATION} families gpu_cast_fp8_tensorwise/_rowwise "
                                f"({len(casts)} rows): median error "
                                f"{region['median_error']:.3f}, p90 {region['p90_error']:.3f}"),
        },
        "terms": {k: round(v, 10) for k, v in sorted(terms.items())},
        "per_hardware": kept.get("per_hardware", {}),
    }
    # terms and notes this script does not fit (the eager program terms of
    # fit_host_programs.py, in units of eager_launch_s) stay as they are
    doc["terms"].update({k: v for k, v in kept.get("terms", {}).items() if k not in terms})
    doc["source"].update({k: v for k, v in kept.get("source", {}).items()
                          if k not in doc["source"]})
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    return {**doc, "held_out": table}


HELD_OUT_HEADER = (f"{'held out (median relative error)':45s} rows  fit A   rows  fit B\n"
                   f"{'':45s}      score B      score A")


def main() -> None:
    """Command-line entry: fit, write and print the terms."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=ROOT / "data" / "measurements")
    args = parser.parse_args()
    doc = fit(args.data)
    print(HELD_OUT_HEADER)
    for row in doc.pop("held_out"):
        print("{:45s} {:4d} {:8.3f}   {:4d} {:8.3f}".format(*row))
    for k, v in doc["terms"].items():
        print(f"{k:20s} {v:10.3f} launches" if k.endswith("_launches")
              else f"{k:20s} {v * 1e6:10.2f} us")
    for k, v in doc["source"].items():
        print(f"{k}: {v}")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
