"""Checks of the attention kernels serving engines and FlashAttention-3 run (not SDPA's).

``backend="fa3"`` (FlashAttention-3), ``"flashinfer"`` (FlashInfer's paged-KV kernels) and
``"flashmla"`` (DeepSeek's FlashMLA decode) exist on some architectures, formats and head dims
only; :func:`check` raises where the kernel does not exist, naming the argument and its value.
The formulas stay in the core (``fa3_tile`` and the attention model); this module holds names
and rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dtypes import label

__all__ = ["ENGINE_BACKENDS", "PAGED_BACKENDS", "check", "check_page_tokens", "core_name"]

#: Attention kernels of FlashAttention-3 and serving engines that ``backend=`` accepts.
ENGINE_BACKENDS: tuple[str, ...] = ("fa3", "flashinfer", "flashmla")

#: Backends that read a paged KV cache (``page_tokens=``).
PAGED_BACKENDS = frozenset(ENGINE_BACKENDS)

#: Where each kernel is built: FlashAttention-3 and FlashMLA (sm90 kernels) on Hopper only;
#: FlashInfer on every NVIDIA GPU from sm80 (its prefill runs FA3-style code on Hopper).
_ARCHES = {
    "fa3": ("hopper",),
    "flashinfer": ("ampere", "ada", "hopper", "blackwell", "blackwell_consumer"),
    "flashmla": ("hopper",),
}
_WHY = {
    "fa3": "FlashAttention-3 is built for sm90 (Hopper: H100, H200, H800, H20) only",
    "flashinfer": "FlashInfer ships CUDA kernels for NVIDIA sm80 and newer",
    "flashmla": "FlashMLA's kernels are sm90 (Hopper) kernels",
}
#: Formats each kernel takes for Q/K/V (fp8: FA3's e4m3 forward, FlashInfer's fp8 KV cache).
_FORMATS = {
    "fa3": ("bf16", "fp16", "fp8_e4m3"),
    "flashinfer": ("bf16", "fp16", "fp8_e4m3", "fp8_e5m2"),
    "flashmla": ("bf16", "fp16"),
}


def core_name(name: str) -> str:
    """The core backend of ``name``: FlashMLA is the standard model's MLA decode kernel (its
    decode fraction is set on FlashMLA's published headline), the others their own."""
    return "standard" if name == "flashmla" else name


def check(fn: str, name: str, hw: Any, dt: Any, dtype: Any, sizes: tuple[np.ndarray, ...],
          shared_kv: bool, backward: bool) -> None:
    """Raise ValueError where backend ``name`` does not exist for this call."""
    from .._params.architecture import architecture

    arch = architecture(hw)
    if arch not in _ARCHES[name]:
        raise ValueError(f"{fn}: backend={name!r} does not exist on {hw.name} ({arch}): "
                         f"{_WHY[name]}; pass backend='auto' or another backend")
    fmt = label(dt).lower().replace("float8_", "fp8_").replace("e4m3fn", "e4m3")
    if not any(fmt.startswith(f) for f in _FORMATS[name]):
        raise ValueError(f"{fn}: backend={name!r} takes dtype {', '.join(_FORMATS[name])}, "
                         f"got dtype={dtype!r}")
    d, dv = sizes[5], sizes[6]
    if backward and (name != "fa3" or fmt.startswith("fp8")):
        what = "fp8 backward" if name == "fa3" else "a backward pass"
        raise ValueError(f"{fn}: backend={name!r} has no {what} (inference kernel), got "
                         f"backward=True")
    if name == "flashmla":
        if not shared_kv or np.any(d != 576) or np.any(dv != 512):
            raise ValueError(f"{fn}: backend='flashmla' is MLA decode in the absorbed form: "
                             f"head_dim=576, v_head_dim=512, kv_heads=1, shared_kv=True, got "
                             f"head_dim={int(d.reshape(-1)[0])}, shared_kv={shared_kv}")
        return
    if shared_kv:
        raise ValueError(f"{fn}: backend={name!r} reads separate K and V, got shared_kv=True "
                         f"(MLA decode: backend='flashmla')")
    big = np.maximum(d, dv) > 256
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise ValueError(f"{fn}: backend={name!r} takes head dims up to 256, got "
                         f"head_dim={int(d.reshape(-1)[i])}, v_head_dim={int(dv.reshape(-1)[i])}")


def check_page_tokens(fn: str, page_tokens: Any, name: str) -> float:
    """``page_tokens`` as a float (0: contiguous cache); an error for a backend without pages."""
    if page_tokens is None:
        return 0.0
    if isinstance(page_tokens, bool) or not isinstance(page_tokens, (int, np.integer)) or \
            page_tokens <= 0:
        raise ValueError(f"{fn}: page_tokens must be a positive integer, got {page_tokens!r}")
    if name not in PAGED_BACKENDS:
        raise ValueError(f"{fn}: page_tokens needs a paged-KV kernel (backend='fa3', "
                         f"'flashinfer' or 'flashmla'); SDPA reads a contiguous cache, got "
                         f"backend={name!r}")
    return float(page_tokens)
