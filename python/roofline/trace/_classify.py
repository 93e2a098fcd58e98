"""Kernel classes: what kind of work a GPU kernel does, from its name (and its op's name).

Classes: ``gemm``, ``attention``, ``triton`` (Inductor-generated, fused), ``norm`` (norms,
softmax, cross entropy), ``reduction``, ``copy`` (copies, cat, index/gather/scatter),
``elementwise``, ``memset``, ``memcpy``, ``collective`` (NCCL), ``unknown``.
"""

from __future__ import annotations

import re

__all__ = ["KINDS", "classify", "op_kind"]

KINDS = ("gemm", "attention", "triton", "norm", "reduction", "copy", "elementwise", "memset",
         "memcpy", "collective", "unknown")

# First match wins: attention before GEMM (cutlass fmha), copy before elementwise
# (direct_copy_kernel runs inside elementwise_kernel<...>).
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("collective", re.compile(r"^nccl|nccl(Dev)?Kernel", re.I)),
    ("attention", re.compile(
        r"fmha|flash_fwd|flash_bwd|flash::|_sdpa_|sdpa_|cudnn::fusion|unpack_cudnn|"
        r"attention|flash_(f|b)prop", re.I)),
    ("gemm", re.compile(
        r"^nvjet|xmma|gemm|cutlass|cublas|^sm\d\d_|^ampere_|^volta_|^turing_|"
        r"^triton_tem_|Kernel2$|splitKreduce", re.I)),
    ("triton", re.compile(r"^triton_", re.I)),
    ("norm", re.compile(
        r"layer_?norm|rms_?norm|GammaBeta|softmax|nll_loss|cross_entropy|batch_?norm", re.I)),
    ("copy", re.compile(
        r"CatArray|direct_copy|copy_kernel|\bcat\b|index|gather|scatter|transpose|permute|"
        r"embedding", re.I)),
    ("reduction", re.compile(r"reduce_kernel|reduction|Reduce", re.I)),
    ("elementwise", re.compile(
        r"elementwise|vectorized|unrolled|Functor|dropout|fill|masked_scale|philox|"
        r"distribution", re.I)),
)

_OP_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("gemm", re.compile(r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|addmv|mv)$")),
    ("attention", re.compile(r"attention|flash|_efficient_attention")),
    ("norm", re.compile(r"norm|softmax|nll_loss|cross_entropy")),
    ("copy", re.compile(r"^aten::(cat|stack|copy_|_to_copy|clone|contiguous|index.*|gather|"
                        r"scatter.*|embedding.*)$")),
    ("reduction", re.compile(r"^aten::(sum|mean|amax|amin|max|min|norm|var|std|argmax)$")),
    ("collective", re.compile(r"^(nccl:|c10d::|record_param_comms)")),
)


def classify(name: str, category: str = "kernel") -> str:
    """The class of one GPU event from its name and trace category."""
    if category == "gpu_memset":
        return "memset"
    if category == "gpu_memcpy":
        return "memcpy"
    for kind, pattern in _RULES:
        if pattern.search(name):
            return kind
    return "unknown"


def op_kind(op: str) -> str:
    """The class an aten op's kernels most likely belong to (used when the name is unknown)."""
    for kind, pattern in _OP_RULES:
        if pattern.search(op):
            return kind
    return "unknown"
