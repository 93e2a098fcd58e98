"""Compiled LayerNorm against compiled RMSNorm on the same bytes (issue #23's Welford lead).

Prints, per rows x cols, the profiler kernel time of Inductor's LayerNorm (looped Welford) and
RMSNorm (looped sum) kernels on the H200, the model's kernel time of each (``backend=
"compiled"``) and their errors, and LayerNorm's extra time per row per SM,
``(t_layernorm - t_rmsnorm) x SMs / rows``: a cost paid once per row per SM is flat in it, a
cost per element grows with cols. Then the same for the H100 calibration rows (do_bench per
call, some host-bound: see data/measurements/README.md), and the compiled-softmax calls timed
on both chips (same SMs and clock, 1.43x the HBM bandwidth on the H200). Kernel-time files:
``data/programs/h200/small_kernels.jsonl`` and any further JSONL paths given (rows with
``what`` = layernorm_compiled / rmsnorm_compiled and ``kernel_s``). Run:
``PYTHONPATH=python python benchmarks/compiled_norms.py [more.jsonl ...]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
SMS = 132  # H100 SXM and H200 both


def _model(op: str, rows: int, cols: int, hw: str) -> float:
    fn = rl.layernorm if op == "layernorm" else rl.rmsnorm
    return float(fn(rows, cols, "bf16", hw, backend="compiled").time_s)


def _table(times: dict[tuple[str, int, int], float], hw: str) -> None:
    print(f"{'rows x cols':>14s} {'LN us':>8s} {'model':>8s} {'err':>7s} {'RMS us':>8s} "
          f"{'model':>8s} {'err':>7s} {'LN-RMS ns/row/SM':>17s}")
    shapes = sorted({(r, c) for _, r, c in times})
    for r, c in shapes:
        ln, rms = times.get(("layernorm", r, c)), times.get(("rmsnorm", r, c))
        cells = [f"{r:>7d}x{c:<6d}"]
        for op, t in (("layernorm", ln), ("rmsnorm", rms)):
            if t is None:
                cells.append(f"{'':>8s} {'':>8s} {'':>7s}")
                continue
            p = _model(op, r, c, hw)
            cells.append(f"{1e6 * t:8.1f} {1e6 * p:8.1f} {100 * (p / t - 1):+6.1f}%")
        extra = f"{1e9 * (ln - rms) * SMS / r:17.0f}" if ln and rms else ""
        print(" ".join(cells), extra)


def main(extra: list[str]) -> None:
    h200: dict[tuple[str, int, int], float] = {}
    for path in [ROOT / "data" / "programs" / "h200" / "small_kernels.jsonl", *map(Path, extra)]:
        for line in path.read_text().splitlines():
            d = json.loads(line)
            if d.get("what") in ("layernorm_compiled", "rmsnorm_compiled") and "kernel_s" in d:
                a = d["args"]
                h200[(d["what"].split("_")[0], a["rows"], a["cols"])] = d["kernel_s"]
    print("H200, profiler kernel time per call")
    _table(h200, "H200")
    h100: dict[tuple[str, int, int], float] = {}
    softmax: dict[str, dict[tuple[int, int], float]] = {"H100 SXM": {}, "H200": {}}
    for name in ("gpu_h100_calibration.jsonl", "gpu_h200_bench.jsonl"):
        for line in (ROOT / "data" / "measurements" / name).read_text().splitlines():
            d = json.loads(line)
            a = d.get("args", {})
            if d["family"] in ("gpu_layernorm_compiled", "gpu_rmsnorm_compiled") and \
                    d["hardware"] == "H100 SXM":
                h100[(d["op"], a["rows"], a["cols"])] = d["measured"]
            if d["family"] == "gpu_softmax_compiled" and d["hardware"] in softmax:
                softmax[d["hardware"]][(a["rows"], a["cols"])] = d["measured"]
    print("\nH100 SXM, do_bench per call (host-bound below ~70 us: README)")
    _table(h100, "H100 SXM")
    print("\ncompiled softmax forward, do_bench per call on both chips")
    print(f"{'rows x cols':>14s} {'H100 us':>8s} {'H200 us':>8s} {'H100/H200':>10s}")
    for r, c in sorted(set(softmax["H100 SXM"]) & set(softmax["H200"])):
        t1, t2 = softmax["H100 SXM"][(r, c)], softmax["H200"][(r, c)]
        print(f"{r:>7d}x{c:<6d} {1e6 * t1:8.1f} {1e6 * t2:8.1f} {t1 / t2:10.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
