"""Evidence for the MoE training rows of issue #24 and two kernel questions of #23, measured
on the lent GPU (torch only: no torchao, no roofline core).

1. **Expert GEMMs at the shapes MoE training runs** (``--part experts``): ``torch._grouped_mm``
   over ``groups`` local experts of ``m_per_group`` tokens each, for the expert FFNs of
   GPT-OSS-120B (2880 -> 2x2880 -> 2880), Qwen3-30B-A3B (2048 -> 2x768), Qwen3-235B-A22B
   (4096 -> 2x1536) and DeepSeek-V3 (7168 -> 2x2048): forward kernel time, and forward +
   backward (autograd: dgrad and the 2D x 2D wgrad) kernel time, with the kernels that ran.
2. **GQA attention with head dim 64 and sliding windows** (``--part attn``, ``--part flex``):
   SDPA per backend at GPT-OSS's 64 query / 8 KV heads of dim 64 and Qwen3's 32 / 4 of dim 128,
   causal, forward and backward kernel time; FlexAttention (compiled) with a causal mask and
   with GPT-OSS's 128-token sliding window on the same shapes.
3. **Routing kernels** (``--part routing``): router softmax + top-k over ``experts`` logits,
   the token permutation (argsort + index_select of the routed copies) and the weighted
   un-permutation (index_add_), kernel time per call with the kernels that ran.
4. **Small reductions and Adam** (``--part small``): ``aten::mean`` of 1 K … 256 M elements
   (where one CTA finishes the reduction) and ``torch.optim.AdamW(foreach=True)`` steps on the
   first step (zero moments) and later steps.

Rows go to ``DIR/session8.jsonl``: ``name``, ``what``, ``args`` and the figures, with versions.
Evidence only; nothing is fitted to it.

Run (on the GPU machine): ``python3 benchmarks/gpu/session8.py --out DIR [--part P ...]``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, script_parser  # noqa: E402
from _common import kernel_time as _kernel_time  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"
SMOKE = DEV == "cpu"
BF16 = torch.bfloat16

# (name, hidden, expert ffn): the expert FFN of each model (fc1 is gate+up, 2*ffn wide)
EXPERTS = [("gptoss", 2880, 2880), ("qwen3_30b", 2048, 768), ("qwen3_235b", 4096, 1536),
           ("dsv3", 7168, 2048)]
EXPERT_M = (512, 2048, 8192)
EXPERT_G = (2, 8)
# (name, batch, heads, kv_heads, seq, head_dim)
ATTN = [("gptoss", 1, 64, 8, 8192, 64), ("gptoss", 2, 64, 8, 4096, 64),
        ("qwen3", 1, 32, 4, 4096, 128)]
# (tokens, experts, topk, hidden)
ROUTING = [(16384, 128, 4, 2880), (16384, 128, 8, 2048), (16384, 128, 8, 4096),
           (8192, 256, 8, 7168), (16384, 32, 4, 2880)]
# held-out top-k grid (second call): (slices, slice length, k)
TOPK_GRID = [(s, n, k) for s in (64, 1024, 4096, 32768) for n in (8, 64, 128, 512, 1024)
             for k in (2, 8, 16) if k <= n]
SORT_N = (1 << 14, 1 << 16, 1 << 18, 1 << 20)
MEAN_N = (1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28)
ADAM = [(64, 1 << 20), (16, 1 << 24), (256, 1 << 16)]


def kernel_time(fn: Callable[[], Any], calls: int = 10) -> tuple[float, float, list[list[Any]]]:
    """CUDA kernel seconds and launches per call, and the top 8 kernels (_common's)."""
    if SMOKE:
        fn()
        return 0.0, 0.0, []
    total, launches, kernels = _kernel_time(fn, calls, warmup=2)
    return total, launches, [[n[:100], t, c] for n, t, c in kernels[:8]]


def fwd_bwd_kernel_times(fwd: Callable[[], torch.Tensor], inputs: tuple[torch.Tensor, ...]
                         ) -> dict[str, Any]:
    """Kernel time, launches and top kernels of ``fwd()`` and of the backward of its output
    (a random gradient) into ``inputs``, as row fields."""
    tf, lf, kf = kernel_time(fwd)
    o = fwd()
    go = torch.randn_like(o)
    tb, lb, kb = kernel_time(lambda: torch.autograd.grad(o, inputs, go, retain_graph=True))
    return {"fwd_kernel_s": tf, "bwd_kernel_s": tb, "fwd_launches": lf, "bwd_launches": lb,
            "fwd_kernels": kf[:3], "bwd_kernels": kb[:4]}


def _sizes(m: int, k: int, f: int) -> tuple[int, int, int]:
    return (m // 64, k // 8, f // 8) if SMOKE else (m, k, f)


def experts(out: Out, model: str, hidden: int, ffn: int, m: int, g: int) -> None:
    m, hidden, ffn = _sizes(m, hidden, ffn)
    offs = torch.arange(1, g + 1, device=DEV, dtype=torch.int32) * m
    for gemm, k, n in (("fc1", hidden, 2 * ffn), ("fc2", ffn, hidden)):
        x = torch.randn(g * m, k, device=DEV, dtype=BF16, requires_grad=True)
        w = (torch.randn(g, n, k, device=DEV, dtype=BF16) * 0.02).transpose(-2, -1)
        w.requires_grad_(True)
        dy = torch.randn(g * m, n, device=DEV, dtype=BF16)

        def fwd(x: torch.Tensor = x, w: torch.Tensor = w) -> torch.Tensor:
            return torch._grouped_mm(x, w, offs=offs)

        def both(x: torch.Tensor = x, w: torch.Tensor = w, dy: torch.Tensor = dy) -> None:
            torch.autograd.backward(fwd(x, w), dy)
            x.grad = None
            w.grad = None

        args = {"model": model, "gemm": gemm, "m_per_group": m, "groups": g, "k": k, "n": n,
                "dtype": "bf16", "weight_layout": "[g, n, k] transposed (column-major B)"}
        tf, lf, kf = kernel_time(fwd)
        tb, lb, kb = kernel_time(both)
        out.row(name=f"experts_{model}_{gemm}_{m}x{g}", what="grouped_mm", args=args,
                fwd_kernel_s=tf, fwd_bwd_kernel_s=tb, fwd_launches=lf, fwd_bwd_launches=lb,
                fwd_kernels=kf[:3], fwd_bwd_kernels=kb[:6])


def _qkv(b: int, h: int, hkv: int, s: int, d: int) -> tuple[torch.Tensor, ...]:
    if SMOKE:
        s = 256
    return tuple(torch.randn(b, hh, s, d, device=DEV, dtype=BF16, requires_grad=True)
                 for hh in (h, hkv, hkv))


def attn(out: Out, model: str, b: int, h: int, hkv: int, s: int, d: int) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    q, k, v = _qkv(b, h, hkv, s, d)
    for name, be in backends.items():
        args = {"model": model, "batch": b, "heads": h, "kv_heads": hkv, "seq": s,
                "head_dim": d, "backend": name, "causal": True, "dtype": "bf16"}
        try:
            with sdpa_kernel([be]):
                def fwd() -> torch.Tensor:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                          enable_gqa=True)
                times = fwd_bwd_kernel_times(fwd, (q, k, v))
        except Exception as exc:  # noqa: BLE001  (a backend refusing a shape is data)
            out.row(name=f"attn_{name}_{model}_{b}x{s}", what="sdpa", args=args,
                    error=f"{type(exc).__name__}: {str(exc)[:200]}")
            continue
        out.row(name=f"attn_{name}_{model}_{b}x{s}", what="sdpa", args=args, **times)


def flex(out: Out, model: str, b: int, h: int, hkv: int, s: int, d: int) -> None:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = _qkv(b, h, hkv, s, d)
    s = q.shape[2]
    compiled = torch.compile(flex_attention, dynamic=False)

    def causal(_b: Any, _h: Any, qi: Any, ki: Any) -> Any:
        return qi >= ki

    def window(_b: Any, _h: Any, qi: Any, ki: Any) -> Any:
        return (qi >= ki) & (qi - ki < 128)

    for mask_name, mask in (("causal", causal), ("window128", window)):
        bm = create_block_mask(mask, None, None, s, s, device=DEV)

        def fwd(bm: Any = bm) -> torch.Tensor:
            return compiled(q, k, v, block_mask=bm, enable_gqa=True)

        args = {"model": model, "batch": b, "heads": h, "kv_heads": hkv, "seq": s,
                "head_dim": d, "mask": mask_name, "window": 128 if mask_name != "causal" else None,
                "dtype": "bf16", "compiled": True}
        out.row(name=f"flex_{mask_name}_{model}_{b}x{s}", what="flex_attention", args=args,
                **fwd_bwd_kernel_times(fwd, (q, k, v)))


def routing(out: Out, t: int, e: int, topk: int, hidden: int) -> None:
    if SMOKE:
        t, hidden = 256, 64
    logits = torch.randn(t, e, device=DEV, dtype=BF16)
    x = torch.randn(t, hidden, device=DEV, dtype=BF16)

    def router() -> tuple[torch.Tensor, torch.Tensor]:
        probs = torch.softmax(logits.float(), dim=-1)
        return torch.topk(probs, topk, dim=-1)

    w, idx = router()
    flat = idx.reshape(-1)

    def permute() -> torch.Tensor:
        order = torch.argsort(flat, stable=True)
        return x.index_select(0, order // topk)

    routed = permute()
    order = torch.argsort(flat, stable=True)
    tok = order // topk
    wt = w.reshape(-1)[order].to(BF16)

    def unpermute() -> torch.Tensor:
        y = torch.zeros_like(x)
        return y.index_add_(0, tok, routed * wt[:, None])

    args = {"tokens": t, "experts": e, "topk": topk, "hidden": hidden, "dtype": "bf16"}
    for part, fn in (("router_softmax_topk", router), ("permute", permute),
                     ("unpermute", unpermute)):
        ts, launches, ks = kernel_time(fn)
        out.row(name=f"routing_{part}_{t}x{e}x{topk}x{hidden}", what=part, args=args,
                kernel_s=ts, launches=launches, kernels=ks[:5])


def topk(out: Out) -> None:
    """torch.topk over the last dim of [slices, n], fp32 and bf16, sorted or not."""
    for dt_name, dt in (("fp32", torch.float32), ("bf16", BF16)):
        for slices, n, k in TOPK_GRID:
            if SMOKE and slices * n > 1 << 16:
                continue
            x = torch.softmax(torch.randn(slices, n, device=DEV, dtype=torch.float32), -1).to(dt)
            for is_sorted in (True, False):
                ts, launches, ks = kernel_time(
                    lambda x=x, k=k, s=is_sorted: torch.topk(x, k, dim=-1, sorted=s))
                args = {"slices": slices, "n": n, "k": k, "dtype": dt_name, "sorted": is_sorted,
                        "input": "softmax of normal logits"}
                out.row(name=f"topk_{dt_name}_{slices}x{n}_k{k}_{'s' if is_sorted else 'u'}",
                        what="topk", args=args, kernel_s=ts, launches=launches, kernels=ks[:4])


def sorts(out: Out) -> None:
    """torch.argsort(stable=True) of int64 / int32 expert ids (the MoE permutation's sort)."""
    for n in SORT_N:
        for dt_name, dt in (("int64", torch.long), ("int32", torch.int32)):
            for experts in (8, 128):
                ids = torch.randint(0, experts, (n,), device=DEV, dtype=dt)
                ts, launches, ks = kernel_time(lambda ids=ids: torch.argsort(ids, stable=True))
                args = {"numel": n, "dtype": dt_name, "experts": experts, "stable": True}
                out.row(name=f"argsort_{dt_name}_{n}_e{experts}", what="argsort", args=args,
                        kernel_s=ts, launches=launches, kernels=ks[:5])


def small(out: Out) -> None:
    for n in MEAN_N:
        if SMOKE and n > 1 << 20:
            break
        x = torch.randn(n, device=DEV, dtype=BF16)
        ts, launches, ks = kernel_time(lambda x=x: x.mean())
        out.row(name=f"mean_{n}", what="aten_mean", args={"numel": n, "dtype": "bf16"},
                kernel_s=ts, launches=launches, kernels=ks[:3])
    for count, numel in ADAM:
        if SMOKE:
            numel = 1024
        params = [torch.randn(numel, device=DEV, requires_grad=True) for _ in range(count)]
        for p in params:
            p.grad = torch.randn_like(p)
        opt = torch.optim.AdamW(params, lr=1e-4, foreach=True)
        args = {"params": count, "numel": numel, "dtype": "fp32", "foreach": True}
        # the first step: zero moments, state created inside the call
        first = _first_step_kernels(opt)
        ts, launches, ks = kernel_time(opt.step)
        out.row(name=f"adamw_{count}x{numel}", what="adamw_foreach", args=args,
                first_step_kernels=first, kernel_s=ts, launches=launches, kernels=ks[:8])


def _first_step_kernels(opt: torch.optim.Optimizer) -> list[list[Any]]:
    if SMOKE:
        opt.step()
        return []
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        opt.step()
        torch.cuda.synchronize()
    per: dict[str, list[float]] = {}
    for evt in prof.events():
        if evt.device_type == torch.autograd.DeviceType.CUDA:
            cell = per.setdefault(evt.name[:100], [0.0, 0])
            cell[0] += evt.time_range.elapsed_us()
            cell[1] += 1
    return sorted(([n, round(t, 3), c] for n, (t, c) in per.items()), key=lambda r: -r[1])[:8]


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("--part", action="append",
                    choices=("experts", "attn", "flex", "routing", "small", "topk", "sorts"))
    ap.add_argument("--name", default="session8", help="rows file name (without .jsonl)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    parts = args.part or ["experts", "attn", "routing", "small", "flex"]
    out = Out(args.out, args.name)
    for part in parts:
        t0 = time.perf_counter()
        if part == "experts":
            for model, hidden, ffn in EXPERTS:
                for m in EXPERT_M:
                    for g in EXPERT_G:
                        out.guarded(f"experts_{model}_{m}x{g}",
                                    lambda a=(model, hidden, ffn, m, g): experts(out, *a))
        elif part in ("attn", "flex"):
            fn = attn if part == "attn" else flex
            for shape in ATTN if part == "attn" else ATTN[:2]:
                out.guarded(f"{part}_{shape[0]}_{shape[1]}x{shape[4]}",
                            lambda shape=shape, fn=fn: fn(out, *shape))
        elif part == "routing":
            for shape in ROUTING:
                out.guarded(f"routing_{shape}", lambda shape=shape: routing(out, *shape))
        elif part == "topk":
            out.guarded("topk", lambda: topk(out))
        elif part == "sorts":
            out.guarded("sorts", lambda: sorts(out))
        else:
            out.guarded("small", lambda: small(out))
        print(f"## part {part}: {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
