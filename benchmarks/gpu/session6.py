"""Evidence for three open questions of issues #23 and #25, measured on the lent GPU.

1. **torchao float8 training speedups on a GPU never fitted** (``--part f8train``): the
   ``gpu_float8_training_speedup`` definition of ``data/measurements`` (one ``nn.Linear``,
   ``convert_to_float8_training`` with the ``tensorwise`` / ``rowwise`` recipe, compiled,
   forward + backward; bf16 compiled beside it) at shapes of the H100 file, with per call: the
   do_bench time, the profiler's CUDA kernel time and launches, and Dynamo's recompile count
   during timing (a recompile inside the timed call would explain the H100 rows the data
   README lists as contradicting).
2. **GQA backward against KV heads** (``--part gqa``): SDPA with ``enable_gqa=True``,
   32 query heads and 1-32 KV heads, per backend, forward and backward kernel time; issue #25
   says the model's backward gets faster with more KV heads.
3. **Compiled LayerNorm vs RMSNorm over rows and columns** (``--part norms``): Inductor's looped
   Welford reduction against the sum of squares on the same bytes, to separate a per-row from a
   per-element cost.
4. **Host time of the compiled training call** (``--part f8host``): at small shapes, where the
   call is host-bound, the spread of five do_bench medians per variant, the host-inclusive wall
   time per call of a plain loop (``time_step``), and one profiler trace (CPU + CUDA) per variant
   in ``DIR/traces`` showing the host ops each call runs.

Rows go to ``DIR/session6.jsonl``: ``name``, ``what``, ``args`` and the figures, with versions.
Evidence only; nothing is fitted to it.

Run (on the GPU machine): ``python3 benchmarks/gpu/session6.py --out DIR [--part P ...]``.
"""

from __future__ import annotations

import copy
import os
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, do_bench, script_parser, time_step, trace  # noqa: E402
from _common import kernel_time as _kernel_time  # noqa: E402

F8_SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 2048, 2048), (16384, 4096, 1024),
             (16384, 4096, 4096), (16384, 4096, 14336), (32768, 8192, 8192)]
GQA_SHAPES = [(1, 32, 2048, 128), (2, 32, 4096, 128), (4, 32, 1024, 64)]
KV_HEADS = (1, 2, 4, 8, 16, 32)
NORM_SHAPES = [(16384, 1024), (16384, 2048), (16384, 16384), (65536, 1024), (65536, 2048),
               (131072, 4096), (4096, 16384), (32768, 4096)]


def kernel_time(fn: Callable[[], Any], calls: int = 10) -> tuple[float, float, list[list[Any]]]:
    """CUDA kernel seconds and launches per call, and the top 8 kernels (_common's)."""
    total, launches, kernels = _kernel_time(fn, calls, warmup=2)
    return total, launches, [[n[:100], t, c] for n, t, c in kernels[:8]]


def _recompiles() -> int:
    from torch._dynamo.utils import counters

    return int(sum(counters["stats"].values()) + sum(counters["recompiles"].values()))


def f8_train(out: Out, m: int, k: int, n: int) -> None:
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(k, n, bias=False, device="cuda",
                                               dtype=torch.bfloat16))
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    variants: dict[str, torch.nn.Module] = {"bf16": base}
    for recipe in ("tensorwise", "rowwise"):
        mod = copy.deepcopy(base)
        convert_to_float8_training(mod, config=Float8LinearConfig.from_recipe_name(recipe))
        variants[recipe] = mod
    for name, mod in variants.items():
        torch._dynamo.reset()
        cm = torch.compile(mod, dynamic=False)

        def step(cm: Any = cm) -> None:
            cm(x).backward(g)

        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        before = _recompiles()
        s = do_bench(step)
        during = _recompiles() - before
        ks, launches, top = kernel_time(step)
        out.row(name=f"f8train_{name}_{m}x{k}x{n}", what="float8_training",
                args={"m": m, "k": k, "n": n, "recipe": name}, do_bench_s=s, kernel_s=ks,
                launches=launches, kernels=top, compile_s=compile_s,
                dynamo_events_during_timing=during,
                config={"float8": "torchao convert_to_float8_training(Float8LinearConfig."
                                  "from_recipe_name(recipe))", "compile": "torch.compile("
                                  "dynamic=False) of nn.Sequential(nn.Linear(bias=False))",
                        "step": "y = m(x); y.backward(g), x requires grad",
                        "timer": "triton do_bench median, L2 flushed; profiler over 10 calls"})


def _f8_variants(k: int, n: int) -> dict[str, torch.nn.Module]:
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(k, n, bias=False, device="cuda",
                                               dtype=torch.bfloat16))
    out: dict[str, torch.nn.Module] = {"bf16": base}
    for recipe in ("tensorwise", "rowwise"):
        mod = copy.deepcopy(base)
        convert_to_float8_training(mod, config=Float8LinearConfig.from_recipe_name(recipe))
        out[recipe] = mod
    return out


def f8_host(out: Out, m: int, k: int, n: int) -> None:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    for name, mod in _f8_variants(k, n).items():
        torch._dynamo.reset()
        cm = torch.compile(mod, dynamic=False)

        def step(cm: Any = cm) -> None:
            cm(x).backward(g)

        step()
        torch.cuda.synchronize()
        benches = [do_bench(step) for _ in range(5)]
        loop = time_step(step, repeats=200)
        tr = trace(step, out.trace_path(f"f8train_host_{name}_{m}x{k}x{n}"), steps=5)
        out.row(name=f"f8host_{name}_{m}x{k}x{n}", what="float8_training_host",
                args={"m": m, "k": k, "n": n, "recipe": name}, do_bench_s=benches,
                loop_wall_s=loop["wall_s"], loop_gpu_s=loop["gpu_s"], trace=tr)


def gqa(out: Out, b: int, h: int, s: int, d: int) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
    for hkv in KV_HEADS:
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        for name, be in backends.items():
            if name == "math" and s * s * b * h > 2**31:
                continue
            args = {"batch": b, "heads": h, "kv_heads": hkv, "seq": s, "head_dim": d,
                    "backend": name, "causal": True, "dtype": "bf16"}
            try:
                with sdpa_kernel([be]):
                    fwd = partial(F.scaled_dot_product_attention, q, k, v, is_causal=True,
                                  enable_gqa=hkv != h)
                    tf, lf, kf = kernel_time(fwd)
                    o = fwd()
                    bwd = partial(torch.autograd.grad, o, (q, k, v), torch.randn_like(o),
                                  retain_graph=True)
                    tb, lb, kb = kernel_time(bwd)
            except Exception as exc:  # noqa: BLE001  (a backend refusing a shape is data)
                out.row(name=f"gqa_{name}_{b}x{h}x{hkv}x{s}x{d}", what="gqa", args=args,
                        error=f"{type(exc).__name__}: {str(exc)[:200]}")
                continue
            out.row(name=f"gqa_{name}_{b}x{h}x{hkv}x{s}x{d}", what="gqa", args=args,
                    fwd_kernel_s=tf, bwd_kernel_s=tb, fwd_launches=lf, bwd_launches=lb,
                    fwd_kernels=kf[:4], bwd_kernels=kb[:6])


def norms(out: Out, r: int, c: int) -> None:
    ln = torch.compile(lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b), dynamic=False)
    rms = torch.compile(lambda x, w: F.rms_norm(x, (x.shape[-1],), w), dynamic=False)
    x = torch.randn(r, c, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(c, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(c, device="cuda", dtype=torch.bfloat16)
    for name, fn in (("layernorm", partial(ln, x, w, bias)), ("rmsnorm", partial(rms, x, w))):
        t, launches, top = kernel_time(fn, calls=20)
        out.row(name=f"{name}_compiled_{r}x{c}", what=f"{name}_compiled",
                args={"rows": r, "cols": c, "dtype": "bf16"}, kernel_s=t, launches=launches,
                kernels=top, do_bench_s=do_bench(fn))


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("--part", action="append", choices=("f8train", "gqa", "norms", "f8host"))
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    parts = args.part or ["gqa", "norms", "f8train"]
    out = Out(args.out, "session6")
    for part in parts:
        t0 = time.perf_counter()
        if part == "gqa":
            for b, h, s, d in GQA_SHAPES:
                out.guarded(f"gqa_{b}x{h}x{s}x{d}", lambda b=b, h=h, s=s, d=d: gqa(out, b, h, s, d))
        elif part == "f8host":
            for m in (1024, 2048, 4096):
                out.guarded(f"f8host_{m}", lambda m=m: f8_host(out, m, m, m))
        elif part == "norms":
            for r, c in NORM_SHAPES:
                out.guarded(f"norms_{r}x{c}", lambda r=r, c=c: norms(out, r, c))
        else:
            for m, k, n in F8_SHAPES:
                out.guarded(f"f8train_{m}x{k}x{n}", lambda m=m, k=k, n=n: f8_train(out, m, k, n))
        print(f"## part {part}: {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
