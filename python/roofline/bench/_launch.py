"""Launch overhead: a chain of N tiny eager adds (wall per chain), and on a GPU the same
chain replayed as a CUDA graph (``graph_s``)."""

from __future__ import annotations

from typing import Any

from ._cases import Ctx, Family, Measure
from ._shapes import by_suite
from ._timing import Timer

__all__ = ["FAMILIES"]

_N = by_suite([{"kernels": n} for n in (1, 10, 100)], [{"kernels": n} for n in (1, 10, 100, 1000)],
              [{"kernels": n} for n in (1, 10, 100)],
              [{"kernels": n} for n in (1, 3, 10, 30, 100, 300, 1000)])


def _chain(ctx: Ctx, a: dict[str, Any]) -> Measure:
    torch = ctx.torch
    n = a["kernels"]
    x = ctx.randn(1, dtype="fp32")

    def chain() -> Any:
        for _ in range(n):
            x.add_(1e-6)
        return x

    graph = None
    if ctx.device == "cuda":
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            chain()  # warm-up outside capture
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            chain()

    def measure(timer: Timer) -> dict[str, Any]:
        out = {"measured": timer(chain, flush=False)}
        if graph is not None:
            out["graph_s"] = timer(graph.replay, flush=False)
        return out

    return measure


FAMILIES = [
    Family("launch_overhead", "launch",
           "eager chain of tiny adds: time per chain; graph_s = CUDA graph replay (GPU)",
           _N, _chain, act_dtype=False),
]
