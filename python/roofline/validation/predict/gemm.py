"""GEMM rows: cuBLAS F.linear / torch._scaled_mm and grouped GEMMs."""

from __future__ import annotations

from typing import Any

import roofline as rl


def _gemm(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    kwargs: dict[str, Any] = {}
    if row["family"].endswith("_rowwise"):
        kwargs["scaling"] = "rowwise"
    t = rl.gemm(a["m"], a["k"], a["n"], dtype=a["dtype"], hardware=hw, efficiency=eff,
                **kwargs).time_s
    return [(row["family"], row["measured"], float(t))]


def _grouped(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    # torch._scaled_grouped_mm (the fp8 rows) takes rowwise scales.
    scaling = "rowwise" if row["family"] == "gpu_grouped_gemm_fp8" else None
    if "counts" in a:
        e = rl.grouped_gemm(None, a["k"], a["n"], dtype=a["dtype"], hardware=hw,
                            counts=a["counts"], efficiency=eff, scaling=scaling)
    else:
        e = rl.grouped_gemm(a["m_per_group"], a["k"], a["n"], a["groups"], dtype=a["dtype"],
                            hardware=hw, efficiency=eff, scaling=scaling)
    return [(row["family"], row["measured"], float(e.time_s))]


PREDICTORS = {"gemm": _gemm, "grouped_gemm": _grouped}
