"""Number formats of a transformer step: bytes per element of weights, activations and the KV
cache, and the GEMM format each float8 / low-precision linear recipe runs in."""

from __future__ import annotations

__all__ = ["DTYPES", "DTYPE_BYTES", "KV_BYTES", "WEIGHT_BYTES", "recipe_dtype"]

#: Low-precision GEMM input format of each linear recipe (for batched expert / absorbed GEMMs).
RECIPE_GEMM_DTYPE = {
    "tensorwise": "fp8", "rowwise": "fp8", "rowwise_with_gw_hp": "fp8",
    "blockwise": "fp8_block_1x128", "blockwise_1x128_128x128": "fp8_block_1x128",
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


def recipe_dtype(recipe: str) -> str:
    """GEMM input format of a linear recipe (batched expert / absorbed GEMMs, weights)."""
    return RECIPE_GEMM_DTYPE.get(recipe, "mxfp8" if recipe.startswith("mxfp8") else "fp8")

