"""The model's kernel prices on Blackwell (B200 / GB200 / GB300) against published
microbenchmarks (issue #24): ``data/published/blackwell_kernels.jsonl``.

Each row of that file is one published kernel time with its source URL, commit / date and
software versions: cuDNN and FlashAttention-2 SDPA from cudnn-frontend's
``benchmark/sdpa_benchmark_training`` (B200 cuDNN 9.13.0, GB200 / GB300 cuDNN 9.17.0 and
9.22), Transformer Engine's MXFP8 quantize on a B200 and cuBLAS MXFP4 GEMMs on a B200. None of
them is fitted: the model's terms come from H100 / H200 measurements and the accelerators'
peaks (``data/hardware-notes.md`` §8). Prices are per call at the kernel's own clock (no
training-step power-limiter clock), as the benchmarks time them.

Run: ``PYTHONPATH=python python benchmarks/blackwell_kernels.py [--rows]``. Prints, per
source group, the rows' count, the median signed error (model / published - 1, + = the model
is too slow) and the median absolute error; ``--rows`` adds every row.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import roofline as rl

DATA = Path(__file__).resolve().parents[1] / "data" / "published" / "blackwell_kernels.jsonl"


def _quantize_s(c: dict[str, Any], hardware: str) -> float:
    """Transformer Engine's quantize_mxfp8 of a rows x cols bf16 tensor, as the model prices it
    inside ``float8.linear(recipe="mxfp8_te")``: the training path's one kernel writing both
    layouts (``both``), the inference path's rowwise-only kernel (``rowwise``; ``colwise``
    moves the same bytes, priced alike)."""
    both = c["scaling"] == "both"
    lin = rl.float8.linear(c["rows"], c["cols"], 4096, recipe="mxfp8_te", hardware=hardware,
                           mode="training" if both else "inference")
    k = lin.kernels()
    name = "input quantize mxfp8 (row- and column-wise)" if both else \
        "input quantize mxfp8 (rowwise)"
    return float(k.loc[k["kernel"] == name, "time_s"].iloc[0])


def price(row: dict[str, Any]) -> float:
    """The model's time (s) of one published row."""
    c, hw = row["config"], row["hardware"]
    if row["kernel"] == "attention":
        return float(rl.attention(c["batch"], c["heads"], c["q_len"], c["kv_len"],
                                  c["head_dim"], kv_heads=c["kv_heads"], causal=c["causal"],
                                  backward=c["backward"], dtype=c["dtype"], hardware=hw,
                                  backend=c["backend"]).time_s)
    if row["kernel"] == "gemm":
        return float(rl.gemm(c["m"], c["k"], c["n"], c["dtype"], hardware=hw).time_s)
    if row["kernel"] == "mxfp8_quantize":
        return _quantize_s(c, hw)
    raise ValueError(f"{row['id']}: unknown kernel {row['kernel']!r}")


def read(path: Path = DATA) -> list[dict[str, Any]]:
    """The published rows."""
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def errors(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Signed errors (model / published - 1) per group, in file order."""
    out: dict[str, list[float]] = {}
    for r in rows:
        out.setdefault(r["group"], []).append(price(r) / float(r["measured_s"]) - 1.0)
    return out


def main() -> None:
    rows = read()
    if "--rows" in sys.argv[1:]:
        print(f"{'id':58s} {'published':>11s} {'model':>11s} {'error':>7s}")
        for r in rows:
            t = price(r)
            print(f"{r['id']:58s} {r['measured_s'] * 1e3:9.3f}ms {t * 1e3:9.3f}ms "
                  f"{t / r['measured_s'] - 1.0:+7.1%}")
        print()
    by = errors(rows)
    print(f"{'group':42s} {'rows':>4s} {'median':>7s} {'|median|':>8s} {'min':>7s} {'max':>7s}")
    for g, e in by.items():
        print(f"{g:42s} {len(e):4d} {statistics.median(e):+7.1%} "
              f"{statistics.median(abs(x) for x in e):8.1%} {min(e):+7.1%} {max(e):+7.1%}")
    allv = [x for e in by.values() for x in e]
    print(f"{'all':42s} {len(allv):4d} {statistics.median(allv):+7.1%} "
          f"{statistics.median(abs(x) for x in allv):8.1%}")


if __name__ == "__main__":
    main()
