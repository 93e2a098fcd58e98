"""Numeric drop-ins for torchao's ``torchao/testing/training/roofline_utils.py``.

Same function names, argument names and order as torchao 0.18.0, but numeric: dimensions are
ints or numpy arrays (broadcast), results are floats or arrays, and no sympy or torch import
is needed. The numbers come from torchao's own GPU table (``rl.hardware(name,
table="torchao")``) and torchao's constants and byte conventions, so they equal torchao's to
rounding. Where torchao fails, these functions fail the same way: ``KeyError`` for a spec
key the entry lacks (the RTX 5090 entry has no achievable fractions; H100 and MI300X have no
``fp4_peak_tops``), ``ValueError`` for an unknown GPU name or inference recipe (the inference
overhead only knows the spelling ``"mxfp4"``), ``AssertionError`` for unsupported recipes.

Examples
--------
>>> from roofline.compat import torchao as rt
>>> t = rt.get_gemm_time_sympy(4096, 4096, 4096, "bf16", None, None, "NVIDIA H100")
>>> round(t * 1e6, 1)  # 3 GEMMs of 2 * 4096**3 FLOP at 0.78 * 989 TFLOP/s, in µs
534.5
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from .._checks import broadcast, positive_int_array
from .._params.threads import get_num_threads
from ..hardware import Hardware, UnknownHardwareError, hardware, list_hardware

BYTES_PER_EL_FLOAT4 = 0.5
BYTES_PER_EL_FLOAT8 = 1
BYTES_PER_EL_BF16 = 2
BYTES_PER_EL_FLOAT32 = 4
BLOCKWISE_FP8_BLOCK_SIZE = 128
KERNEL_LAUNCH_OVERHEAD_SEC = 0.002 * 0.001

_FLOAT8_TRAINING = ("tensorwise", "rowwise", "rowwise_with_gw_hp")
_MX_TRAINING = ("mxfp8_emulated", "mxfp8_cublas", "mxfp8_cublas_rceil", "mxfp4_cutlass",
                "mxfp8_32x32_flexible_gemm_layout", "mxfp8_32x32_weight")
#: Recipes whose torchao cast model ignores ``tensor_role`` (fusion applies to any role).
_ROLE_FREE = ("mxfp8_emulated", "mxfp8_cublas", "mxfp8_cublas_rceil", "mxfp4_cutlass",
              "mxfp8_32x32_flexible_gemm_layout")
_PEAK_KEYS = {"bf16": "bf16_peak_tops", "fp8": "fp8_peak_tops", "fp4": "fp4_peak_tops"}


class UnrecognizedGPUError(UnknownHardwareError, ValueError):
    """A GPU name torchao's table does not know: a ``ValueError`` as in torchao, and a
    ``KeyError`` (:class:`~roofline.hardware.UnknownHardwareError`) as elsewhere here."""


def _specs_dict(hw: Hardware) -> dict[str, float]:
    d: dict[str, float] = {"bf16_peak_tops": hw.bf16_flops_per_s or 0.0}
    for key, attr in (("fp8_peak_tops", "fp8_flops_per_s"), ("fp4_peak_tops", "fp4_flops_per_s")):
        if getattr(hw, attr):
            d[key] = getattr(hw, attr)
    d["peak_mem_bw_bytes_sec"] = hw.mem_bytes_per_s
    if hw.achievable_flops_fraction is not None:
        d["pct_achievable_gemm_tops"] = hw.achievable_flops_fraction
    if hw.achievable_mem_fraction is not None:
        d["pct_achievable_mem_bw"] = hw.achievable_mem_fraction
    return d


#: torchao's ``gpu_name_to_specs`` (a copy, filled at import; editing it changes nothing).
gpu_name_to_specs: dict[str, dict[str, float]] = {
    name: _specs_dict(hardware(name, table="torchao")) for name in list_hardware(table="torchao")
}


def _table() -> dict[str, dict[str, float]]:
    return gpu_name_to_specs


def get_roofline_gpu_name(gpu_name: str | None = None) -> str:
    """torchao's lookup: exact key, else the first key ``gpu_name`` starts with.

    ``None`` detects device 0 (``torch.cuda.get_device_name(0)``) as torchao does; without a
    GPU it falls back to ``rl.set_default_hardware`` / ``ROOFLINE_HARDWARE`` where torchao
    would fail. An unknown name raises :class:`UnrecognizedGPUError` (a ``ValueError``).
    """
    try:
        return hardware(gpu_name, table="torchao").name
    except UnknownHardwareError as exc:
        raise UnrecognizedGPUError(
            f"Unrecognized GPU {gpu_name!r}. Known GPUs: {list(gpu_name_to_specs)} ({exc})"
        ) from None


def get_specs(gpu_name: str | None = None) -> dict[str, float]:
    """torchao's spec dict for ``gpu_name`` (``bf16_peak_tops``, ``peak_mem_bw_bytes_sec``…)."""
    return dict(_table()[get_roofline_gpu_name(gpu_name)])


def _core_from_specs(specs: dict[str, Any], gemm_kind: str | None = None) -> tuple[Any, Any]:
    """Core hardware and efficiency from a torchao spec dict.

    Keys are read in torchao's order, so a missing one raises the same ``KeyError``: for a
    GEMM (``gemm_kind`` given) the dtype's ``*_peak_tops``, then ``pct_achievable_gemm_tops``,
    then the memory keys; for memory-only functions only ``peak_mem_bw_bytes_sec`` and
    ``pct_achievable_mem_bw`` (the compute fraction is then unused).
    """
    if not isinstance(specs, dict):
        raise TypeError(f"specs must be a dict from get_specs(), got {type(specs).__name__}")
    if gemm_kind is not None:
        _ = specs[_PEAK_KEYS[gemm_kind]]  # KeyError('fp4_peak_tops') as in torchao
        compute_fraction = float(specs["pct_achievable_gemm_tops"])
    else:
        compute_fraction = float(specs.get("pct_achievable_gemm_tops", 1.0))
    mem = float(specs["peak_mem_bw_bytes_sec"])
    mem_fraction = float(specs["pct_achievable_mem_bw"])
    peaks = [0.0, 0.0, 0.0, float(specs.get("bf16_peak_tops", 0.0)),
             float(specs.get("fp8_peak_tops", 0.0)), 0.0, float(specs.get("fp4_peak_tops", 0.0))]
    chw = _core.Hardware(peaks, mem)
    ceff = _core.Efficiency(compute_fraction, mem_fraction, KERNEL_LAUNCH_OVERHEAD_SEC, True)
    return chw, ceff


def _dims(fn: str, **dims: Any) -> tuple[list[np.ndarray], tuple[int, ...]]:
    for name, v in dims.items():
        if type(v).__module__.startswith("sympy"):
            raise TypeError(
                f"{fn}: {name} is a sympy expression; this module is numeric (pass ints or "
                "numpy arrays), use torchao itself for symbolic expressions"
            )
    return broadcast(fn, **{k: positive_int_array(fn, k, v) for k, v in dims.items()})


def _out(a: np.ndarray, shape: tuple[int, ...]) -> Any:
    a = np.asarray(a).reshape(shape)
    return float(a) if a.ndim == 0 else a


def _dtype_kind(dtype: Any) -> str:
    name = str(dtype).removeprefix("torch.").lower()
    if name in ("bfloat16", "bf16"):
        return "bf16"
    if name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "fp8", "e4m3", "e5m2"):
        return "fp8"
    if name in ("float4_e2m1fn_x2", "fp4"):
        return "fp4"
    raise AssertionError(f"unsupported dtype: {dtype}")


def _recipe(float8_recipe_name: str | None, mx_recipe_name: str | None) -> Any:
    """torchao's dispatch: a float8 recipe name if it is one, else the MX recipe name."""
    if float8_recipe_name in _FLOAT8_TRAINING:
        return getattr(_core.Recipe, float8_recipe_name)
    if mx_recipe_name not in _MX_TRAINING:
        raise AssertionError(f"unsupported {mx_recipe_name=}")
    return getattr(_core.Recipe, mx_recipe_name)


def _gemm_formats(kind: str, mx_recipe_name: str | None) -> Any:
    if mx_recipe_name is None:
        return {"bf16": _core.DType.bf16, "fp8": _core.DType.fp8_e4m3,
                "fp4": _core.DType.fp4_e2m1}[kind]
    if not mx_recipe_name.startswith(("mxfp8", "mxfp4", "nvfp4")):
        raise AssertionError(f"Unsupported recipe {mx_recipe_name}")
    block32 = mx_recipe_name.startswith("mx")
    if kind == "fp8" and block32:
        return _core.DType.mxfp8
    if kind == "fp4":
        return _core.DType.mxfp4 if block32 else _core.DType.nvfp4
    raise AssertionError("unsupported")


def get_individual_gemm_time_sympy(M: Any, K: Any, N: Any, dtype: Any,
                                   mx_recipe_name: str | None,
                                   gpu_name: str | None = None) -> Any:
    """Time of one GEMM: max(compute at 78 %, memory at 92 %, 2 µs), torchao's formula."""
    (m, k, n), shape = _dims("get_individual_gemm_time_sympy", M=M, K=K, N=N)
    kind = _dtype_kind(dtype)
    chw, ceff = _core_from_specs(get_specs(gpu_name), kind)
    fmt = _gemm_formats(kind, mx_recipe_name)
    cols = _core.gemm_sweep(m, k, n, np.ones_like(m), fmt, fmt, _core.DType.bf16, False, chw,
                            ceff, get_num_threads())
    return _out(cols[0], shape)


def get_gemm_time_sympy(M: Any, K: Any, N: Any, dtype: Any, float8_recipe_name: str | None,
                        mx_recipe_name: str | None, gpu_name: str | None) -> Any:
    """Output + grad_input + grad_weight GEMM times of a linear (grad_weight in bf16 for
    ``rowwise_with_gw_hp``)."""
    gw_dtype = "bf16" if float8_recipe_name == "rowwise_with_gw_hp" else dtype
    return (
        get_individual_gemm_time_sympy(M, K, N, dtype, mx_recipe_name, gpu_name)
        + get_individual_gemm_time_sympy(M, N, K, dtype, mx_recipe_name, gpu_name)
        + get_individual_gemm_time_sympy(K, M, N, gw_dtype, mx_recipe_name, gpu_name)
    )


def get_tensor_memory_traffic_ovhd_s(specs: dict[str, Any], dim0: Any, dim1: Any,
                                     tensor_role: str, float8_recipe_name: str | None,
                                     mx_recipe_name: str | None,
                                     fuse_with_prev: bool = False) -> list[Any]:
    """Per-kernel times of casting one operand (input, weight or grad_output) in fwd+bwd."""
    if tensor_role not in ("input", "weight", "grad_output"):
        raise AssertionError("unsupported")
    recipe = _recipe(float8_recipe_name, mx_recipe_name)
    # For these recipes torchao's formula does not look at the role, so fuse_with_prev also
    # applies to a weight; the core never fuses a weight's read (torchao's linear never asks
    # it to), and its activation model is torchao's role-free formula.
    role_free = float8_recipe_name not in _FLOAT8_TRAINING and mx_recipe_name in _ROLE_FREE
    role = getattr(_core.TensorRole, "input" if role_free else tensor_role)
    return _cast_kernels("get_tensor_memory_traffic_ovhd_s", specs, dim0, dim1, role, recipe,
                         _core.LinearMode.training, fuse_with_prev)


def _cast_kernels(fn: str, specs: dict[str, Any], dim0: Any, dim1: Any, role: Any, recipe: Any,
                  mode: Any, fuse: bool) -> list[Any]:
    (d0, d1), shape = _dims(fn, dim0=dim0, dim1=dim1)
    chw, ceff = _core_from_specs(specs)
    per_point = [_core.cast_kernel_times(a, b, role, recipe, mode, bool(fuse), chw, ceff)
                 for a, b in zip(d0, d1, strict=True)]
    return [_out(np.array([p[i] for p in per_point]), shape) for i in range(len(per_point[0]))]


def _linear(
    fn: str, M: Any, K: Any, N: Any, recipe: Any, mode: Any, fuse: bool, gpu_name: str | None,
    gemm_kind: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    (m, k, n), shape = _dims(fn, M=M, K=K, N=N)
    chw, ceff = _core_from_specs(get_specs(gpu_name), gemm_kind)
    try:
        bf16, lowp, cast = _core.float8_linear_sweep(m, k, n, recipe, mode, bool(fuse), chw, ceff,
                                                     get_num_threads())
    except ValueError as exc:
        raise ValueError(f"{fn}: {exc}") from None
    return bf16, lowp, cast, shape


def get_float8_mem_sympy(M: Any, K: Any, N: Any, float8_recipe_name: str | None,
                         mx_recipe_name: str | None, enable_fusion_modeling: bool,
                         gpu_name: str | None = None) -> Any:
    """Total cast overhead of a training linear (input, weight and grad_output casts)."""
    recipe = _recipe(float8_recipe_name, mx_recipe_name)
    *_, cast, shape = _linear("get_float8_mem_sympy", M, K, N, recipe,
                              _core.LinearMode.training, enable_fusion_modeling, gpu_name)
    return _out(cast, shape)


def get_blockwise_mem_time_sympy(bytes_rw: Any, gpu_name: str | None = None) -> Any:
    """max(bytes / (bw · pct), 2 µs) for one memory-bound kernel."""
    arr = np.asarray(bytes_rw, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"get_blockwise_mem_time_sympy: bytes_rw must be finite and >= 0, "
                         f"got {bytes_rw!r}")
    flat = np.ascontiguousarray(arr).ravel()
    chw, ceff = _core_from_specs(get_specs(gpu_name))
    cols = _core.cost_sweep(np.zeros_like(flat), flat, np.zeros_like(flat), _core.PeakClass.bf16,
                            1.0, chw, ceff, get_num_threads())
    return _out(cols[0], arr.shape)


def get_blockwise_gemm_time_sympy(M: Any, K: Any, N: Any, gpu_name: str | None = None) -> Any:
    """The three fp8 GEMMs of a blockwise linear (block scales ignored, as in torchao)."""
    _, lowp, _, shape = _linear("get_blockwise_gemm_time_sympy", M, K, N, _core.Recipe.blockwise,
                                _core.LinearMode.training, False, gpu_name, "fp8")
    return _out(lowp, shape)


def get_blockwise_quant_ovhd_s(numel: Any, scale_numel: Any, gpu_name: str | None = None,
                               fuse_read: bool = False) -> Any:
    """One blockwise quantization kernel: bf16 read (unless fused), fp8 + fp32-scale writes."""
    n = np.asarray(numel, dtype=np.float64)
    s = np.asarray(scale_numel, dtype=np.float64)
    read = 0.0 if fuse_read else BYTES_PER_EL_BF16 * n
    return get_blockwise_mem_time_sympy(read + BYTES_PER_EL_FLOAT8 * n + BYTES_PER_EL_FLOAT32 * s,
                                        gpu_name)


def get_blockwise_float8_mem_sympy(M: Any, K: Any, N: Any, enable_fusion_modeling: bool,
                                   gpu_name: str | None = None,
                                   block_size: int = BLOCKWISE_FP8_BLOCK_SIZE) -> Any:
    """The six quantization kernels of a blockwise linear's forward and backward."""
    if block_size != BLOCKWISE_FP8_BLOCK_SIZE:
        raise ValueError(f"get_blockwise_float8_mem_sympy: only block_size=128 is modeled, "
                         f"got {block_size!r}")
    *_, cast, shape = _linear("get_blockwise_float8_mem_sympy", M, K, N, _core.Recipe.blockwise,
                              _core.LinearMode.training, enable_fusion_modeling, gpu_name)
    return _out(cast, shape)


_INFERENCE_RECIPES = {"tensorwise", "rowwise", "mxfp4", "nvfp4", "nvfp4_static",
                      "nvfp4_no_global_scale"}


def _inference_recipe(recipe_name: str | None) -> Any:
    if recipe_name and (recipe_name in _INFERENCE_RECIPES or recipe_name.startswith("mxfp8")):
        return getattr(_core.Recipe, recipe_name, _core.Recipe.mxfp8_cublas)
    raise ValueError(
        f"Unknown recipe name: {recipe_name}. "
        "Allowed recipes: {'tensorwise', 'rowwise', 'mxfp8*', 'nvfp4*', 'mxfp4*'}"
    )


def get_inference_tensor_memory_traffic_ovhd_s(specs: dict[str, Any], dim0: Any, dim1: Any,
                                               tensor_role: str, recipe_name: str | None,
                                               fuse_with_prev: bool = False) -> list[Any]:
    """Per-kernel times of quantizing the input activation for inference."""
    if fuse_with_prev is not False:
        raise AssertionError("unsupported")
    if tensor_role != "input":
        raise AssertionError("inference only quantizes input activations")
    return _cast_kernels("get_inference_tensor_memory_traffic_ovhd_s", specs, dim0, dim1,
                         _core.TensorRole.input, _inference_recipe(recipe_name),
                         _core.LinearMode.inference, False)


def get_inference_float8_mem_sympy(M: Any, K: Any, N: Any, recipe_name: str | None,
                                   gpu_name: str | None = None) -> Any:
    """Total activation-quantization overhead of an inference linear."""
    *_, cast, shape = _linear("get_inference_float8_mem_sympy", M, K, N,
                              _inference_recipe(recipe_name), _core.LinearMode.inference, False,
                              gpu_name)
    return _out(cast, shape)


def get_inference_bf16_activation_mem_sympy(M: Any, K: Any, N: Any,
                                            gpu_name: str | None = None) -> Any:
    """A bf16 elementwise pass over the M x K activation (read + write), floored at 2 µs."""
    (m, k, _), shape = _dims("get_inference_bf16_activation_mem_sympy", M=M, K=K, N=N)
    return _out(np.asarray(get_blockwise_mem_time_sympy(BYTES_PER_EL_BF16 * m * k * 2, gpu_name)),
                shape)


def get_inference_gemm_time_sympy(M: Any, K: Any, N: Any, dtype: Any, recipe_name: str | None,
                                  gpu_name: str | None = None) -> Any:
    """The forward GEMM of an inference linear."""
    return get_individual_gemm_time_sympy(M, K, N, dtype, recipe_name, gpu_name)
