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


def main() -> None:
    overhead = json.loads(TERMS.read_text())["measurement"]["per_call_overhead_s"]
    bench = bench_rows()
    print(f"{'m':>4s} {'k':>6s} {'n':>7s} {'main':>7s} {'reduce':>7s} {'gaps':>6s} "
          f"{'trace':>7s} {'model':>7s} {'bench-ovh':>9s}   (us, GPU time)")
    for m in (1, 16, 64, 256):
        path = TRACES / f"llama_decode_static_graph_b{m}.json.gz"
        calls = gemm_calls(path)
        shapes = list(LAYER) * LAYERS + [HEAD]
        steps = len(calls) // len(shapes)
        for j, (k, n) in enumerate(shapes[:len(LAYER)] + [HEAD]):
            idx = [s * len(shapes) + (j if j < len(LAYER) else len(shapes) - 1)
                   + (layer * len(LAYER) if j < len(LAYER) else 0)
                   for s in range(steps) for layer in range(LAYERS if j < len(LAYER) else 1)]
            main_us, red_us, gap_us = (statistics.median(calls[i][f] for i in idx)
                                       for f in range(3))
            model = rl.gemm(m, k, n, "bf16", "H200").time_s * 1e6
            row = bench.get((m, k, n))
            b = f"{(row - overhead) * 1e6:9.1f}" if row is not None else f"{'-':>9s}"
            print(f"{m:4d} {k:6d} {n:7d} {main_us:7.1f} {red_us:7.1f} {gap_us:6.1f} "
                  f"{main_us + red_us + gap_us:7.1f} {model:7.1f} {b}")


if __name__ == "__main__":
    main()
