"""Plain-language advice for an op class that loses time against the model."""

from __future__ import annotations

__all__ = ["describe", "hint"]

_BY_OP = {
    "aten::cat": ("cat copies", "if this is a KV cache concatenated every step (HF "
                  "DynamicCache), a static / preallocated cache removes them"),
    "aten::copy_": ("layout copies", "keep tensors in the layout the next op wants (fewer "
                    ".contiguous() / transposes), or let torch.compile fuse the copies"),
    "aten::contiguous": ("layout copies", "avoid the .contiguous() or fuse it (torch.compile)"),
    "aten::clone": ("clones", "avoid the copy or fuse it (torch.compile)"),
    "aten::fill_": ("fills", "zero-fills (e.g. select/slice backward) fuse away under "
                    "torch.compile"),
    "aten::add_": ("in-place adds", "gradient accumulation and residual adds: fuse them "
                   "(torch.compile, fused optimizers)"),
}

_BY_KIND = {
    "gemm": ("GEMMs", "check the shapes (multiples of 128 for M, N, K fill the tiles) and "
             "wave quantization over the SMs; skinny GEMMs are bound by weight traffic"),
    "attention": ("attention", "check which SDPA backend ran, head_dim and the sequence "
                  "lengths"),
    "triton": ("Inductor kernels", "check the generated kernels' configs (max-autotune) and "
               "what was fused"),
    "norm": ("norms / softmax", "a fused kernel (backend 'fused': Apex, Liger, "
             "torch.compile) reads each row once"),
    "reduction": ("reductions", "fuse them into the producer (bias gradient into the GEMM "
                  "epilogue, torch.compile)"),
    "copy": ("copies", "avoid materialized copies or fuse them (torch.compile)"),
    "elementwise": ("unfused elementwise kernels", "fuse them into their neighbours "
                    "(torch.compile, fused epilogues)"),
    "memset": ("memsets", "workspace zeroing before GEMMs and reductions: launch cost; "
               "CUDA graphs hide it"),
    "memcpy": ("device copies", "avoid materializing copies"),
    "collective": ("collectives", "overlap them with compute or change the parallel layout"),
    "unknown": ("unclassified kernels", "look at the kernel names"),
}


def describe(op: str, kind: str) -> str:
    """A short name for what an op / class is (``"cat copies"``)."""
    if op in _BY_OP:
        return _BY_OP[op][0]
    return _BY_KIND.get(kind, _BY_KIND["unknown"])[0]


def hint(op: str, kind: str, bound: str = "") -> str:
    """What removes the loss, in plain words."""
    if bound == "overhead" and kind not in ("memset",):
        return "tiny kernels bound by launch latency: fuse them or capture a CUDA graph"
    if op in _BY_OP:
        return _BY_OP[op][1]
    return _BY_KIND.get(kind, _BY_KIND["unknown"])[1]
