"""torchao float8 inference (dynamic activation, per-row scales) of the Llama-3-8B linears at
batch 1-4096: eager, compiled, and compiled then replayed as a CUDA graph, beside bf16.

Run on the GPU machine: python3 benchmarks/gpu/float8_inference.py --out DIR

Each row (DIR/float8_inference.jsonl): ``m``, ``k``, ``n``, and per-call seconds from
``triton.testing.do_bench`` (median, L2 flushed) for ``bf16_eager``, ``bf16_compiled``,
``bf16_graph`` (the eager F.linear captured in a CUDA graph), ``fp8_eager`` (torchao's
quantized module, no compile), ``fp8_compiled`` and ``fp8_graph`` (the compiled quantized
call captured in a CUDA graph). ``speedup`` = bf16_compiled / fp8_compiled, the definition of
``gpu_float8_inference_speedup`` in data/measurements. Traces of the compiled fp8 call at a
few shapes go to DIR/traces.
"""

from __future__ import annotations

import copy
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, do_bench, script_parser, trace  # noqa: E402
from llama_programs import capture  # noqa: E402

SHAPES = {  # (k, n): Ms
    (4096, 14336): (1, 4, 16, 64, 256, 1024, 4096),
    (14336, 4096): (1, 4, 16, 64, 256, 1024, 4096),
    (4096, 4096): (1, 16, 256, 4096),
    (4096, 1024): (1, 16, 256, 4096),
}
TRACED = {(1, 4096, 14336), (1024, 4096, 14336), (16, 14336, 4096)}


def bench(fn: Callable[[], Any]) -> float:
    return do_bench(fn)


def one(out: Out, m: int, k: int, n: int, dev: str) -> None:
    from torchao.quantization import (
        Float8DynamicActivationFloat8WeightConfig,
        PerRow,
        quantize_,
    )

    torch.manual_seed(0)
    lin = torch.nn.Linear(k, n, bias=False, device=dev, dtype=torch.bfloat16)
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    q = copy.deepcopy(lin)
    quantize_(q, Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()))
    times: dict[str, float | None] = {}
    errors: dict[str, str] = {}
    with torch.no_grad():
        torch._dynamo.reset()
        cb = torch.compile(lin, dynamic=False)
        cq = torch.compile(q, dynamic=False)
        variants: dict[str, Callable[[], Callable[[], Any]]] = {
            "bf16_eager": lambda: (lambda: lin(x)),
            "bf16_compiled": lambda: (lambda: cb(x)),
            "bf16_graph": lambda: capture(lambda: lin(x)),
            "fp8_eager": lambda: (lambda: q(x)),
            "fp8_compiled": lambda: (lambda: cq(x)),
            "fp8_graph": lambda: capture(lambda: cq(x)),
        }
        for name, make in variants.items():
            try:
                times[name] = bench(make())
            except Exception as exc:  # noqa: BLE001
                times[name] = None
                errors[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
        tr = None
        if (m, k, n) in TRACED:
            tr = trace(lambda: cq(x), out.trace_path(f"fp8_infer_compiled_m{m}_k{k}_n{n}"),
                       steps=3)
    b, f = times.get("bf16_compiled"), times.get("fp8_compiled")
    out.row(name=f"float8_inference_m{m}_k{k}_n{n}", m=m, k=k, n=n, **times,
            speedup=(b / f) if b and f else None, errors=errors or None, trace=tr,
            config={"module": "nn.Linear(bias=False) bf16",
                    "float8": "torchao quantize_(Float8DynamicActivationFloat8WeightConfig("
                              "granularity=PerRow()))", "compile": "torch.compile(dynamic=False)",
                    "timer": "triton do_bench median, L2 flushed"})


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--only", default=None, metavar="K,N", help="one weight shape")
    ap.add_argument("--ms", default=None, metavar="M,M", help="only these batch sizes")
    ap.add_argument("--no-trace", action="store_true",
                    help="no profiler in the process (one leaves host-bound calls ~2x slower)")
    ap.add_argument("--name", default="float8_inference", help="output file stem")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    out = Out(args.out, args.name)
    if args.no_trace:
        TRACED.clear()
    shapes = {(256, 512): (1, 16)} if args.small else SHAPES
    if args.only:
        k0, n0 = (int(v) for v in args.only.split(","))
        shapes = {(k0, n0): shapes[(k0, n0)]}
    for (k, n), ms in shapes.items():
        for m in ms:
            if args.ms and str(m) not in args.ms.split(","):
                continue
            out.guarded(f"float8_inference_m{m}_k{k}_n{n}", lambda m=m, k=k, n=n: one(
                out, m, k, n, dev))


if __name__ == "__main__":
    main()
