"""Does ``rl.calibrate`` help out of sample? Before / after tables for two scenarios.

(i) **H100 half split**: fit on the even rows of ``gpu_h100_calibration.jsonl``, validate on
the odd rows. The packaged model was fitted on this GPU, so the fit should not make the
held-out error worse.

(ii) **Synthetic "different GPU"**: every row's measured time is the packaged model's
prediction with perturbed terms (``PERTURBED``: 20 % slower memory bandwidth for streaming
kernels and GEMMs, 2x per-kernel latency for GEMMs and streaming kernels, 0.8x bf16 compute
fraction), times multiplicative log-normal noise of 5 %; fit on the even rows, validate on the
odd rows. The fit should recover the perturbed terms and cut the held-out error.

(i') as (i), but alternating rows within each family (every family on both sides).

Figures: median over families of the median |predicted / measured - 1| ("families"), and the
median over rows ("rows"), before (packaged terms) and after (fitted profile). Run::

    PYTHONPATH=python python benchmarks/calibration_quality.py [--data FILE] [--seed N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

import roofline as rl
from roofline.calibration.fit import current, profile_of
from roofline.validation import compare, read_measurements, summary

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements" / "gpu_h100_calibration.jsonl"

BASE = "H100 SXM"
#: term path -> factor on its packaged value (the synthetic GPU).
PERTURBED: dict[tuple[str, ...], float] = {
    ("params", "memory_fraction"): 0.8,
    ("gemm", "terms", "memory_fraction"): 0.8,
    ("params", "memory_latency_s"): 2.0,
    ("gemm", "terms", "latency_s"): 2.0,
    ("compute_fraction", "bf16"): 0.8,
}
NOISE = 0.05


def figures(rows: list[dict[str, Any]], hw: Any) -> dict[str, float]:
    """Median over families of the median |error|, and median over rows of |error|."""
    cmp = compare(rows, hardware=hw, errors=[])
    fams = summary(cmp)
    return {"families": float(np.median([v["median"] for v in fams.values()])),
            "rows": float(np.median([abs(c.error) for c in cmp])),
            "worst family": float(max(v["median"] for v in fams.values()))}


def per_family(rows: list[dict[str, Any]], hw: Any) -> dict[str, float]:
    return {f: v["median"] for f, v in summary(compare(rows, hardware=hw, errors=[])).items()}


def perturbed_truth(base: Any = BASE) -> Any:
    """The synthetic GPU: the packaged model with ``PERTURBED`` applied."""
    hw = rl.hardware(base)
    fitted: dict[str, Any] = {}
    for path, factor in PERTURBED.items():
        node = fitted
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = current(hw, path) * factor
    return profile_of(hw, fitted)


def synthetic_rows(rows: list[dict[str, Any]], truth: Any, seed: int = 0,
                   noise: float = NOISE) -> list[dict[str, Any]]:
    """``rows``' shapes with measured = truth's prediction x log-normal noise (one output per
    row: CUDA-graph and wall times are dropped)."""
    rng = np.random.default_rng(seed)
    keep = ("family", "op", "args", "backend", "hardware")
    plain = [{k: r[k] for k in keep if k in r} | {"measured": 1.0, "id": f"s{i}"}
             for i, r in enumerate(rows)]
    pred = {c.id: c.predicted_s for c in compare(plain, hardware=truth, errors=[])}
    out = []
    for r in plain:
        if r["id"] in pred:
            out.append(dict(r, measured=pred[r["id"]] * float(np.exp(rng.normal(0, noise)))))
    return out


def scenario(train: list[dict[str, Any]], valid: list[dict[str, Any]], base: str = BASE
             ) -> dict[str, Any]:
    """Fit on ``train``; figures on ``valid`` before / after, fit time, the profile."""
    t0 = time.perf_counter()
    prof = rl.calibrate(measurements=train, hardware=base)
    seconds = time.perf_counter() - t0
    return {"before": figures(valid, base), "after": figures(valid, prof), "fit_s": seconds,
            "profile": prof, "families_before": per_family(valid, base),
            "families_after": per_family(valid, prof)}


def h100_half_split(path: Path = DATA, every: int = 1) -> dict[str, Any]:
    """Scenario (i); ``every`` > 1 keeps every n-th row of each half (a faster subsample)."""
    rows = read_measurements(path)
    return scenario(rows[::2][::every], rows[1::2][::every])


def h100_family_split(path: Path = DATA) -> dict[str, Any]:
    """(i') every family's rows split alternately (the plain half split puts some families,
    e.g. all FlashAttention backward rows, wholly on one side)."""
    seen: dict[str, int] = {}
    train, valid = [], []
    for r in read_measurements(path):
        n = seen[r["family"]] = seen.get(r["family"], -1) + 1
        (train if n % 2 == 0 else valid).append(r)
    return scenario(train, valid)


def synthetic_gpu(path: Path = DATA, seed: int = 0, every: int = 1) -> dict[str, Any]:
    """Scenario (ii), with the recovered value of every perturbed term."""
    truth = perturbed_truth()
    rows = synthetic_rows(read_measurements(path), truth, seed)
    out = scenario(rows[::2][::every], rows[1::2][::every])
    out["terms"] = {".".join(p): (current(rl.hardware(BASE), p), current(truth, p),
                                  current(out["profile"], p)) for p in PERTURBED}
    return out


def _print(title: str, res: dict[str, Any]) -> None:
    b, a = res["before"], res["after"]
    print(f"\n{title}  (fit {res['fit_s']:.1f} s)")
    print(f"  {'held-out figure':30s} {'packaged':>9s} {'calibrated':>11s}")
    for k in ("families", "rows", "worst family"):
        name = "worst family median" if k == "worst family" else "median |error| over " + k
        print(f"  {name:30s} {b[k]:9.4f} {a[k]:11.4f}")
    worse = {f: (res["families_before"][f], v) for f, v in res["families_after"].items()
             if v > res["families_before"].get(f, v) + 0.01}
    for f, (x, y) in sorted(worse.items()):
        print(f"  worse by > 1 point: {f}: {x:.3f} -> {y:.3f}")
    if "terms" in res:
        print(f"  {'perturbed term':36s} {'packaged':>10s} {'truth':>10s} {'fitted':>10s}")
        for label, (p, t, f) in res["terms"].items():
            print(f"  {label:36s} {p:10.4g} {t:10.4g} {f:10.4g}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    _print("(i) H100 half split: fit on even rows, validate on odd rows",
           h100_half_split(args.data))
    _print("(i') H100 split within families: fit on even rows of each family, validate on odd",
           h100_family_split(args.data))
    what = ", ".join(".".join(p) + f" x{f}" for p, f in PERTURBED.items())
    _print(f"(ii) synthetic GPU: {what}; noise {NOISE:.0%}", synthetic_gpu(args.data, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
