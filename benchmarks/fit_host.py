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


def _errors(steps: list[tuple[Any, float, float]], terms: Any) -> list[float]:
    from roofline.ops.registry.measured.float8 import do_bench_wall

    return [abs(do_bench_wall(times, flush, terms) / wall - 1.0) for times, flush, wall in steps]


def _steps(rows: list[dict[str, Any]]) -> list[tuple[Any, float, float]]:
    """(kernel times, flush time, measured wall_s) of each do_bench'd float8 linear row, the
    kernels from the default model plus the two gradient-accumulation adds (the validation
    predictor's ``do_bench_step``)."""
    from roofline.ops.registry.measured.float8 import do_bench_step

    out = []
    for r in rows:
        times, flush, _ = do_bench_step(r, r["hardware"], "default")
        out.append((times, flush, float(r["wall_s"])))
    return out


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


def _compiled_call(rows: list[dict[str, Any]], base: dict[str, float]) -> dict[str, Any]:
    from roofline import _core

    terms = _core.HostTerms()
    for k, v in base.items():
        setattr(terms, k, v)
    steps = _steps(rows)
    best: tuple[float, float] | None = None
    for call_us in range(0, 3001, 10):
        terms.compiled_call_s = call_us * 1e-6
        errs = _errors(steps, terms)
        score = statistics.median(errs) + _p90(errs)
        if best is None or score < best[0] - 1e-12:
            best = (score, call_us * 1e-6)
    assert best is not None
    terms.compiled_call_s = best[1]
    errs = _errors(steps, terms)
    return {"compiled_call_s": best[1], "median_error": statistics.median(errs),
            "p90_error": _p90(errs)}


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
    linears = [r for r in _rows(data_dir, "gpu_float8_linear_kernels")
               if r.get("wall_s") and r.get("kernels")]
    if not chains:
        raise ValueError(f"fit_host: no gpu_launch_overhead rows in {data_dir / CALIBRATION}")
    terms = _chain_terms(chains)
    trace_dir = data_dir.parent / "traces"
    if (trace_dir / "encoder_layer_train.json.gz").exists():
        ratio, trace_note = _compiled_launch_ratio(trace_dir)
    else:
        ratio, trace_note = 1.0, "traces absent: compiled launch = eager launch"
    terms["compiled_launch_s"] = terms["eager_launch_s"] * ratio
    compiled = _compiled_call(linears, terms) if linears else {
        "compiled_call_s": 0.0, "median_error": float("nan"), "p90_error": float("nan")}
    terms["compiled_call_s"] = compiled["compiled_call_s"]
    casts = _rows(data_dir, "gpu_cast_fp8_tensorwise") + _rows(data_dir, "gpu_cast_fp8_rowwise")
    region = _compiled_region(casts, terms) if casts else {
        "compiled_region_s": 0.0, "median_error": float("nan"), "p90_error": float("nan")}
    terms["compiled_region_s"] = region["compiled_region_s"]
    doc = {
        "about": ("Host (launch) terms: CPU, driver and PyTorch costs, the same for every "
                  "accelerator. Fitted by benchmarks/fit_host.py; see docs/model.md, "
                  "'Host overhead'."),
        "source": {
            "chains": f"{CALIBRATION} family gpu_launch_overhead ({len(chains)} rows)",
            "compiled_launch": trace_note,
            "compiled": (f"{CALIBRATION} family gpu_float8_linear_kernels wall_s "
                         f"({len(linears)} rows): median error "
                         f"{compiled['median_error']:.3f}, p90 {compiled['p90_error']:.3f}"),
            "compiled_region": (f"{CALIBRATION} families gpu_cast_fp8_tensorwise/_rowwise "
                                f"({len(casts)} rows): median error "
                                f"{region['median_error']:.3f}, p90 {region['p90_error']:.3f}"),
        },
        "terms": {k: round(v, 10) for k, v in sorted(terms.items())},
        "per_hardware": {},
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def main() -> None:
    """Command-line entry: fit, write and print the terms."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=ROOT / "data" / "measurements")
    args = parser.parse_args()
    doc = fit(args.data)
    for k, v in doc["terms"].items():
        print(f"{k:20s} {v * 1e6:10.2f} us")
    for k, v in doc["source"].items():
        print(f"{k}: {v}")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
