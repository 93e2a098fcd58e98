"""Decode GEMMs on the H200: CUDA-graph kernel times against per-call rows and the model (#24).

The graph-replayed HF Llama decode traces (``data/programs/h200/traces/
llama_decode_static_graph_b{1,16,64,256}.json.gz``: Llama-3-8B dimensions, 2 layers, bf16,
never fitted) record every kernel but no ops. Their cuBLAS kernels come in the model's order,
q, k, v, o, gate, up, down per layer, then the LM head; a split-K kernel (``*_splitK_*``) is
followed by ``cublasLt::splitKreduce_kernel``. Per GEMM shape this prints the median GPU time
of the main kernel, of the reduction (0 when unsplit) and of the launch gaps before each
(graph replay: no host in them), their sum, the default model's GPU time
(``rl.gemm(...).time_s``), and the same shape's per-call row of
``data/measurements/gpu_h200_bench.jsonl`` (do_bench, L2 flushed by writing a 256 MiB buffer
before every call) less the validation's per-call overhead (``measurement.per_call_overhead_s``
of ``data/terms/gemm.json``), where the bench has the shape.

Run: ``PYTHONPATH=python python benchmarks/gemm_decode_kernels.py``.
"""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "data" / "programs" / "h200" / "traces"
BENCH = ROOT / "data" / "measurements" / "gpu_h200_bench.jsonl"
TERMS = ROOT / "python" / "roofline" / "data" / "terms" / "gemm.json"

#: (k, n) of the decoder's linears in launch order (Llama-3-8B: hidden 4096, 8 KV heads of
#: 128, MLP 14336), and the LM head (vocab 128256).
LAYER = ((4096, 4096), (4096, 1024), (4096, 1024), (4096, 4096), (4096, 14336),
         (4096, 14336), (14336, 4096))
HEAD = (4096, 128256)
LAYERS = 2


def kernels(path: Path) -> list[dict[str, Any]]:
    """The trace's kernels in launch order."""
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    out = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    return sorted(out, key=lambda e: e["ts"])


def gemm_calls(path: Path) -> list[tuple[float, float, float]]:
    """(main kernel, reduction kernel, gaps before both) in microseconds, per cuBLAS GEMM."""
    ks = kernels(path)
    calls: list[tuple[float, float, float]] = []
    for i, e in enumerate(ks):
        if not e["name"].startswith("nvjet"):
            continue
        gap = e["ts"] - (ks[i - 1]["ts"] + ks[i - 1]["dur"]) if i else 0.0
        reduce = 0.0
        if i + 1 < len(ks) and "splitKreduce" in ks[i + 1]["name"]:
            nxt = ks[i + 1]
            reduce = nxt["dur"]
            gap += nxt["ts"] - (e["ts"] + e["dur"])
        calls.append((e["dur"], reduce, gap))
    return calls


def bench_rows() -> dict[tuple[int, int, int], float]:
    """Per-call seconds of the H200 bench's bf16 GEMM rows by (m, k, n)."""
    out: dict[tuple[int, int, int], float] = {}
    for line in BENCH.read_text().splitlines():
        r = json.loads(line)
        if r["family"] == "gpu_gemm_bf16":
            a = r["args"]
            out[(a["m"], a["k"], a["n"])] = r["measured"]
    return out


def table() -> list[dict[str, float]]:
    """One row per (batch, linear) of the four decode graphs: m, k, n, the trace's times in
    microseconds (medians over layers and steps: main, reduce, gaps; trace = their sum), the
    model's GPU time (model) and the per-call bench row less the per-call overhead (bench; NaN
    where the bench lacks the shape)."""
    overhead = json.loads(TERMS.read_text())["measurement"]["per_call_overhead_s"]
    bench = bench_rows()
    out: list[dict[str, float]] = []
    shapes = list(LAYER) * LAYERS + [HEAD]
    for m in (1, 16, 64, 256):
        calls = gemm_calls(TRACES / f"llama_decode_static_graph_b{m}.json.gz")
        if len(calls) % len(shapes):
            raise ValueError(f"{len(calls)} GEMM calls in the b{m} trace: not whole steps of "
                             f"{len(shapes)}")
        steps = len(calls) // len(shapes)
        # Each of the layer's linears (its median over layers and steps), then the LM head.
        for j, (k, n) in enumerate([*LAYER, HEAD]):
            at = [layer * len(LAYER) + j for layer in range(LAYERS)] if j < len(LAYER) \
                else [len(shapes) - 1]
            idx = [s * len(shapes) + a for s in range(steps) for a in at]
            main_us, red_us, gap_us = (statistics.median(calls[i][f] for i in idx)
                                       for f in range(3))
            row = bench.get((m, k, n))
            out.append({"m": m, "k": k, "n": n, "main": main_us, "reduce": red_us,
                        "gaps": gap_us, "trace": main_us + red_us + gap_us,
                        "model": rl.gemm(m, k, n, "bf16", "H200").time_s * 1e6,
                        "bench": (row - overhead) * 1e6 if row is not None else float("nan")})
    return out


def main() -> None:
    print(f"{'m':>4s} {'k':>6s} {'n':>7s} {'main':>7s} {'reduce':>7s} {'gaps':>6s} "
          f"{'trace':>7s} {'model':>7s} {'bench-ovh':>9s}   (us, GPU time)")
    rows = table()
    for r in rows:
        print(f"{r['m']:4d} {r['k']:6d} {r['n']:7d} {r['main']:7.1f} {r['reduce']:7.1f} "
              f"{r['gaps']:6.1f} {r['trace']:7.1f} {r['model']:7.1f} {r['bench']:9.1f}")
    err = [r["model"] / r["trace"] - 1 for r in rows]
    split = [e for e, r in zip(err, rows, strict=True) if r["reduce"] > 0]
    whole = [e for e, r in zip(err, rows, strict=True) if r["reduce"] == 0]
    total = sum(r["model"] for r in rows) / sum(r["trace"] for r in rows) - 1
    print(f"model / trace - 1: median |error| {statistics.median(map(abs, err)):.1%}, "
          f"split-K median {statistics.median(split):+.1%}, unsplit median "
          f"{statistics.median(whole):+.1%}, sum {total:+.1%}")


if __name__ == "__main__":
    main()
