"""Fit the CastTerms of torchao's compiled float8 casts (writes data/terms/cast.json).

Data: the ``gpu_float8_linear_kernels`` rows of ``gpu_h100_calibration.jsonl`` (one torchao
float8 training linear, torch.compile'd, forward + backward, profiler kernel times). The fit
target is the *cast* time of each step: the measured step minus its GEMMs (``nvjet`` kernels),
the gradient-accumulation adds the benchmark did not zero and the memsets. Those are GPU
kernel times from the profiler, so host overhead never enters the fit; the standalone cast
rows (``gpu_cast_fp8_*``, do_bench wall time) are left for validation.

Five bandwidth fractions, one per access pattern (see docs/model.md, "float8 casts"), found by
a coordinate search on a grid that minimises the mean over recipes of the median absolute
relative error of the cast time. Run: ``python benchmarks/fit_cast.py [data_dir]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from _measurements import gpu_rows  # noqa: E402

import roofline as rl  # noqa: E402
from roofline import _core  # noqa: E402
from roofline._params.shape_aware import core_objects  # noqa: E402

OUT = ROOT / "python" / "roofline" / "data" / "terms" / "cast.json"
FIELDS = ("amax_fraction", "transpose_fraction", "dual_fraction", "row_fraction",
          "column_fraction")
GRID = np.round(np.arange(0.10, 1.001, 0.01), 2)
NOT_CAST = ("nvjet", "CUDAFunctor_add", "Memset")


def cast_rows(data_dir: Path) -> list[dict[str, Any]]:
    """(recipe, m, k, n, measured cast seconds per step) of the float8 linear rows."""
    out = []
    for row in gpu_rows(data_dir, ("gpu_float8_linear_kernels",)):
        a = row["args"]
        if a["recipe"] == "bf16":
            continue
        other = sum(us for name, us, *_ in row["kernels"]
                    if any(s in name for s in NOT_CAST)) * 1e-6
        out.append({"recipe": a["recipe"], "m": a["m"], "k": a["k"], "n": a["n"],
                    "hardware": row["hardware"], "cast_s": row["measured"] - other})
    return out


def predict(rows: list[dict[str, Any]], terms: dict[str, float]) -> np.ndarray:
    """Predicted cast time per row with the given terms."""
    pred = []
    for r in rows:
        hw = rl.hardware(r["hardware"])
        chw, ceff = core_objects(hw)
        t = _core.CastTerms()
        for k, v in terms.items():
            setattr(t, k, v)
        ceff.cast = t
        rec = getattr(_core.Recipe, r["recipe"])
        arr = [np.array([float(r[x])]) for x in ("m", "k", "n")]
        _, _, cast = _core.float8_linear_sweep(*arr, rec, _core.LinearMode.training, False,
                                               chw, ceff, 1)
        pred.append(float(cast[0]))
    return np.array(pred)


def score(rows: list[dict[str, Any]], terms: dict[str, float]) -> float:
    """Mean over recipes of the median |relative error| of the cast time."""
    err = np.abs(predict(rows, terms) / np.array([r["cast_s"] for r in rows]) - 1.0)
    recipes = sorted({r["recipe"] for r in rows})
    return float(np.mean([np.median([e for e, r in zip(err, rows, strict=True)
                                     if r["recipe"] == rec]) for rec in recipes]))


def column_sm_rate(rows: list[dict[str, Any]], fraction: float) -> float:
    """Per-SM rate of the column-scaled cast: the fitted fraction of the fit GPU's streaming
    bandwidth over its SMs, rounded up (3 digits) so the fit GPU's own times do not move. The
    cast's strided loads in flight per SM, not the HBM, set it: a GPU with the same SMs and a
    faster HBM (H200) runs it at the same rate."""
    hw = rl.hardware(rows[0]["hardware"])
    n = 1 << 28
    stream = n / float(rl.elementwise(n, reads=1, writes=0, dtype="int8", hardware=hw).memory_s)
    rate = fraction * stream / int(hw.sms)
    digits = 10 ** (int(np.floor(np.log10(rate))) - 2)
    return float(np.ceil(rate / digits) * digits)


def fit(data_dir: Path) -> dict[str, Any]:
    """Fit the cast terms on data_dir's measurements, write cast.json and return it."""
    rows = cast_rows(data_dir)
    terms = dict.fromkeys(FIELDS, 0.8)
    best = score(rows, terms)
    for _ in range(4):
        changed = False
        for name in FIELDS:
            for v in GRID:
                trial = {**terms, name: float(v)}
                s = score(rows, trial)
                if s < best - 1e-12:
                    best, terms, changed = s, trial, True
        if not changed:
            break
    terms["column_sm_bytes_per_s"] = column_sm_rate(rows, terms["column_fraction"])
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    doc = {
        "schema": "roofline.terms.cast/1",
        "about": "Bandwidth fractions of torchao's compiled float8 cast kernels (Inductor "
                 "Triton), fitted by benchmarks/fit_cast.py on the cast time of the "
                 "gpu_float8_linear_kernels rows (H100 SXM profiler kernel times). Universal: "
                 "each multiplies the GPU's own streaming bandwidth.",
        # mxfp8_quantize_fraction is not fitted here (no MXFP8 kernel on an H100): the packaged
        # value (universal 1, Blackwell's from published B200 kernel times) is kept.
        "universal": {**terms, "mxfp8_quantize_fraction": previous.get("universal", {}).get(
            "mxfp8_quantize_fraction", 1.0)},
        "per_architecture": previous.get("per_architecture", {}),
        "per_architecture_sources": previous.get("per_architecture_sources", {}),
        "fit_score_mean_recipe_median_abs_rel_error": round(best, 4),
    }
    OUT.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


if __name__ == "__main__":
    default = ROOT / "data" / "measurements"
    here = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    print(json.dumps(fit(here), indent=2))
