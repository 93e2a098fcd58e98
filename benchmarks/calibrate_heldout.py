"""Calibration on a GPU's own measurements, scored out of sample.

Splits a ``roofline bench`` file into two halves by shape (a stable hash of family and args,
so a shape is never on both sides), fits a profile with ``rl.calibrate(measurements=half)``
on one half and validates it on the other, both ways, beside the default model (never fitted
to this GPU). Prints one table: per family, the default model's median error, and the
calibrated profile's held-out median error for each fold.

Run: PYTHONPATH=python python benchmarks/calibrate_heldout.py data/measurements/gpu_h200_bench.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import warnings

import roofline as rl


def half(row: dict) -> int:
    key = json.dumps([row["family"], row["args"]], sort_keys=True).encode()
    return hashlib.sha256(key).digest()[0] % 2


def medians(result: object) -> dict[str, float]:
    table = result.to_pandas()  # type: ignore[attr-defined]
    return {str(r["family"]): float(r["default_median"]) for _, r in table.iterrows()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    with open(args.path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    halves = [[r for r in rows if half(r) == h] for h in (0, 1)]
    base = {h: medians(rl.validate(halves[h])) for h in (0, 1)}
    fitted = {}
    for h in (0, 1):
        prof = rl.calibrate(measurements=halves[1 - h])
        fitted[h] = medians(rl.validate(halves[h], hardware=prof))
    fams = sorted(set(base[0]) | set(base[1]))
    print(f"{'family':42s} {'default A':>10s} {'fit B->A':>9s} {'default B':>10s} "
          f"{'fit A->B':>9s}")

    def pct(d: dict[str, float], k: str) -> str:
        return f"{d[k]:9.1%}" if k in d else f"{'-':>9s}"

    for k in fams:
        print(f"{k:42s} {pct(base[0], k):>10s} {pct(fitted[0], k)} {pct(base[1], k):>10s} "
              f"{pct(fitted[1], k)}")


if __name__ == "__main__":
    main()
