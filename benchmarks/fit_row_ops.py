"""Fit the row-op terms (norms, softmax, cross-entropy, elementwise per backend).

Writes ``python/roofline/data/terms/row_ops.json``. The terms are few and physical (see
``roofline/_params/row_ops.py`` and docs/model.md); none is a per-shape value:

- ``small_kernel_ramp_s``: the part of the streaming latency (``memory_latency_s``, fitted by
  ``benchmarks/calibrate.py`` step 3 on >= 33 MB transfers) that a kernel with no traffic does
  not pay (PyTorch's row kernels pay it all); the saving tapers linearly to 0 at half an L2 of
  DRAM traffic (not fitted: the hardware entry's L2); set by the eager elementwise rows
  (4 K ... 1 G elements);
- ``follow_on_s``: the latency a kernel launched right after another kernel of the same call
  hides behind its predecessor's drain (eager ``silu(x) * y``, cross-entropy's kernels);
- ``aten_reread``: cost of an aten kernel's L2-resident re-read of a row, per DRAM pass (eager
  norms above 1024 columns, eager softmax / log_softmax rows too long for shared memory);
- ``inductor_reread``: the same for Inductor's looped reductions;
- ``cta_sm_fraction``: bytes/s one SM moves with aten softmax's one 1024-thread CTA per row, as
  a fraction of its share of the DRAM bandwidth.

``transcendental_flops`` (fp32 FLOP-equivalents of one exp / division) is an architecture
constant, not fitted: 2 x 128 fp32 lanes / 16 special-function lanes per SM = 16 on NVIDIA
(Volta to Blackwell), 8 on AMD CDNA (transcendentals at a quarter of the fp32 rate).

The fit minimises the mean over the H100 families of ``gpu_h100_calibration.jsonl`` this area
covers of (median + p90 / 4) absolute relative error, on a small grid. Run:
``python benchmarks/fit_row_ops.py [--data data/measurements]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
from _measurements import gpu_rows

from roofline.calibration.fit import profile_of
from roofline.hardware import hardware
from roofline.validation import compare

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "python" / "roofline" / "data" / "terms" / "row_ops.json"
DEFAULT_DATA = ROOT / "data" / "measurements"

#: Families of this area in gpu_h100_calibration.jsonl.
FAMILIES = (
    "gpu_elementwise", "gpu_rmsnorm", "gpu_rmsnorm_bwd", "gpu_layernorm", "gpu_softmax",
    "gpu_cross_entropy", "gpu_rmsnorm_compiled", "gpu_layernorm_compiled",
    "gpu_softmax_compiled", "gpu_cross_entropy_compiled",
)

TRANSCENDENTAL_FLOPS = {"NVIDIA": 16.0, "AMD": 8.0, "default": 16.0}

GRID = {
    "small_kernel_ramp_s": [0.0, 1.0e-6, 1.25e-6, 1.5e-6, 2.0e-6],
    "follow_on_s": [0.0, 1.0e-6, 1.5e-6, 2.0e-6, 2.5e-6],
    "aten_reread": [0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "inductor_reread": [0.0, 0.1, 0.2],
    "cta_sm_fraction": [0.3, 0.35, 0.4, 0.45, 0.5],
}


def document(universal: dict[str, float], summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """The terms file for these universal terms."""
    doc: dict[str, Any] = {
        "about": "Row-op terms (norms, softmax, cross-entropy, elementwise per backend); "
                 "written by benchmarks/fit_row_ops.py. See docs/model.md.",
        "universal": universal,
        "transcendental_flops": TRANSCENDENTAL_FLOPS,
    }
    if summary is not None:
        doc["fit"] = summary
    return doc


def errors(rows: list[dict[str, Any]], doc: dict[str, Any]) -> dict[str, np.ndarray]:
    """Signed relative error per family with the terms of ``doc``: each row priced on a Profile
    of its accelerator whose fitted patch holds the trial row-op terms (the default model's
    normal path; no package internals are touched)."""
    patch = {"row_ops": {k: doc[k] for k in ("universal", "transcendental_flops")}}
    by_hardware: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_hardware.setdefault(str(r["hardware"]), []).append(r)
    out: dict[str, list[float]] = {}
    for name, group in by_hardware.items():
        trial = profile_of(hardware(name), patch)
        for c in compare(group, hardware=trial, efficiency="default"):
            out.setdefault(c.family, []).append(c.error)
    return {k: np.array(v) for k, v in out.items()}


def score(errs: dict[str, np.ndarray]) -> float:
    return float(np.mean([np.median(np.abs(e)) + 0.25 * np.percentile(np.abs(e), 90)
                          for e in errs.values()]))


def fit(data_dir: Path) -> dict[str, Any]:
    """Fit the universal terms on the area's families; write and return the terms file."""
    rows = gpu_rows(data_dir, FAMILIES)
    keys = list(GRID)
    best: tuple[float, dict[str, float]] | None = None
    for values in itertools.product(*(GRID[k] for k in keys)):
        universal = dict(zip(keys, values, strict=True))
        s = score(errors(rows, document(universal)))
        if best is None or s < best[0]:
            best = (s, universal)
    assert best is not None
    errs = errors(rows, document(best[1]))
    summary = {
        "score": round(best[0], 4),
        "families": {k: {"median": round(float(np.median(np.abs(e))), 4),
                         "p90": round(float(np.percentile(np.abs(e), 90)), 4),
                         "bias": round(float(np.median(e)), 4), "rows": len(e)}
                     for k, e in sorted(errs.items())},
    }
    doc = document(best[1], summary)
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args()
    doc = fit(args.data)
    print(json.dumps(doc["universal"], indent=2))
    for fam, v in doc["fit"]["families"].items():
        print(f"{fam:30s} rows {v['rows']:3d}  median {v['median']:6.1%}  p90 {v['p90']:6.1%}  "
              f"bias {v['bias']:+6.1%}")


if __name__ == "__main__":
    main()
