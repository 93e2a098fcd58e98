"""The model's torchao float8 training speedups against the H200 lease's (never fitted).

``data/programs/h200/session6.jsonl`` times one compiled ``nn.Linear`` forward + backward per
recipe (bf16, tensorwise, rowwise) at seven shapes of the H100 calibration file, as the
``gpu_float8_training_speedup`` family defines it (bf16 do_bench time / float8 do_bench
time). This prints, per shape and recipe, the measured and predicted speedup and per-call
times (``rl.float8.linear(m, k, n, recipe, "H200", mode="train")``: ``speedup``, ``wall_s``,
``bf16_wall_s``), then the median absolute error of the speedup per recipe.

Run: ``PYTHONPATH=python python benchmarks/float8_h200_training.py``
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import roofline as rl

DATA = Path(__file__).resolve().parents[1] / "data" / "programs" / "h200" / "session6.jsonl"


def speedup_errors(path: Path = DATA, show: bool = False) -> dict[str, list[float]]:
    """Signed speedup errors (predicted / measured - 1) per float8 recipe."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    runs = {(r["args"]["m"], r["args"]["k"], r["args"]["n"], r["args"]["recipe"]): r
            for r in rows if r.get("what") == "float8_training" and "do_bench_s" in r}
    errors: dict[str, list[float]] = {"tensorwise": [], "rowwise": []}
    for (m, k, n, recipe), r in sorted(runs.items()):
        if recipe == "bf16" or (m, k, n, "bf16") not in runs:
            continue
        bf16 = runs[(m, k, n, "bf16")]["do_bench_s"]
        measured = bf16 / r["do_bench_s"]
        e = rl.float8.linear(m, k, n, recipe, "H200", mode="train")
        errors[recipe].append(float(e.speedup) / measured - 1)
        if show:
            print(f"{recipe:<10} {m:>6}x{k:>5}x{n:>5}  speedup {measured:5.2f} measured "
                  f"{float(e.speedup):5.2f} model   float8 {r['do_bench_s'] * 1e6:8.1f} / "
                  f"{float(e.wall_s) * 1e6:8.1f} us   bf16 {bf16 * 1e6:8.1f} / "
                  f"{float(e.bf16_wall_s) * 1e6:8.1f} us")
    return errors


def main() -> None:
    errors = speedup_errors(show=True)
    for recipe, errs in errors.items():
        print(f"{recipe}: median |error| of the speedup "
              f"{100 * statistics.median(abs(x) for x in errs):.1f} % over {len(errs)} shapes")


if __name__ == "__main__":
    main()
