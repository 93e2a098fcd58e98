"""Model vs measured GPU time of SDPA attention calls on the H200, per row.

Reads the profiler rows of ``data/programs/h200/small_kernels.jsonl`` (``what == "attention"``:
flash, efficient, cuDNN; forward and backward kernel time per call, the kernels summed) and,
when given, the GQA rows of a ``session6.jsonl`` (``what == "gqa"``: 32 query heads, 1-32 KV
heads, causal), and prints the model's GPU time (``rl.attention``, default timing) next to the
measured kernel time, with the error ``model / measured - 1`` and its median per direction.
Evidence only: nothing is fitted to these rows.

Run: ``PYTHONPATH=python python benchmarks/attention_gpu_time.py [session6.jsonl ...]``.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "data" / "programs" / "h200" / "small_kernels.jsonl"


def _rows(path: Path) -> list[dict[str, Any]]:
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def _shape(row: dict[str, Any]) -> tuple[tuple[int, ...], dict[str, Any]]:
    a = row["args"]
    seq = a.get("seq")
    q, kv = (seq, seq) if seq is not None else (a["q_len"], a["kv_len"])
    kw = dict(kv_heads=a.get("kv_heads"), causal=bool(a.get("causal", False)),
              backend=a["backend"], hardware="H200")
    return (a["batch"], a["heads"], q, kv, a["head_dim"]), kw


def report(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Print one line per row and direction; return the errors per direction."""
    errors: dict[str, list[float]] = {"fwd": [], "bwd": []}
    for row in rows:
        if row.get("what") not in ("attention", "gqa") or "error" in row:
            continue
        args, kw = _shape(row)
        for d in ("fwd", "bwd"):
            measured = float(row[f"{d}_kernel_s"])
            model = float(rl.attention(*args, backward=d == "bwd", **kw).time_s)
            err = model / measured - 1.0
            errors[d].append(err)
            kvh = kw["kv_heads"] or args[1]
            print(f"{row['name']:42s} kv{kvh:<3d} {d}  measured {measured * 1e6:9.2f} us  "
                  f"model {model * 1e6:9.2f} us  {err:+7.1%}")
    return errors


def main(argv: list[str]) -> None:
    for path in [SMALL, *map(Path, argv)]:
        print(f"# {path.name}")
        errors = report(_rows(path))
        for d, e in errors.items():
            if e:
                med = statistics.median(abs(x) for x in e)
                worst = max(e, key=abs)
                print(f"# {d}: {len(e)} rows, median |error| {med:.1%}, worst {worst:+.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
