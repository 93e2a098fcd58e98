"""GEMM families: cuBLAS F.linear (bf16, fp32, tf32), torch._scaled_mm fp8, grouped GEMMs."""

from __future__ import annotations

from typing import Any

from ._cases import Ctx, Family, Measure, Skip, simple
from ._shapes import by_suite
from ._timing import Timer

__all__ = ["FAMILIES"]


def _mkn(ms: list[int], kns: list[tuple[int, int]],
         extra: tuple[tuple[int, int, int], ...] = ()) -> list[dict[str, Any]]:
    out = [{"m": m, "k": k, "n": n} for k, n in kns for m in ms]
    return out + [{"m": m, "k": k, "n": n} for m, k, n in extra]


# Small M (memory-bound GEMV-like), waves (M around the tile count x SMs), the ridge point
# (M ~ a few hundred at 4096^2) and large compute-bound shapes; unaligned sizes too.
_GPU_QUICK = _mkn([1, 16, 64, 256, 1024, 4096, 16384], [(4096, 4096)],
                  ((8192, 8192, 8192), (8192, 4096, 14336), (4000, 4000, 4000)))
_GPU_FULL = _mkn([1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096,
                  8192, 16384], [(4096, 4096), (8192, 8192), (4096, 14336), (14336, 4096)],
                 ((4000, 4000, 4000), (1000, 4096, 4096), (4095, 4096, 4096),
                  (16384, 16384, 16384), (132 * 128, 4096, 4096), (133 * 128, 4096, 4096)))
_GPU_SLOW_QUICK = _mkn([16, 1024, 4096], [(4096, 4096)])
_GPU_SLOW_FULL = _mkn([1, 16, 128, 1024, 4096, 8192], [(4096, 4096), (8192, 8192)])
_CPU_QUICK = _mkn([1, 16, 128, 512], [(512, 512)])
_CPU_FULL = _mkn([1, 4, 16, 64, 128, 256, 512, 1024], [(512, 512), (1024, 1024)])
_CPU_BF16_QUICK = _mkn([1, 16, 128], [(256, 256)])
_CPU_BF16_FULL = _mkn([1, 16, 64, 256], [(256, 256), (512, 512)])


def _with(dtype: str, shapes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**a, "dtype": dtype} for a in shapes]


def _cuda_only(what: str) -> Any:
    def requires(ctx: Ctx) -> str | None:
        return None if ctx.device == "cuda" else f"{what} runs on CUDA GPUs only"

    return requires


def _fp8_requires(ctx: Ctx) -> str | None:
    if ctx.device != "cuda":
        return "fp8 needs a CUDA GPU with compute capability >= 8.9 (Ada, Hopper, Blackwell)"
    major, minor = ctx.torch.cuda.get_device_capability()
    if (major, minor) < (8, 9):
        return f"fp8 needs compute capability >= 8.9, this GPU has {major}.{minor}"
    if not hasattr(ctx.torch, "float8_e4m3fn"):
        return "this torch build has no float8_e4m3fn dtype"
    return None


def _linear(precision: str | None) -> Any:
    def build(ctx: Ctx, a: dict[str, Any]) -> Measure:
        import torch.nn.functional as F

        label = "fp32" if a["dtype"] == "tf32" else a["dtype"]
        x, w = ctx.randn(a["m"], a["k"], dtype=label), ctx.randn(a["n"], a["k"], dtype=label)

        def fn() -> Any:
            return F.linear(x, w)

        if precision is None:
            return simple(fn)
        torch = ctx.torch

        def measure(timer: Timer) -> dict[str, Any]:
            old = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision(precision)
            try:
                return {"measured": timer(fn)}
            finally:
                torch.set_float32_matmul_precision(old)

        return measure

    return build


def _fp8(ctx: Ctx, m: int, k: int) -> Any:
    return (ctx.randn(m, k, dtype="bf16")).to(ctx.torch.float8_e4m3fn)


def _scaled_mm(rowwise: bool) -> Any:
    def build(ctx: Ctx, a: dict[str, Any]) -> Measure:
        torch = ctx.torch
        m, k, n = a["m"], a["k"], a["n"]
        x, w = _fp8(ctx, m, k), _fp8(ctx, n, k)
        if rowwise:
            sa = torch.rand(m, 1, device="cuda") + 0.5
            sb = torch.rand(1, n, device="cuda") + 0.5
        else:
            sa = torch.tensor(1.1, device="cuda")
            sb = torch.tensor(0.9, device="cuda")

        def fn() -> Any:
            return torch._scaled_mm(x, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                    use_fast_accum=True)

        return simple(fn)

    return build


def _offsets(ctx: Ctx, counts: list[int]) -> Any:
    torch = ctx.torch
    return torch.tensor(counts, device=ctx.device, dtype=torch.int32).cumsum(0).to(torch.int32)


def _counts(a: dict[str, Any]) -> list[int]:
    return list(a["counts"]) if "counts" in a else [a["m_per_group"]] * a["groups"]


def _grouped(ctx: Ctx, a: dict[str, Any]) -> Measure:
    torch = ctx.torch
    if not hasattr(torch, "_grouped_mm"):
        raise Skip("this torch build has no torch._grouped_mm")
    counts = _counts(a)
    x = ctx.randn(sum(counts), a["k"], dtype=a["dtype"])
    w = ctx.randn(len(counts), a["n"], a["k"], dtype=a["dtype"])
    offs = _offsets(ctx, counts)

    def fn() -> Any:
        return torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)

    return simple(fn)


def _scaled_grouped(ctx: Ctx, a: dict[str, Any]) -> Measure:
    torch = ctx.torch
    if not hasattr(torch, "_scaled_grouped_mm"):
        raise Skip("this torch build has no torch._scaled_grouped_mm")
    counts = _counts(a)
    total, g = sum(counts), len(counts)
    x = _fp8(ctx, total, a["k"])
    w = ctx.randn(g, a["n"], a["k"], dtype="bf16").to(torch.float8_e4m3fn)
    sa = torch.rand(total, device="cuda") + 0.5
    sb = torch.rand(g, a["n"], device="cuda") + 0.5
    offs = _offsets(ctx, counts)

    def fn() -> Any:
        return torch._scaled_grouped_mm(x, w.transpose(-2, -1), sa, sb, offs=offs,
                                        out_dtype=torch.bfloat16, use_fast_accum=True)

    return simple(fn)


def _zipf_counts(experts: int, tokens: int, s: float = 1.1, align: int = 16) -> list[int]:
    """Token counts per expert, Zipf-skewed, each a positive multiple of ``align``."""
    weights = [1.0 / (i + 1) ** s for i in range(experts)]
    total = sum(weights)
    return [max(align, round(tokens * w / total / align) * align) for w in weights]


# MoE expert shapes (k, n): DeepSeek-V3 up/gate (7168 -> 4096 for 2 experts' halves), Mixtral.
_MOE = [(7168, 4096), (4096, 14336)]
_GROUPED_GPU_QUICK = [{"m_per_group": m, "k": k, "n": n, "groups": 8}
                      for k, n in _MOE[:1] for m in (16, 128, 1024)]
_GROUPED_GPU_FULL = [{"m_per_group": m, "k": k, "n": n, "groups": g}
                     for k, n in _MOE for g in (8, 32) for m in (16, 64, 128, 512, 1024, 2048)]
_GROUPED_CPU_QUICK = [{"m_per_group": m, "k": 256, "n": 256, "groups": 4} for m in (16, 64)]
_GROUPED_CPU_FULL = [{"m_per_group": m, "k": 512, "n": 256, "groups": g}
                     for g in (4, 8) for m in (16, 64, 128)]
_COUNTS_GPU = [{"k": 7168, "n": 4096, "counts": _zipf_counts(64, t)} for t in (8192, 32768)]
_COUNTS_CPU = [{"k": 256, "n": 256, "counts": _zipf_counts(8, 512)}]

FAMILIES = [
    Family("gemm_bf16", "gemm", "F.linear(x[m,k], w[n,k]) bf16 -> bf16",
           by_suite(_with("bf16", _CPU_BF16_QUICK), _with("bf16", _CPU_BF16_FULL),
                    _with("bf16", _GPU_QUICK), _with("bf16", _GPU_FULL)), _linear(None)),
    Family("gemm_fp32", "gemm", "F.linear fp32, TF32 off (float32 matmul precision 'highest')",
           by_suite(_with("fp32", _CPU_QUICK), _with("fp32", _CPU_FULL),
                    _with("fp32", _GPU_SLOW_QUICK), _with("fp32", _GPU_SLOW_FULL)),
           _linear("highest")),
    Family("gemm_tf32", "gemm", "F.linear fp32 with TF32 on (float32 matmul precision 'high')",
           by_suite([], [], _with("tf32", _GPU_SLOW_QUICK), _with("tf32", _GPU_SLOW_FULL)),
           _linear("high"), requires=_cuda_only("TF32 (a tensor-core mode)")),
    Family("gemm_fp8_tensorwise", "gemm",
           "torch._scaled_mm e4m3 x e4m3 -> bf16, tensorwise scales, fast accum",
           by_suite([], [], _with("fp8", _GPU_QUICK), _with("fp8", _GPU_FULL)),
           _scaled_mm(rowwise=False), requires=_fp8_requires),
    Family("gemm_fp8_rowwise", "gemm",
           "torch._scaled_mm e4m3 -> bf16, rowwise fp32 scales, fast accum",
           by_suite([], [], _with("fp8", _GPU_QUICK), _with("fp8", _GPU_FULL)),
           _scaled_mm(rowwise=True), requires=_fp8_requires),
    Family("grouped_gemm_bf16", "grouped_gemm", "torch._grouped_mm, uniform groups",
           by_suite(_with("bf16", _GROUPED_CPU_QUICK), _with("bf16", _GROUPED_CPU_FULL),
                    _with("bf16", _GROUPED_GPU_QUICK), _with("bf16", _GROUPED_GPU_FULL)),
           _grouped),
    Family("grouped_gemm_fp8", "grouped_gemm",
           "torch._scaled_grouped_mm e4m3 rowwise -> bf16, uniform groups",
           by_suite([], [], _with("fp8", _GROUPED_GPU_QUICK), _with("fp8", _GROUPED_GPU_FULL)),
           _scaled_grouped, requires=_fp8_requires),
    Family("grouped_gemm_counts", "grouped_gemm",
           "torch._grouped_mm, 64 experts with Zipf-skewed token counts (args.counts)",
           by_suite([], _with("bf16", _COUNTS_CPU), _with("bf16", _COUNTS_GPU[:1]),
                    _with("bf16", _COUNTS_GPU)), _grouped),
]
