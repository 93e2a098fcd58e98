"""Launch-overhead rows: a chain of tiny eager kernels, and the same as a CUDA graph."""

from __future__ import annotations

from typing import Any

from ...host import launch_overhead


def predict_launch(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    n = row["args"]["kernels"]
    out = [(row["family"], row["measured"],
            float(launch_overhead(n, mode="eager", hardware=hw, efficiency=eff)))]
    if row.get("graph_s"):
        out.append((row["family"] + " (CUDA graph)", row["graph_s"],
                    float(launch_overhead(n, mode="graph", hardware=hw, efficiency=eff))))
    return out

