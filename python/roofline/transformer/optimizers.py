"""The optimizer step of a training job: each implementation's state format and passes, and
the time of one update over a GPU's shard."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..efficiency import EfficiencyLike
from ..ops.elementwise import elementwise
from ..ops.registry.foreach_entries import round_trip_floor
from .composer import ADAMW_PASSES

__all__ = ["OPTIMIZERS", "PER_TENSOR_OPTIMIZERS", "optimizer_update_s"]

#: Optimizer implementations -> (state format, the passes of one update as (tensors read,
#: tensors written) per parameter, format of those tensors: "fp32", or "param" for the model's
#: own format, and whether the passes run through ATen's ``multi_tensor_apply``: then every
#: pass launches one kernel per 320 chunks of 65536 elements,
#: ``_core.multi_tensor_apply_launches``, each paying a kernel's latency and at least its DRAM
#: round trips, :func:`roofline.ops.registry.foreach_entries.round_trip_floor`).
#:
#: - ``adam`` / ``adam_8bit`` / ``adam_bf16``: one fused mixed-precision kernel (Megatron's,
#:   Transformer Engine's and apex's FusedAdam): fp32 master weight, gradient and states read
#:   once, written once.
#: - ``adamw_fused``: ``torch.optim.AdamW(fused=True)``: one pass reading p, g, m, v and writing
#:   p, m, v, the states in the parameters' format (``model.to(bfloat16)`` training).
#: - ``adamw_foreach``: ``torch.optim.AdamW()`` on CUDA (foreach, torch's default): eight
#:   ``_foreach_*`` passes: ``mul_(p)`` (weight decay), ``lerp_(m, g)``, ``mul_(v)``,
#:   ``addcmul_(v, g, g)`` (g read once from DRAM), ``d = sqrt(v)``, ``div_(d)``,
#:   ``add_(d, eps)``, ``addcdiv_(p, m, d)``: 12 reads and 8 writes per parameter (an H200
#:   train step of 1.49 G bf16 parameters spent 19.6 ms in these kernels: 8 x 71 launches of
#:   at most 320 x 65536 elements, data/programs/h200).
#: - ``decoupled_adamw``: Composer's ``DecoupledAdamW`` (llm-foundry's MPT runs): a Python
#:   loop over the parameter tensors, each synchronising on its step count before its 8
#:   kernels (:data:`.composer.ADAMW_PASSES`), fp32 states; priced per tensor by
#:   :func:`.composer.decoupled_adamw_s`, the tensors counted per rank from the flat-parameter
#:   shards (``compose``'s ``param_tensors``).
OPTIMIZERS: dict[str, tuple[Any, tuple[tuple[int, int], ...], str, bool]] = {
    "adam": (_core.OptimizerKind.adam, ((4, 4),), "fp32", False),
    "adam_8bit": (_core.OptimizerKind.adam_8bit, ((2, 2),), "fp32", False),
    "adam_bf16": (_core.OptimizerKind.adam_bf16, ((2, 2),), "fp32", False),
    "adamw_fused": (_core.OptimizerKind.adam_bf16, ((4, 3),), "param", True),
    "adamw_foreach": (_core.OptimizerKind.adam_bf16, ((1, 1), (2, 1), (1, 1), (2, 1), (1, 1),
                                                      (1, 1), (1, 1), (3, 1)), "param", True),
    "decoupled_adamw": (_core.OptimizerKind.adam, ADAMW_PASSES, "fp32", False),
}
#: Optimizers that loop over the parameter tensors in Python (priced per tensor).
PER_TENSOR_OPTIMIZERS = ("decoupled_adamw",)


def optimizer_update_s(params: np.ndarray, optimizer: str, fmt: str, hw: Any,
                       efficiency: EfficiencyLike = "default") -> np.ndarray:
    """Time of one optimizer update over ``params`` parameters per GPU (array), seconds.

    Each pass of :data:`OPTIMIZERS` streams its tensors of ``params`` elements in ``fmt`` by
    :func:`roofline.elementwise`: one kernel, or for torch's ``multi_tensor_apply`` optimizers
    ``launches`` kernels (``_core.multi_tensor_apply_launches`` of the parameters as one list:
    per-tensor chunk rounding and the tensor-count limit are ignored, both negligible for
    model weights), each at least its DRAM round trips
    (:func:`roofline.ops.registry.foreach_entries.round_trip_floor`); the passes add up.
    """
    _, passes, _, mta = OPTIMIZERS[optimizer]
    n = np.maximum(np.ceil(np.asarray(params, dtype=float)), 1).astype(np.int64)
    if not mta:
        reads, writes = sum(r for r, _ in passes), sum(w for _, w in passes)
        return np.asarray(elementwise(n, reads, writes, 0.0, fmt, hw, efficiency=efficiency,
                                      kernels=len(passes)).time_s)
    flat = n.reshape(-1)
    values, inverse = np.unique(flat, return_inverse=True)
    times = np.zeros(len(values))
    for i, v in enumerate(values):
        launches = int(_core.multi_tensor_apply_launches(np.array([float(v)]), 1))
        for reads, writes in passes:
            e = elementwise(int(v), reads, writes, 0.0, fmt, hw, efficiency=efficiency,
                            kernels=launches)
            times[i] += float(round_trip_floor(e, launches, float(v), hw).time_s)
    out: np.ndarray = times[inverse].reshape(n.shape)
    return out
