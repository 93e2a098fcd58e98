"""Re-measure, with kernel traces, the rows of data/measurements/gpu_h100_calibration.jsonl
that contradict their families (issue #26 item 3), on this GPU.

Run on the GPU machine (set TORCH_LOGS=output_code and TORCH_LOGS_OUT=DIR/compile.log to keep
the Inductor code that ran):  python3 benchmarks/gpu/recheck_rows.py --out DIR

Each case runs through ``roofline bench``'s own family code (same inputs, same timer: do_bench
median, L2 flushed), then 5 calls under torch.profiler; the row carries the bench fields plus
``kernels`` ([name, µs per call, launches per call], from the trace) and ``trace``.
The float8 training linears at 4096³ (bf16, tensorwise, rowwise, rowwise_with_gw_hp) follow
the method of ``gpu_float8_linear_kernels``: one ``nn.Linear`` converted with torchao
``convert_to_float8_training``, ``torch.compile``d, forward + ``backward(g)``.
"""

from __future__ import annotations

import collections
import gzip
import json
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, script_parser, trace  # noqa: E402

CASES = [
    ("cast_fp8_tensorwise", {"rows": 1024, "cols": 4096, "granularity": "tensorwise"}),
    ("cast_fp8_tensorwise", {"rows": 16384, "cols": 1024, "granularity": "tensorwise"}),
    ("cast_fp8_tensorwise", {"rows": 1024, "cols": 16384, "granularity": "tensorwise"}),
    ("cast_fp8_tensorwise", {"rows": 4096, "cols": 8192, "granularity": "tensorwise"}),
    ("layernorm_compiled", {"rows": 4096, "cols": 4096, "dtype": "bf16"}),
    ("layernorm_compiled", {"rows": 16384, "cols": 1024, "dtype": "bf16"}),
    ("layernorm_compiled", {"rows": 65536, "cols": 4096, "dtype": "bf16"}),
    ("softmax_compiled", {"rows": 4096, "cols": 4096, "dtype": "bf16"}),
    ("softmax_compiled", {"rows": 65536, "cols": 4096, "dtype": "bf16"}),
    ("cross_entropy", {"rows": 1024, "vocab": 32000, "dtype": "bf16"}),
    ("cross_entropy", {"rows": 16384, "vocab": 32000, "dtype": "bf16"}),
    ("softmax", {"rows": 4096, "cols": 4096, "dtype": "bf16"}),
    ("softmax", {"rows": 1024, "cols": 1024, "dtype": "bf16"}),
    ("softmax", {"rows": 4096, "cols": 8192, "dtype": "bf16"}),
]


def kernels(path: str, calls: int) -> list[list[Any]]:
    """[name, µs per call, launches per call] of the GPU kernels in a gzip trace."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    dur: dict[str, float] = collections.defaultdict(float)
    n: dict[str, int] = collections.defaultdict(int)
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X":
            dur[e["name"]] += float(e.get("dur", 0))
            n[e["name"]] += 1
    return sorted(([k[:160], round(v / calls, 2), n[k] / calls] for k, v in dur.items()),
                  key=lambda r: -r[1])


def bench_case(out: Out, family: str, args: dict[str, Any]) -> None:
    from roofline.bench._cases import Ctx
    from roofline.bench._registry import select
    from roofline.bench._timing import make_timer

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    (fam,), _ = select([family], dev)
    ctx = Ctx(torch, dev, "full")
    timer = make_timer(dev, "full")
    seen: list[Callable[[], Any]] = []

    class Capture:
        method = timer.method

        def __call__(self, fn: Callable[[], Any], flush: bool = True) -> float:
            seen.append(fn)
            return timer(fn, flush=flush)

    fields = fam.build(ctx, dict(args))(Capture())  # type: ignore[arg-type]
    args = {"dtype": ctx.act, **args} if fam.act_dtype else args
    name = f"gpu_{family}_" + "_".join(str(v) for v in args.values())
    tr = trace(seen[-1], out.trace_path(name), steps=5)
    out.row(name=name, family=f"gpu_{family}", op=fam.op, args=args, backend=fam.backend,
            **fields, kernels=kernels(out.trace_path(name), 5), trace=tr,
            method=fam.method, source=f"recheck_rows.py, {timer.method}")


def float8_linear(out: Out, m: int, k: int, n: int, recipe: str) -> None:
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    from triton.testing import do_bench

    torch.manual_seed(0)
    torch._dynamo.reset()
    lin = torch.nn.Sequential(torch.nn.Linear(k, n, bias=False)).cuda().to(torch.bfloat16)
    if recipe != "bf16":
        convert_to_float8_training(lin, config=Float8LinearConfig.from_recipe_name(recipe))
    f = torch.compile(lin, dynamic=False)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        f(x).backward(g)

    wall = float(do_bench(step, warmup=25, rep=100, return_mode="median")) * 1e-3
    name = f"gpu_float8_linear_kernels_{m}_{k}_{n}_{recipe}"
    tr = trace(step, out.trace_path(name), steps=5)
    ks = kernels(out.trace_path(name), 5)
    gpu = sum(r[1] for r in ks) * 1e-6
    out.row(name=name, family="gpu_float8_linear_kernels", op="float8_linear_kernels",
            args={"m": m, "k": k, "n": n, "recipe": recipe}, measured=gpu, wall_s=wall,
            kernels=ks, trace=tr,
            method=f"torchao convert_to_float8_training({recipe}) nn.Linear + torch.compile, "
                   "fwd + backward(g), grads not zeroed (as the H100 rows); measured = "
                   "profiler kernel time per step, wall_s = do_bench median")


def main() -> None:
    ap = script_parser(__doc__)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    out = Out(args.out, "recheck")
    for family, a in CASES:
        out.guarded(f"{family} {a}", lambda family=family, a=a: bench_case(out, family, a))
    for recipe in ("bf16", "tensorwise", "rowwise", "rowwise_with_gw_hp"):
        out.guarded(f"float8 linear {recipe}",
                    lambda recipe=recipe: float8_linear(out, 4096, 4096, 4096, recipe))


if __name__ == "__main__":
    main()
