"""Row ops: RMSNorm (forward, backward), LayerNorm, softmax, cross-entropy; eager aten kernels
and the same under torch.compile (Inductor)."""

from __future__ import annotations

from typing import Any

from ._cases import Ctx, Family, Measure, simple
from ._shapes import by_suite

__all__ = ["FAMILIES"]


def _rc(shapes: list[tuple[int, int]], size: str = "cols") -> list[dict[str, Any]]:
    return [{"rows": r, size: c} for r, c in shapes]


# Tiny (launch-bound), L2-resident, and large transfers; few rows with wide columns too.
_GPU_QUICK = [(1024, 1024), (4096, 4096), (16384, 8192), (32768, 1024), (64, 65536)]
_GPU_FULL = [(r, c) for r in (256, 1024, 4096, 16384, 65536) for c in (1024, 4096, 8192)] + [
    (64, 65536), (128, 262144), (32768, 256)]
_CPU_QUICK = [(64, 512), (512, 1024), (2048, 2048)]
_CPU_FULL = [(r, c) for r in (64, 512, 2048) for c in (256, 1024, 4096)]
_SHAPES = by_suite(_rc(_CPU_QUICK), _rc(_CPU_FULL), _rc(_GPU_QUICK), _rc(_GPU_FULL))
_VOCAB = by_suite(_rc([(64, 4096), (256, 32000)], "vocab"),
                  _rc([(64, 4096), (256, 32000), (1024, 32000)], "vocab"),
                  _rc([(1024, 32000), (4096, 128256)], "vocab"),
                  _rc([(r, v) for r in (1024, 4096, 8192) for v in (32000, 128256)], "vocab"))


def _bwd(shapes: Any) -> Any:
    def with_backward(device: str, suite: str) -> list[dict[str, Any]]:
        return [{**a, "backward": True} for a in shapes(device, suite)]

    return with_backward


def _op(name: str, compiled: bool) -> Any:
    def build(ctx: Ctx, a: dict[str, Any]) -> Measure:
        import torch.nn.functional as F

        torch = ctx.torch
        rows = a["rows"]
        cols = int(a["cols"] if "cols" in a else a["vocab"])
        x = ctx.randn(rows, cols, requires_grad=bool(a.get("backward")))
        if name == "rmsnorm":
            w = ctx.randn(cols)

            def f(x: Any) -> Any:
                return F.rms_norm(x, (cols,), w)
        elif name == "layernorm":
            w, b = ctx.randn(cols), ctx.randn(cols)

            def f(x: Any) -> Any:
                return F.layer_norm(x, (cols,), w, b)
        elif name == "softmax":
            def f(x: Any) -> Any:
                return torch.softmax(x, dim=-1)
        else:  # cross_entropy: log_softmax + nll_loss, mean reduction
            labels = torch.randint(0, cols, (rows,), device=ctx.device)

            def f(x: Any) -> Any:
                return F.cross_entropy(x, labels)

        g = ctx.compiled(f) if compiled else f
        if a.get("backward"):
            y = g(x)
            grad = ctx.randn(*y.shape)

            def fn() -> Any:  # input gradient only, fresh each call (no accumulation)
                return torch.autograd.grad(y, (x,), grad, retain_graph=True)
        else:
            def fn() -> Any:
                return g(x)

        fn()
        return simple(fn)

    return build


def _families() -> list[Family]:
    out = []
    what = {"rmsnorm": "F.rms_norm", "layernorm": "F.layer_norm", "softmax": "torch.softmax",
            "cross_entropy": "F.cross_entropy (log_softmax + nll_loss, mean)"}
    for compiled in (False, True):
        suffix, backend = ("_compiled", "compiled") if compiled else ("", "eager")
        how = "torch.compile'd" if compiled else "eager"
        for name, fn_name in what.items():
            shapes = _VOCAB if name == "cross_entropy" else _SHAPES
            out.append(Family(f"{name}{suffix}", name, f"{how} {fn_name}, forward", shapes,
                              _op(name, compiled), backend=backend, cpu_quick=not compiled))
        if not compiled:
            out.append(Family("rmsnorm_bwd", "rmsnorm",
                              "eager F.rms_norm, autograd backward (input grad only)",
                              _bwd(_SHAPES), _op("rmsnorm", False), backend="eager"))
    return out


FAMILIES = _families()
