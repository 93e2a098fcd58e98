"""torchao float8 rows: compiled casts and whole training linears (forward + backward)."""

from __future__ import annotations

from typing import Any

import numpy as np

import roofline as rl
from roofline.efficiency import is_shape_aware

from ._num import seconds

#: Kernels of a measured step that a normal training step does not run: the benchmark did not
#: zero gradients, so two adds accumulate into x.grad and weight.grad.
_NOT_PART_OF_A_STEP = ("CUDAFunctor_add",)


def _cast(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    est = rl.float8.cast(a["rows"], a["cols"], granularity=a["granularity"], hardware=hw,
                         efficiency=eff)
    # do_bench repeated the whole compiled call: small casts are bound by its host time
    # (region entry + kernel launches), so the measured time is the call's wall time.
    return [(row["family"], row["measured"], seconds(est.wall_s))]


def step_s(row: dict[str, Any]) -> float:
    """The row's measured kernel time of a normal step (without the gradient accumulation)."""
    extra = sum(us for name, us, *_ in row.get("kernels", [])
                if any(s in name for s in _NOT_PART_OF_A_STEP)) * 1e-6
    return float(row["measured"] - extra)


def _linear(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    # a batch of rows (roofline.calibration.batch) comes with step_s already applied
    measured = row["measured"] if "kernels" not in row else step_s(row)
    recipe = a["recipe"]
    if recipe == "bf16":
        r = rl.float8.linear(a["m"], a["k"], a["n"], recipe="tensorwise", hardware=hw,
                             efficiency=eff)
        predicted, wall = r.bf16_s, r.bf16_wall_s
    else:
        r = rl.float8.linear(a["m"], a["k"], a["n"], recipe=recipe, hardware=hw, efficiency=eff)
        predicted, wall = r.fp8_s, r.wall_s
    out = [(f"{row['family']} ({recipe})", measured, seconds(predicted))]
    if row.get("wall_s") is not None and np.all(np.asarray(row["wall_s"]) > 0) \
            and is_shape_aware(eff):
        # do_bench wall of the compiled step (launch overhead included), against the host model.
        out.append(("gpu_float8_linear wall_s (all recipes)", row["wall_s"], seconds(wall)))
    return out



PREDICTORS = {"cast": _cast, "linear_train_kernels": _linear}
