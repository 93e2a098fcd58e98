"""float8 / MX / NVFP4 / blockwise linear recipes (torchao's names) and the modes of a linear."""

from __future__ import annotations

from typing import Any

from .. import _core
from .._checks import one_of
from .._errors import ArgumentValueError
from .._params.architecture import compute_capability

__all__ = ["MODES", "RECIPES", "TE_BLOCK_SCALED", "check_recipe", "check_te_support",
           "core_recipe", "lowp_dtype", "recipe_names"]

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
    # Transformer Engine's Float8BlockScaling on sm90 as Megatron-Core runs it (Megatron-Bridge's
    # FP8-SC / "subchannel" recipe): one quantize kernel per activation writes the 1x128-scaled
    # rows and the transposed copy; 128x128 weights quantized in the step's first micro-batch
    "blockwise_te": _R.blockwise_te,
    # Float8CurrentScaling on a GPU whose fp8 GEMMs are TN-only (sm89 / sm90 / sm120): the
    # amax, then one cast-transpose writing both fp8 copies. "tensorwise_te" resolves to it on
    # those GPUs (:func:`core_recipe`)
    "tensorwise_te_sm90": _R.tensorwise_te_sm90,
}

MODES: dict[str, Any] = {
    "training": _core.LinearMode.training,
    "train": _core.LinearMode.training,
    "inference": _core.LinearMode.inference,
}

_FP4 = {"mxfp4_cutlass", "mxfp4", "nvfp4", "nvfp4_static", "nvfp4_no_global_scale"}

#: Transformer Engine recipes whose GEMMs need block-scaled (microscaled) tensor-core MMA, and
#: the compute capability TE asks for (TE 2.9 ``pytorch/quantization.py``
#: ``check_mxfp8_support``: 10.0 or higher, and "not supported on 12.0+ architectures yet").
#: A GPU with no compute capability in the database (not NVIDIA) has that MMA where it has an
#: fp4 tensor peak.
TE_BLOCK_SCALED = {"mxfp8_te": "MXFP8BlockScaling"}
#: Compute capabilities on which TE 2.9 runs MXFP8BlockScaling: [10.0, 12.0).
_TE_MXFP8_CC = ((10, 0), (12, 0))



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



def _tn_only(hw: Any) -> bool:
    """Whether ``hw``'s fp8 GEMMs take only the TN layout: compute capability 8.9 or more (TE's
    fp8 support, ``check_fp8_support``) and Transformer Engine's
    ``nvte_is_non_tn_fp8_gemm_supported()`` false (TE 2.9 ``common/transformer_engine.cpp``:
    any layout only on sm100-sm119 and sm130+), so sm89 / sm90 / sm120 (Ada, Hopper, RTX 50 /
    RTX PRO 6000 Blackwell). Without a compute capability (not NVIDIA): an fp8 tensor peak and
    no fp4 one (the block-scaled MMA that came with sm100's any-layout fp8)."""
    cc = compute_capability(hw)
    if cc is None:
        return bool(getattr(hw, "fp8_flops_per_s", None)) and not getattr(
            hw, "fp4_flops_per_s", None)
    any_layout = (10, 0) <= cc < (12, 0) or cc >= (13, 0)
    return cc >= (8, 9) and not any_layout


def core_recipe(recipe: str, hw: Any) -> Any:
    """The core recipe that runs recipe ``recipe`` (a name of :data:`RECIPES`) on ``hw``:
    ``tensorwise_te`` (Float8CurrentScaling) is ``tensorwise_te_sm90`` on GPUs whose fp8 GEMMs
    are TN-only (:func:`_tn_only`: H100 / H200, L4 / L40S / RTX 4090, RTX 5090 / RTX PRO 6000:
    TE 2.9 ``quantizer.cpp`` quantizes with a transposed copy there), itself elsewhere;
    every other name maps as :data:`RECIPES`."""
    if recipe == "tensorwise_te" and _tn_only(hw):
        return _R.tensorwise_te_sm90
    return RECIPES[recipe]


def check_te_support(fn: str, recipe: Any, hw: Any, name: str = "recipe") -> None:
    """Raise :class:`~roofline._errors.ArgumentValueError` (naming ``name``) when ``recipe``
    is a Transformer Engine recipe TE refuses to run on ``hw``: MXFP8BlockScaling
    (``mxfp8_te``) needs compute capability 10.0 to 11.x (:data:`TE_BLOCK_SCALED`; TE 2.9
    refuses 12.0+); a GPU with no compute capability needs an fp4 tensor peak."""
    if recipe not in TE_BLOCK_SCALED:
        return
    cc = compute_capability(hw)
    if cc is None:
        ok = bool(getattr(hw, "fp4_flops_per_s", None))
        why = "has no block-scaled (fp4 / MX) tensor-core peak in the database"
    else:
        ok = _TE_MXFP8_CC[0] <= cc < _TE_MXFP8_CC[1]
        why = f"has compute capability {cc[0]}.{cc[1]}"
    if not ok:
        raise ArgumentValueError(
            fn, name, f"{recipe!r} is Transformer Engine's {TE_BLOCK_SCALED[recipe]}, which TE "
            "runs only on compute capability 10.0 to 11.x (check_mxfp8_support: 10.0+, not "
            f"12.0+ yet); {hw.name} {why}",
            "use 'tensorwise_te' or 'blockwise_te' (FP8-CS / FP8-SC on Hopper), or a "
            "datacenter Blackwell GPU (B200, GB200, B300, GB300)")
