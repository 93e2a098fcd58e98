"""Targeted probes on a GPU (issue #26 follow-ups), one JSON row per measurement.

Run on the GPU machine:
    python3 benchmarks/gpu/probe.py --out DIR [--parts host,softmax,gqa,compiled]

- host: HF LlamaForCausalLM decode steps (Llama-3-8B dims, batch 1, 4096 cached tokens,
  Dynamic and Static cache, eager) at 1, 2, 4 and 8 layers in ONE process, interleaved, so
  the host's speed drift cancels; beside them a chain of N tiny eager adds (the machine's bare
  per-op launch cost) and the top-level aten op count of each step.
- softmax: eager softmax forward around aten's kernel edges (4096 rows × 8192 … 24584 cols).
- gqa: SDPA forward and backward per backend with 32 query heads and 1 … 32 KV heads
  (batch 8, 2048 tokens, head dim 128, causal), and the efficient backend's forward vs
  backward on chunked-prefill shapes (short query, long KV).
- compiled: per-call time of torch.compile'd functions launching 1, 2, 4 and 8 kernels (the
  compiled call's host floor), and compiled softmax / cross-entropy forward vs backward.
Times: triton do_bench median (L2 flushed) unless a row says otherwise.
"""

# ruff: noqa: B023  (each closure is timed inside the loop iteration that made it)
from __future__ import annotations

import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, do_bench, script_parser  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def bench(fn: Callable[[], Any]) -> float:
    return do_bench(fn, warmup_ms=10, rep_ms=50)


def sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def host(out: Out, small: bool) -> None:
    sys.path.insert(0, os.path.dirname(__file__))
    import llama_programs
    from llama_programs import fill_dynamic, fill_static, llama_config
    from torch.profiler import profile
    from transformers import LlamaForCausalLM

    if small:
        llama_programs.CACHE = 64
    steps: dict[str, Callable[[], None]] = {}
    counts: dict[str, int] = {}
    for layers in (1, 2, 4, 8):
        hc = llama_config(layers)
        if small:
            hc.hidden_size, hc.intermediate_size, hc.vocab_size = 256, 512, 1000
            hc.num_attention_heads, hc.num_key_value_heads, hc.head_dim = 2, 1, 128
        with torch.device(DEV):
            model = LlamaForCausalLM(hc).to(torch.bfloat16).eval()
        ids = torch.zeros(1, 1, dtype=torch.long, device=DEV)
        dyn = fill_dynamic(hc, 1, DEV)
        st = fill_static(hc, 1, DEV)
        pos = torch.full((1, 1), llama_programs.CACHE, device=DEV)

        def s_dyn(model: Any = model, dyn: Any = dyn, ids: Any = ids) -> None:
            with torch.no_grad():
                model(input_ids=ids, cache=dyn, use_cache=True)
            dyn.crop(-1)

        def s_st(model: Any = model, st: Any = st, ids: Any = ids, pos: Any = pos) -> None:
            with torch.no_grad():
                model(input_ids=ids, cache=st, position_ids=pos, use_cache=True)
            st.crop(-1)

        for name, fn in ((f"dynamic_L{layers}", s_dyn), (f"static_L{layers}", s_st)):
            for _ in range(3):
                fn()
            with profile() as p:
                fn()
                sync()
            counts[name] = sum(1 for e in p.events() if e.cpu_parent is None
                               and not e.name.startswith(("cuda", "ProfilerStep")))
            steps[name] = fn
    x = torch.zeros(16, device=DEV)

    def chain(n: int) -> Callable[[], None]:
        def run() -> None:
            y = x
            for _ in range(n):
                y = y + 1

        return run

    for n in (10, 100):
        steps[f"add_chain_{n}"] = chain(n)
    walls: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(7):  # interleaved rounds: drift of the host hits every program alike
        for name, fn in steps.items():
            sync()
            t0 = time.perf_counter()
            for _ in range(10):
                fn()
            sync()
            walls[name].append((time.perf_counter() - t0) / 10)
    for name, ws in walls.items():
        out.row(name=f"host_{name}", part="host", wall_s=statistics.median(ws),
                wall_min_s=min(ws), top_level_ops=counts.get(name),
                config={"batch": 1, "cached_tokens": llama_programs.CACHE,
                        "method": "perf_counter over 10 steps + synchronize, median of 7 "
                                  "interleaved rounds"})


def softmax(out: Out, small: bool) -> None:
    for cols in ((64, 96) if small else (8192, 9216, 9224, 12288, 16384, 24576, 24584)):
        x = torch.randn(4096, cols, device=DEV, dtype=torch.bfloat16)
        out.row(name=f"softmax_eager_4096x{cols}", part="softmax", rows=4096, cols=cols,
                measured=bench(lambda x=x: torch.softmax(x, -1)))


def gqa(out: Out, small: bool) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    b, s, d, hq = (1, 64, 64, 4) if small else (8, 2048, 128, 32)
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    for hkv in ((1, 4) if small else (1, 2, 4, 8, 16, 32)):
        q = torch.randn(b, hq, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, hkv, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn_like(k, requires_grad=True)
        g = torch.randn(b, hq, s, d, device=DEV, dtype=torch.bfloat16)
        for name, be in backends.items():
            def fwd(be: Any = be) -> Any:
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                          enable_gqa=hkv != hq)

            def fb(fwd: Any = fwd) -> None:
                fwd().backward(g)

            try:
                tf, tfb = bench(fwd), bench(fb)
                out.row(name=f"gqa_{name}_kv{hkv}", part="gqa", backend=name, batch=b,
                        q_heads=hq, kv_heads=hkv, seq=s, head_dim=d, causal=True,
                        fwd_s=tf, fwd_bwd_s=tfb, bwd_s=tfb - tf)
            except Exception as exc:  # noqa: BLE001
                out.row(name=f"gqa_{name}_kv{hkv}", part="gqa", error=str(exc)[:200])
            q.grad = k.grad = v.grad = None
    for (bb, h, ql, kl) in (((1, 2, 8, 128),) if small else
                            ((1, 7, 111, 15217), (1, 32, 256, 16384), (4, 32, 64, 8192))):
        q = torch.randn(bb, h, ql, 128, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(bb, h, kl, 128, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn_like(k, requires_grad=True)
        g = torch.randn_like(q)

        def fwd2() -> Any:
            with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        try:
            tf, tfb = bench(fwd2), bench(lambda: fwd2().backward(g))
            out.row(name=f"efficient_chunk_b{bb}_h{h}_q{ql}_kv{kl}", part="gqa",
                    backend="efficient", batch=bb, heads=h, q_len=ql, kv_len=kl, causal=True,
                    fwd_s=tf, fwd_bwd_s=tfb, bwd_s=tfb - tf)
        except Exception as exc:  # noqa: BLE001
            out.row(name=f"efficient_chunk_b{bb}_h{h}_q{ql}_kv{kl}", part="gqa",
                    error=str(exc)[:200])


def compiled(out: Out, small: bool) -> None:
    x = torch.randn(1024, 1024, device=DEV)

    def chain(n: int) -> Callable[[torch.Tensor], torch.Tensor]:
        def f(t: torch.Tensor) -> torch.Tensor:
            for _ in range(n):  # a reduction between steps stops Inductor fusing them
                t = t - t.amax(dim=-1, keepdim=True)
            return t

        return f

    for n in (0, 1, 2, 4, 8):
        torch._dynamo.reset()
        f = torch.compile(chain(n) if n else (lambda t: t * 2), dynamic=False)
        f(x)
        sync()
        ws = []
        for _ in range(5):
            sync()
            t0 = time.perf_counter()
            for _ in range(50):
                f(x)
            sync()
            ws.append((time.perf_counter() - t0) / 50)
        out.row(name=f"compiled_call_{n}_reductions", part="compiled", reductions=n,
                wall_s=statistics.median(ws), do_bench_s=bench(lambda f=f: f(x)))
    for rows, cols in (((64, 128),) if small else ((1024, 1024), (4096, 4096), (1024, 32000))):
        for op in ("softmax", "cross_entropy"):
            torch._dynamo.reset()
            xx = torch.randn(rows, cols, device=DEV, dtype=torch.bfloat16, requires_grad=True)
            tgt = torch.randint(0, cols, (rows,), device=DEV)
            if op == "softmax":
                fn = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
                g = torch.randn_like(xx)

                def fb(fn: Any = fn, xx: Any = xx, g: Any = g) -> None:
                    fn(xx).backward(g)
            else:
                fn = torch.compile(lambda t, y: F.cross_entropy(t, y), dynamic=False)

                def fb(fn: Any = fn, xx: Any = xx, tgt: Any = tgt) -> None:
                    fn(xx, tgt).backward()
            f1 = (lambda fn=fn, xx=xx: fn(xx)) if op == "softmax" else \
                (lambda fn=fn, xx=xx, tgt=tgt: fn(xx, tgt))
            tf, tfb = bench(f1), bench(fb)
            out.row(name=f"compiled_{op}_{rows}x{cols}", part="compiled", op=op, rows=rows,
                    cols=cols, fwd_s=tf, fwd_bwd_s=tfb, bwd_s=tfb - tf)


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("--parts", default="host,softmax,gqa,compiled")
    ap.add_argument("--small", action="store_true")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    out = Out(args.out, "probe")
    for part in args.parts.split(","):
        fn = {"host": host, "softmax": softmax, "gqa": gqa, "compiled": compiled}[part]
        out.guarded(part, lambda fn=fn: fn(out, args.small))


if __name__ == "__main__":
    main()
