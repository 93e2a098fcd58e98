"""Number formats of a transformer step: bytes per element of weights, activations and the KV
cache, and the GEMM format each float8 / low-precision linear recipe runs in."""

from __future__ import annotations

import re
from typing import Any

from .._errors import ArgumentValueError
from ..float8.recipes import check_recipe as check_float8_recipe
from ..ops.weight_only_gemm import WEIGHT_DTYPES, weight_only_weight_bytes

__all__ = ["DTYPES", "DTYPE_BYTES", "KV_BYTES", "WEIGHT_BYTES", "WeightOnly", "element_bytes",
           "linear_recipes", "recipe_dtype", "table_peak", "weight_bytes_of",
           "weight_only_recipe"]

#: Low-precision GEMM input format of each linear recipe (for batched expert / absorbed GEMMs).
RECIPE_GEMM_DTYPE = {
    "tensorwise": "fp8", "tensorwise_static": "fp8", "rowwise": "fp8", "rowwise_with_gw_hp": "fp8",
    "blockwise": "fp8_block_1x128", "blockwise_1x128_128x128": "fp8_block_1x128",
    "blockwise_te": "fp8_block_1x128",
    "mxfp4_cutlass": "mxfp4", "mxfp4": "mxfp4", "nvfp4": "nvfp4", "nvfp4_static": "nvfp4",
    "nvfp4_no_global_scale": "nvfp4",
}
#: Bytes of one stored weight element per GEMM format (block scales ignored).
WEIGHT_BYTES = {"fp8": 1.0, "fp8_block_1x128": 1.0, "mxfp8": 1.0, "mxfp4": 0.5, "nvfp4": 0.5}
#: Formats a model's weights and activations may use, with their bytes per element.
DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
DTYPES = tuple(DTYPE_BYTES)
#: KV-cache formats and their bytes per element.
KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "fp8": 1.0, "int8": 1.0}


def element_bytes(fn: str, dtype: Any, kv_dtype: Any, kv_dtype_bytes: Any
                  ) -> tuple[float, float]:
    """``(activation bytes, KV-cache bytes)`` per element of a step in ``dtype`` (one of
    :data:`DTYPES`) whose KV cache is ``kv_dtype`` (one of :data:`KV_BYTES`; default
    ``dtype``) or ``kv_dtype_bytes`` in (0, 8] when given."""
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ArgumentValueError(fn, "dtype", f"must be one of {DTYPES}, got {dtype!r}")
    if kv_dtype_bytes is None:
        kv_name = dtype if kv_dtype is None else kv_dtype
        if not isinstance(kv_name, str) or kv_name not in KV_BYTES:
            raise ArgumentValueError(fn, "kv_dtype", f"must be one of {tuple(KV_BYTES)}, got "
                                     f"{kv_dtype!r}")
        return DTYPE_BYTES[dtype], KV_BYTES[kv_name]
    if not (isinstance(kv_dtype_bytes, (int, float)) and 0 < kv_dtype_bytes <= 8):
        raise ValueError(f"{fn}: kv_dtype_bytes must be in (0, 8], got {kv_dtype_bytes!r}")
    return DTYPE_BYTES[dtype], float(kv_dtype_bytes)


def recipe_dtype(recipe: str) -> str:
    """GEMM input format of a linear recipe (batched expert / absorbed GEMMs, weights)."""
    return RECIPE_GEMM_DTYPE.get(recipe, "mxfp8" if recipe.startswith("mxfp8") else "fp8")



#: A weight-only recipe: (weight format, group size (0 = per channel), zero points).
WeightOnly = tuple[str, int, bool]

_WEIGHT_ONLY = re.compile(r"w(4|8)a16(?:_g([1-9][0-9]*)|_(channel))?(_zp)?")


def weight_only_recipe(recipe: str) -> WeightOnly | None:
    """The weight-only format a recipe name spells, or None for other recipes.

    ``"w4a16"`` / ``"w8a16"``: int4 / int8 weights with 16-bit activations (GPTQ-style, one
    16-bit scale per group of 128 input features); ``"_g<N>"`` sets the group size,
    ``"_channel"`` one scale per output channel, ``"_zp"`` adds AWQ's per-group zero points
    (``"w4a16_g128_zp"``). Run by :func:`roofline.weight_only_gemm` (Marlin).
    """
    found = _WEIGHT_ONLY.fullmatch(recipe.strip().lower()) if isinstance(recipe, str) else None
    if found is None:
        return None
    bits, group, channel, zp = found.groups()
    return ("int4" if bits == "4" else "int8", 0 if channel else int(group or 128), bool(zp))


def weight_bytes_of(recipe: str | None, act_bytes: float) -> float:
    """Stored bytes of one linear weight element under ``recipe`` (None: ``act_bytes``):
    the low-precision format's element, or a weight-only format's bits plus its 16-bit
    group scales (and zero points), e.g. 0.515625 for ``"w4a16"``."""
    if recipe is None:
        return act_bytes
    wo = weight_only_recipe(recipe)
    if wo is not None:
        return weight_only_weight_bytes(WEIGHT_DTYPES[wo[0]], wo[1], wo[2], act_bytes)
    return WEIGHT_BYTES[recipe_dtype(recipe)]


def linear_recipes(fn: str, linear_recipe: Any, phase: str, dtype: str
                   ) -> tuple[WeightOnly | None, str | None]:
    """``estimate``'s ``linear_recipe`` split into ``(weight-only recipe, float8 /
    low-precision recipe)`` (at most one set, both None for bf16 GEMMs): a weight-only recipe
    is for inference with bf16 / fp16 activations, any other must be a float8 recipe
    (``roofline.float8.recipes.check_recipe``); an ArgumentValueError naming
    ``linear_recipe`` otherwise."""
    wo = weight_only_recipe(linear_recipe) if linear_recipe is not None else None
    f8_recipe = None if wo is not None else linear_recipe  # float8 / low-precision GEMMs
    if f8_recipe is not None:
        check_float8_recipe(fn, f8_recipe, "linear_recipe")
    elif wo is not None and (phase == "train" or dtype not in ("bf16", "fp16")):
        raise ArgumentValueError(fn, "linear_recipe", f"{linear_recipe!r} (weight-only) is for "
                                 f"inference with bf16 / fp16 activations, got phase={phase!r}, "
                                 f"dtype={dtype!r}")
    return wo, f8_recipe


def table_peak(hw: Any, dtype: str, recipe: str | None, weight_bytes: float) -> float:
    """The dense peak FLOP/s an estimate's ``mfu`` divides by: ``fp32`` / ``bf16`` by
    ``dtype`` without a low-precision ``recipe``, ``fp4`` for sub-byte weights, else ``fp8``;
    NaN where the part lists no such peak."""
    cls = ("fp32" if dtype == "fp32" else "bf16") if recipe is None else (
        "fp4" if weight_bytes < 1 else "fp8")
    return float(hw.peak_flops_per_s(cls)) if getattr(hw, f"{cls}_flops_per_s") else float("nan")
