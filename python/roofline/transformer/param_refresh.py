"""What a low-precision recipe's weights cost once per optimizer step, beside the update.

Megatron-Core keeps fp8 weights (``fp8_param_gather``) in two ways. Per-tensor fp8
(``tensorwise_te``): the optimizer writes each rank's fp8 shard into the parameter buffer and
the distributed optimizer all-gathers those fp8 bytes. MXFP8 (``mxfp8_te``): its 1x32 scales do
not shard with the flat buffer, so Megatron-Bridge's MXFP8 recipe sets
``reuse_grad_buf_for_mxfp8_param_ag`` (required with ``fp8_param_gather``): the optimizer
writes the bf16 shard into the gradient buffer, the all-gather moves bf16 (2 bytes per
element), and each rank then quantizes every gathered weight into its MXFP8 param
(``param.data.copy_``: TE's quantize, both layouts) and zeroes the borrowed buffer
(``DistributedDataParallel.start_param_sync`` / ``finish_param_sync``, Megatron-LM 92c8482).
The kernels and the gathered bytes are the C++ core's (``param_refresh_kernels``,
``gathered_weight_bytes`` in ``cpp/src/cast.cpp``); here they are summed for one GPU's
linear weights.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from .._params.resolve import resolve
from ..efficiency import EfficiencyLike
from ..float8.recipes import RECIPES, core_recipe

__all__ = ["param_refresh", "refresh_terms", "weight_cast_s"]


def param_refresh(recipe: str | None, linear_params: float, stored_bytes: float, hw: Any,
                  efficiency: EfficiencyLike) -> tuple[float, float]:
    """(seconds, gathered bytes per element) of one GPU's linear weights per optimizer step.

    ``linear_params`` linear-weight elements held by the GPU (all its layers, before the
    pipeline split), stored in ``stored_bytes`` per element under ``recipe``. The seconds are
    the sum of the core's per-step refresh kernels (for ``mxfp8_te``: the quantize reading
    2 bytes and writing 2 + 2/32 per element at ``mxfp8_quantize_fraction`` of the streaming
    rate, then a 2-byte zero fill; for ``blockwise_te``: TE's first-micro-batch 128x128
    quantize, reading 2 bytes and writing 2 + 8/16384 per element; 0 for other recipes and for
    ``None``); the gathered bytes
    are what the distributed optimizer's all-gather moves per element (``stored_bytes``
    unless the recipe gathers bf16).
    """
    if recipe is None or recipe not in RECIPES:
        return 0.0, stored_bytes
    hw, chw, ceff = resolve(hw, efficiency)
    r = core_recipe(recipe, hw)
    gathered = float(_core.gathered_weight_bytes(r, float(stored_bytes)))
    if linear_params <= 0:
        return 0.0, gathered
    times = _core.param_refresh_kernel_times(float(linear_params), r, chw, ceff)
    return float(sum(times)), gathered


def refresh_terms(recipe: str | None, linear_params: float, expert_params: float,
                  stored_bytes: float, base: dict[str, float], hw: Any,
                  efficiency: EfficiencyLike) -> dict[str, float]:
    """The micro-batch terms :func:`.training.compose` reads for a recipe's weights:
    ``param_refresh_s`` (:func:`param_refresh` of the GPU's ``linear_params``), and the bytes
    the distributed optimizer gathers, ``expert_gather_bytes`` (the experts' linear weights)
    and ``dense_gather_bytes`` (``base["dense_weight_bytes"]`` with its linear elements at the
    gathered instead of the stored size)."""
    refresh_s, gathered = param_refresh(recipe, linear_params, stored_bytes, hw, efficiency)
    return {"param_refresh_s": refresh_s,
            "expert_gather_bytes": expert_params * gathered,
            "dense_gather_bytes": base["dense_weight_bytes"]
            + (linear_params - expert_params) * (gathered - stored_bytes)}


def weight_cast_s(recipe: str | None, linear_params: float, par: dict[str, Any], hw: Any,
                  efficiency: EfficiencyLike) -> float:
    """Seconds per step that Transformer Engine spends quantizing bf16 weights under
    Float8CurrentScaling when the run keeps no fp8 parameters (``par["fp8_param_gather"]``
    False, ``recipe == "tensorwise_te"``; else 0): each linear weight's amax, scale and
    one-copy cast (the input-role kernels of the core's ``tensorwise_te`` training casts),
    once per step: Megatron-Core passes ``is_first_microbatch`` and TE reuses the cached fp8
    copy in the later micro-batches. Priced as one pass over the GPU's ``linear_params``
    elements (all its layers, before the pipeline split; per-tensor launches left out)."""
    if par.get("fp8_param_gather", True) or recipe != "tensorwise_te" or linear_params <= 0:
        return 0.0
    hw, chw, ceff = resolve(hw, efficiency)
    times = _core.cast_kernel_times(1.0, float(linear_params), _core.TensorRole.input,
                                    core_recipe(recipe, hw), _core.LinearMode.training, False,
                                    chw, ceff)
    return float(sum(times))
