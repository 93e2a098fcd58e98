"""Datatype names users type, mapped to the core's formats."""

from __future__ import annotations

from typing import Any

from . import _core
from ._checks import one_of

_D = _core.DType

#: Accepted spellings (lower case) -> core format.
DTYPES: dict[str, Any] = {
    "fp64": _D.fp64, "float64": _D.fp64, "double": _D.fp64,
    "fp32": _D.fp32, "float32": _D.fp32, "float": _D.fp32,
    "tf32": _D.tf32,
    "bf16": _D.bf16, "bfloat16": _D.bf16,
    "fp16": _D.fp16, "float16": _D.fp16, "half": _D.fp16,
    "fp8": _D.fp8_e4m3, "e4m3": _D.fp8_e4m3, "fp8_e4m3": _D.fp8_e4m3,
    "float8_e4m3fn": _D.fp8_e4m3, "float8_e4m3fnuz": _D.fp8_e4m3,
    "e5m2": _D.fp8_e5m2, "fp8_e5m2": _D.fp8_e5m2, "float8_e5m2": _D.fp8_e5m2,
    "int8": _D.int8, "int32": _D.int32,
    "fp4": _D.fp4_e2m1, "e2m1": _D.fp4_e2m1, "fp4_e2m1": _D.fp4_e2m1,
    "float4_e2m1fn_x2": _D.fp4_e2m1,
    "mxfp8": _D.mxfp8, "mxfp4": _D.mxfp4, "nvfp4": _D.nvfp4,
    "fp8_block_1x128": _D.fp8_block_1x128, "fp8_block_128x128": _D.fp8_block_128x128,
}

#: Default output format of a GEMM per input format.
_DEFAULT_OUT = {
    _D.fp64: _D.fp64, _D.fp32: _D.fp32, _D.tf32: _D.fp32, _D.bf16: _D.bf16, _D.fp16: _D.fp16,
    _D.int8: _D.int32, _D.int32: _D.int32,
}


def dtype(fn: str, value: Any, name: str = "dtype") -> Any:
    """Resolve a dtype name (or a torch dtype, matched by its name) to a core format."""
    if value is not None and not isinstance(value, str) and type(value).__name__ == "dtype":
        value = str(value).removeprefix("torch.")
    return one_of(fn, name, value, DTYPES)


def default_out(core_dtype: Any) -> Any:
    """bf16 output for low-precision inputs, int32 for int8, else the input format."""
    return _DEFAULT_OUT.get(core_dtype, _D.bf16)


def label(core_dtype: Any) -> str:
    """Short display name of a core format."""
    return str(core_dtype.name)
