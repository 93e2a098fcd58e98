"""float8 / MX / NVFP4 / blockwise linear recipes (torchao's names) and the modes of a linear."""

from __future__ import annotations

from typing import Any

from .. import _core
from .._checks import one_of

__all__ = ["MODES", "RECIPES", "check_recipe", "lowp_dtype", "recipe_names"]

_R = _core.Recipe

#: Recipe names (torchao's) and aliases -> core recipe.
RECIPES: dict[str, Any] = {
    "tensorwise": _R.tensorwise,
    "rowwise": _R.rowwise,
    "rowwise_with_gw_hp": _R.rowwise_with_gw_hp,
    "mxfp8_cublas": _R.mxfp8_cublas,
    "mxfp8_cublas_rceil": _R.mxfp8_cublas_rceil,
    "mxfp8_emulated": _R.mxfp8_emulated,
    "mxfp8_cutlass": _R.mxfp8_cutlass,
    "mxfp8_32x32_flexible_gemm_layout": _R.mxfp8_32x32_flexible_gemm_layout,
    "mxfp8_32x32_weight": _R.mxfp8_32x32_weight,
    # Transformer Engine's MXFP8BlockScaling as Megatron-Core runs it (TE 2.x before
    # GEMM-ready scales): one quantize kernel per tensor, scale swizzles before each GEMM
    "mxfp8_te": _R.mxfp8_te,
    # Transformer Engine's Float8CurrentScaling as Megatron-Core runs it on sm100 / sm103
    # (B200, GB200, B300, GB300: fp8 GEMMs in any layout, one fp8 copy, fp8 weights)
    "tensorwise_te": _R.tensorwise_te,
    # Transformer Engine's DelayedScaling on sm90 (H100 / H200: TN-only fp8 GEMMs): one
    # fp8_cast_transpose_fused per activation (amax in the kernel, scale from the history);
    # delayed_te caches the weight's fp8 copies for the step (Megatron-Core passes
    # is_first_microbatch), delayed_te_uncached casts it in every call (llm-foundry's te.Linear)
    "delayed_te": _R.delayed_te,
    "delayed_te_uncached": _R.delayed_te_uncached,
    "mxfp4_cutlass": _R.mxfp4_cutlass,
    "mxfp4": _R.mxfp4,
    "nvfp4": _R.nvfp4,
    "nvfp4_static": _R.nvfp4_static,
    # inference only: fp8 weights and a calibrated per-tensor input scale (TensorRT-LLM's FP8
    # Q/DQ linears): one quantize kernel per activation, no amax pass
    "tensorwise_static": _R.tensorwise_static,
    "nvfp4_no_global_scale": _R.nvfp4_no_global_scale,
    "blockwise": _R.blockwise,
    "blockwise_1x128_128x128": _R.blockwise,
}

MODES: dict[str, Any] = {
    "training": _core.LinearMode.training,
    "train": _core.LinearMode.training,
    "inference": _core.LinearMode.inference,
}

_FP4 = {"mxfp4_cutlass", "mxfp4", "nvfp4", "nvfp4_static", "nvfp4_no_global_scale"}



def recipe_names() -> list[str]:
    """Every recipe name :func:`linear` accepts."""
    return list(RECIPES)


def check_recipe(fn: str, recipe: Any, name: str = "recipe") -> Any:
    """The core recipe named ``recipe``; a ValueError naming ``fn``, the argument ``name`` and
    the choices otherwise."""
    return one_of(fn, name, recipe, RECIPES)


def lowp_dtype(recipe_name: str) -> Any:
    """The core dtype of a recipe's GEMM inputs (fp4 e2m1 or fp8 e4m3), for the peak check."""
    return _core.DType.fp4_e2m1 if recipe_name in _FP4 else _core.DType.fp8_e4m3

