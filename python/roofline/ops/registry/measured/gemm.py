"""GEMM rows: cuBLAS F.linear / torch._scaled_mm and grouped GEMMs.

The rows of gpu_h100_calibration.jsonl are timed per call with ``triton.testing.do_bench``
(CUDA events around one call). The model's ``time_s`` is GPU time of the kernels in a stream;
for the default model this predictor adds the per-call overhead of that measurement
(``data/terms/gemm.json`` ``measurement.per_call_overhead_s``, fitted with the GEMM terms by
benchmarks/fit_gemm.py), which matters only for kernels of a few microseconds.
"""

from __future__ import annotations

from typing import Any

from ...._params import packaged
from ....efficiency import is_shape_aware
from ...gemm import gemm
from ...grouped_gemm import grouped_gemm
from ._num import seconds


def _call_overhead(eff: Any) -> float:
    """Per-call measurement overhead added to the default model's prediction (0 otherwise)."""
    if is_shape_aware(eff):
        return float(packaged.terms("gemm").get("measurement", {}).get("per_call_overhead_s", 0.0))
    return 0.0


def predict_gemm(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    kwargs: dict[str, Any] = {}
    if row["family"].endswith("_rowwise"):
        kwargs["scaling"] = "rowwise"
    elif row["family"].endswith("_tensorwise"):
        kwargs["scaling"] = "tensorwise"
    t = gemm(a["m"], a["k"], a["n"], dtype=a["dtype"], hardware=hw, efficiency=eff,
                **kwargs).time_s
    return [(row["family"], row["measured"], seconds(t) + _call_overhead(eff))]


def predict_grouped_gemm(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    # torch._scaled_grouped_mm (the fp8 rows) takes rowwise scales.
    scaling = "rowwise" if row["family"] == "gpu_grouped_gemm_fp8" else None
    if "counts" in a:
        e = grouped_gemm(None, a["k"], a["n"], dtype=a["dtype"], hardware=hw,
                            counts=a["counts"], efficiency=eff, scaling=scaling)
    else:
        e = grouped_gemm(a["m_per_group"], a["k"], a["n"], a["groups"], dtype=a["dtype"],
                            hardware=hw, efficiency=eff, scaling=scaling)
    return [(row["family"], row["measured"], seconds(e.time_s) + _call_overhead(eff))]

