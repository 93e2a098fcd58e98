"""torchao float8 rows: compiled casts and whole training linears (forward + backward)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .... import _core
from ...._params.timing import per_call_timing
from ....efficiency import is_shape_aware
from ....float8.casts import cast as float8_cast
from ....float8.layer import linear as float8_linear
from ...elementwise import elementwise
from ._num import seconds

#: Kernels of a measured step that a normal training step does not run: the benchmark did not
#: zero gradients, so two adds accumulate into x.grad and weight.grad.
_NOT_PART_OF_A_STEP = ("CUDAFunctor_add",)

#: triton's do_bench zeroes a 256 MiB int32 buffer before every timed call (its L2 flush).
_FLUSH_ELEMENTS = 2**26


def predict_cast(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    est = float8_cast(a["rows"], a["cols"], granularity=a["granularity"], hardware=hw,
                         efficiency=eff)
    # do_bench repeated the whole compiled call: small casts are bound by its host time
    # (region entry + kernel launches), so the measured time is the call's wall time.
    return [(row["family"], row["measured"], seconds(est.wall_s))]


def step_s(row: dict[str, Any]) -> float:
    """The row's measured kernel time of a normal step (without the gradient accumulation)."""
    extra = sum(us for name, us, *_ in row.get("kernels", [])
                if any(s in name for s in _NOT_PART_OF_A_STEP)) * 1e-6
    return float(row["measured"] - extra)


def do_bench_step(row: dict[str, Any], hw: Any, eff: Any) -> tuple[np.ndarray, float, Any]:
    """Kernel times, flush time and host terms of one do_bench'd float8 linear row.

    The benchmark did not zero the gradients, so each step also ran two bf16 adds into x.grad
    (m x k) and weight.grad (n x k), launched after the backward (appended to the step's
    kernels); do_bench's L2 flush (a 256 MiB write, timed by the elementwise model) runs on the
    GPU before each call while the host starts the call. Returns (kernel times in launch
    order, flush time, the efficiency's host terms).
    """
    a = row["args"]
    r = float8_linear(int(a["m"]), int(a["k"]), int(a["n"]), recipe="tensorwise"
                         if a["recipe"] == "bf16" else a["recipe"], hardware=hw, efficiency=eff)
    lowp, bf16 = r.step_kernel_times()
    adds = [float(elementwise(e, 2, 1, dtype="bf16", hardware=hw, efficiency=eff).time_s)
            for e in (float(a["m"]) * a["k"], float(a["n"]) * a["k"])]
    flush = float(elementwise(_FLUSH_ELEMENTS, 0, 1, dtype="fp32", hardware=hw,
                                 efficiency=eff).time_s)
    times = np.concatenate([bf16 if a["recipe"] == "bf16" else lowp, adds])
    return times, flush, r._args[4].host


def do_bench_wall(times: np.ndarray, flush: float, terms: Any, torchao: bool = False,
                  training: bool = True) -> float:
    """do_bench's median of one compiled call: ``_core.linear_call_wall_time`` (forward +
    backward regions in training, the forward alone in inference; ``torchao``: a torchao
    low-precision linear, whose regions cost ``torchao_call_s`` more to enter) with the flush
    as the head kernel that hides host time."""
    return float(_core.linear_call_wall_time(times, _core.LaunchMode.compiled, training,
                                             torchao, flush, terms)[0])


def predict_linear(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    # a batch of rows (roofline.calibration.batch) comes with step_s already applied
    measured = row["measured"] if "kernels" not in row else step_s(row)
    recipe = a["recipe"]
    r = float8_linear(a["m"], a["k"], a["n"], recipe="tensorwise" if recipe == "bf16"
                         else recipe, hardware=hw, efficiency=eff)
    predicted = r.bf16_s if recipe == "bf16" else r.fp8_s
    out = [(f"{row['family']} ({recipe})", measured, seconds(predicted))]
    if row.get("wall_s") is not None and np.all(np.asarray(row["wall_s"]) > 0) \
            and is_shape_aware(eff):
        # do_bench wall of the compiled step (host time, flush and gradient adds included)
        shape = np.shape(a["m"])  # a batch (roofline.calibration.batch) stacks rows
        wall = np.empty(shape)
        for idx in np.ndindex(*shape):
            one = dict(row, args={**a, **{d: np.asarray(a[d])[idx] for d in "mkn"}})
            with per_call_timing():  # do_bench times the call back to back
                wall[idx] = do_bench_wall(*do_bench_step(one, hw, eff),
                                          torchao=recipe != "bf16")
        out.append(("gpu_float8_linear wall_s (all recipes)", row["wall_s"],
                    float(wall) if not shape else wall))
    return out



def do_bench_forward(row: dict[str, Any], hw: Any, eff: Any) -> tuple[np.ndarray, float, Any]:
    """Kernel times, flush time and host terms of one do_bench'd compiled inference call of the
    row's linear: bf16 (``recipe="bf16"``: its GEMM) or torchao's dynamic quantization (the
    activation cast, then the low-precision GEMM)."""
    a = row["args"]
    recipe = a["recipe"]
    r = float8_linear(int(a["m"]), int(a["k"]), int(a["n"]), recipe="rowwise"
                      if recipe == "bf16" else recipe, hardware=hw, efficiency=eff,
                      mode="inference")
    lowp, bf16 = r.step_kernel_times()
    flush = float(elementwise(_FLUSH_ELEMENTS, 0, 1, dtype="fp32", hardware=hw,
                              efficiency=eff).time_s)
    return (bf16 if recipe == "bf16" else lowp), flush, r._args[4].host


def do_bench_call_s(row: dict[str, Any], recipe: str, hw: Any, eff: Any, mode: str) -> float:
    """do_bench's time of one compiled call of the row's linear: bf16 (``recipe="bf16"``) or
    converted to ``recipe``; forward + backward with the two gradient adds (``"training"``, two
    compiled regions), or forward only (``"inference"``, one region). The 256 MiB flush before
    each call hides that much of the call's host time (:func:`do_bench_wall`); a torchao
    linear's regions also pay ``torchao_call_s``."""
    a = row["args"]
    one = dict(row, args={**a, "recipe": recipe})
    torchao = recipe != "bf16"
    if mode == "training":
        times, flush, terms = do_bench_step(one, hw, eff)
        return do_bench_wall(times, flush, terms, torchao)
    return do_bench_wall(*do_bench_forward(one, hw, eff), torchao, training=False)


def _gpu_s(row: dict[str, Any], recipe: str, hw: Any, eff: Any, mode: str) -> float:
    """GPU time of the row's linear (presets without a host model)."""
    a = row["args"]
    r = float8_linear(int(a["m"]), int(a["k"]), int(a["n"]), recipe="rowwise"
                      if recipe == "bf16" else recipe, hardware=hw, efficiency=eff, mode=mode)
    return float(r.bf16_s if recipe == "bf16" else r.fp8_s)


def _call_s(row: dict[str, Any], recipe: str, hw: Any, eff: Any, mode: str) -> float:
    if is_shape_aware(eff):
        return do_bench_call_s(row, recipe, hw, eff, mode)
    return _gpu_s(row, recipe, hw, eff, mode)


def predict_linear_train(row: dict[str, Any], hw: Any, eff: Any
                         ) -> list[tuple[str, float, float]]:
    """A compiled bf16 ``nn.Linear`` forward + backward, do_bench per call (host time
    included where the default model has a host model)."""
    return [(row["family"], row["measured"], _call_s(row, "bf16", hw, eff, "training"))]


def _speedup_predictor(mode: str) -> Any:
    def predict(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
        recipe = row["args"]["recipe"]
        ratio = _call_s(row, "bf16", hw, eff, mode) / _call_s(row, recipe, hw, eff, mode)
        return [(f"{row['family']} ({recipe})", row["measured"], ratio)]
    predict.__doc__ = (f"torchao's end-to-end float8 {mode} speedup of one compiled linear: "
                       "bf16 call time / float8 call time, both as do_bench times them.")
    return predict


#: ``float8_training_speedup`` rows (torchao convert_to_float8_training, compiled).
predict_training_speedup = _speedup_predictor("training")
#: ``float8_inference_speedup`` rows (torchao dynamic rowwise quantization, compiled).
predict_inference_speedup = _speedup_predictor("inference")
