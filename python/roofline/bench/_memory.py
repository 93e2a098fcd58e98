"""Memory-bound families: eager elementwise ops and copies, compiled fp8 casts."""

from __future__ import annotations

from typing import Any

from ._cases import Ctx, Family, Measure, simple
from ._gemm import _fp8_requires
from ._shapes import by_suite

__all__ = ["FAMILIES"]

#: name -> (reads, writes) per element.
_KINDS = {"copy": (1, 1), "add": (2, 1), "gelu": (1, 1), "silu_mul": (2, 1)}


def _ew(sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    return [{"numel": n, "reads": r, "writes": w, "name": name}
            for name, (r, w) in _KINDS.items() for n in sizes]


_ELEMENTWISE = by_suite(_ew((4096, 2**18, 2**22)), _ew((4096, 2**16, 2**18, 2**20, 2**22, 2**24)),
                        _ew((4096, 2**20, 2**26, 2**28)),
                        _ew((4096, 2**14, 2**16, 2**18, 2**20, 2**22, 2**24, 2**26, 2**28, 2**30)))


def _elementwise(ctx: Ctx, a: dict[str, Any]) -> Measure:
    import torch.nn.functional as F

    n, name = a["numel"], a["name"]
    x, y = ctx.randn(n), ctx.randn(n)
    out = ctx.torch.empty_like(x)
    if name == "copy":
        def fn() -> Any:
            return out.copy_(x)
    elif name == "add":
        def fn() -> Any:
            return ctx.torch.add(x, y, out=out)
    elif name == "gelu":
        def fn() -> Any:
            return F.gelu(x)
    else:  # silu(x) * y: two eager kernels
        def fn() -> Any:
            return F.silu(x) * y
    return simple(fn)


def _rc(shapes: list[tuple[int, int]], granularity: str) -> list[dict[str, Any]]:
    return [{"rows": r, "cols": c, "granularity": granularity} for r, c in shapes]


_CAST_QUICK = [(1024, 1024), (4096, 4096), (16384, 8192)]
_CAST_FULL = [(r, c) for r in (1024, 4096, 8192, 16384) for c in (1024, 4096, 8192, 14336)]


def _cast(granularity: str) -> Any:
    def build(ctx: Ctx, a: dict[str, Any]) -> Measure:
        torch = ctx.torch
        fmax = float(torch.finfo(torch.float8_e4m3fn).max)
        x = ctx.randn(a["rows"], a["cols"], dtype="bf16")

        def cast(x: Any) -> Any:
            if granularity == "rowwise":
                amax = x.abs().amax(dim=-1, keepdim=True).float()
            else:
                amax = x.abs().max().float()
            scale = fmax / amax.clamp(min=1e-12)
            return (x.float() * scale).clamp(-fmax, fmax).to(torch.float8_e4m3fn), scale

        f = ctx.compiled(cast)
        f(x)
        return simple(lambda: f(x))

    return build


FAMILIES = [
    Family("elementwise", "elementwise",
           "eager copy_ / add / gelu / silu(x)*y (2 kernels), args.name says which",
           _ELEMENTWISE, _elementwise),
    Family("cast_fp8_tensorwise", "cast", "torch.compile'd amax + scale + cast bf16 -> e4m3",
           by_suite([], [], _rc(_CAST_QUICK, "tensorwise"), _rc(_CAST_FULL, "tensorwise")),
           _cast("tensorwise"), requires=_fp8_requires, act_dtype=False),
    Family("cast_fp8_rowwise", "cast", "torch.compile'd per-row amax + cast bf16 -> e4m3",
           by_suite([], [], _rc(_CAST_QUICK, "rowwise"), _rc(_CAST_FULL, "rowwise")),
           _cast("rowwise"), requires=_fp8_requires, act_dtype=False),
]
