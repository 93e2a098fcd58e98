"""One Qwen3-30B-A3B MoE layer, forward + backward, measured on one GPU and priced side by side
(issue #24: where do the ~3.8 ms per layer per micro-batch go that the AutoModel H100 rows
miss? hardware-notes §47, §50).

The layer as NeMo AutoModel runs it (``modules="automodel"``), with what the device image has
(torch + transformers; no TE, no DeepEP, no grouped_gemm wheel), bf16:

- attention block: RMSNorm, separate q/k/v GEMMs, q/k RMSNorm over head_dim, eager RoPE
  (rotate-half with a cat, as gpt_oss ``_apply_rotary_emb``), SDPA (flash, causal, GQA),
  o GEMM, residual;
- router: AutoModel's ``FakeBalancedGate`` (token i to experts (i*k+j) mod E, weights 1/k) or
  a top-k router (gate GEMM, softmax, topk, renormalise);
- permute: argsort of the flat expert ids + ``index_select``;
- experts: ``looped`` = ``LoopedGmm``, one GEMM per expert round-robin over 4 CUDA streams
  into one buffer, forward, dgrad and wgrad (what grouped_gemm 1.1.4 ``ops.gmm`` does on
  sm90), or ``grouped_mm`` = ``torch._grouped_mm``; SiLU(gate)*up*prob over all rows; down;
- unpermute: ``index_add_`` of the rows back to tokens (probabilities applied in the
  activation, as ``weighted_bias_swiglu_impl``), residual.

Cases: EP 1 with all 128 experts, and 16 local experts at EP-8-equivalent rows (every token's
k rows land on this rank's 16 experts: t*k/16 rows each, as the fake gate gives each of 8 ranks
under EP 8); micro-batch 4 x 4096 and 1 x 4096. Each case: ~2 s of steps to settle the clock,
then CUDA-event fwd+bwd and fwd-only times (``_common.time_step``), one ``torch.profiler`` step
whose kernels go to ``DIR/moe_layer_kernels.jsonl`` (name, µs, stream, the forward label or
autograd node that launched it), and ``rl.transformer.estimate(..., modules="automodel",
recompute="none")``'s rows of one layer (communication rows dropped) in the same process:
``DIR/moe_layer.jsonl`` rows and a printed table (kernel group: measured µs, priced µs).

``--dry-run``: tiny shapes on CPU, no streams / CUDA events / profiler (the test keeps the
script working). Run: ``python3 benchmarks/gpu/moe_layer.py --out DIR [--dry-run]``.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
_SRC = os.path.join(os.path.dirname(__file__), "..", "..", "python")
if glob.glob(os.path.join(_SRC, "roofline", "_core*.so")):  # a build in the tree (the device's)
    sys.path.insert(0, _SRC)  # else the installed package (a fresh `pip install .`)
from _common import Out, script_parser, time_step  # noqa: E402

MODEL = "Qwen3-30B-A3B"


@dataclass(frozen=True)
class Dims:
    """Qwen3-30B-A3B's config.json (hidden 2048, 32 q / 4 kv heads of 128, 128 experts of
    768, top-8, rms eps 1e-6, rope theta 1e6)."""

    hidden: int = 2048
    heads: int = 32
    kv_heads: int = 4
    head_dim: int = 128
    experts: int = 128
    topk: int = 8
    inter: int = 768
    seq: int = 4096
    eps: float = 1e-6
    theta: float = 1e6


TINY = Dims(hidden=64, heads=4, kv_heads=2, head_dim=16, experts=8, topk=2, inter=32, seq=32)


def rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """Eager RMSNorm in fp32 (HF/AutoModel's torch fallback)."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE with a cat (gpt_oss ``_apply_rotary_emb``, used by AutoModel Qwen3)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class LoopedGmm(torch.autograd.Function):
    """grouped_gemm 1.1.4's ``ops.gmm`` on sm90 (``csrc/grouped_gemm.cu``: CUTLASS only for
    sm80): one cuBLAS GEMM per expert, round-robin over 4 streams, into one output buffer;
    the backward does the same for dgrad and per-expert ``trans_a`` GEMMs for wgrad.
    ``w`` is [E, N, K] (y_e = x_e w_e^T); ``counts`` rows per expert, in order."""

    @staticmethod
    def _loop(streams: list[Any], jobs: list[Any]) -> None:
        main = torch.cuda.current_stream() if streams else None
        for i, job in enumerate(jobs):
            st = streams[i % len(streams)] if streams else None
            if st is not None and main is not None:
                st.wait_stream(main)
            with torch.cuda.stream(st) if st is not None else contextlib.nullcontext():
                job()
        if main is not None:
            for st in streams:
                main.wait_stream(st)

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, counts: list[int],
                streams: list[Any]) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        ctx.counts, ctx.streams = counts, streams
        y = x.new_empty(x.shape[0], w.shape[1])
        starts = [sum(counts[:e]) for e in range(len(counts))]
        LoopedGmm._loop(streams, [
            (lambda s=s0, n=n, e=e: torch.mm(x[s:s + n], w[e].t(), out=y[s:s + n]))
            for e, (s0, n) in enumerate(zip(starts, counts, strict=True))])
        return y

    @staticmethod
    def backward(ctx: Any, gy: torch.Tensor) -> tuple[Any, ...]:
        x, w = ctx.saved_tensors
        counts, streams = ctx.counts, ctx.streams
        gy = gy.contiguous()
        gx, gw = torch.empty_like(x), torch.zeros_like(w)
        starts = [sum(counts[:e]) for e in range(len(counts))]

        def job(e: int, s: int, n: int) -> None:
            torch.mm(gy[s:s + n], w[e], out=gx[s:s + n])
            if n:
                torch.mm(gy[s:s + n].t(), x[s:s + n], out=gw[e])

        LoopedGmm._loop(streams, [
            (lambda e=e, s=s0, n=n: job(e, s, n))
            for e, (s0, n) in enumerate(zip(starts, counts, strict=True))])
        return gx, gw, None, None


class Layer:
    """Weights and the forward of one decoder layer; ``local`` experts on this GPU."""

    def __init__(self, d: Dims, local: int, dev: str, dtype: torch.dtype) -> None:
        def p(*shape: int, scale: float = 0.02) -> torch.Tensor:
            return (torch.randn(*shape, device=dev, dtype=dtype) * scale).requires_grad_()

        def one(n: int) -> torch.Tensor:
            return torch.ones(n, device=dev, dtype=dtype).requires_grad_()

        self.d, self.local, self.dev = d, local, dev
        h, hd = d.hidden, d.head_dim
        self.n1, self.n2, self.qn, self.kn = one(h), one(h), one(hd), one(hd)
        self.wq, self.wk = p(d.heads * hd, h), p(d.kv_heads * hd, h)
        self.wv, self.wo = p(d.kv_heads * hd, h), p(h, d.heads * hd)
        self.wg = p(d.experts, h)
        # [E, N, K] as nn.Linear stores them; grouped_mm gets the [E, K, N] transposed view
        # (column-major B, the layout torch._grouped_mm's sm90 kernel wants)
        self.w13 = p(local, 2 * d.inter, h)
        self.w2 = p(local, h, d.inter)
        inv = 1.0 / (d.theta ** (torch.arange(0, hd // 2, device=dev).float() * 2 / hd))
        ang = torch.outer(torch.arange(d.seq, device=dev).float(), inv)
        self.cos, self.sin = ang.cos().to(dtype), ang.sin().to(dtype)
        self.streams: list[torch.cuda.Stream] = []
        if dev == "cuda":
            self.streams = [torch.cuda.Stream() for _ in range(4)]  # type: ignore[no-untyped-call]

    def params(self) -> list[torch.Tensor]:
        return [self.n1, self.n2, self.qn, self.kn, self.wq, self.wk, self.wv, self.wo,
                self.wg, self.w13, self.w2]

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        d = self.d
        b, s, _ = x.shape
        with torch.profiler.record_function("L:attn_norm"):
            hn = rms(x, self.n1, d.eps)
        with torch.profiler.record_function("L:qkv_proj"):
            q = F.linear(hn, self.wq).view(b, s, d.heads, d.head_dim)
            k = F.linear(hn, self.wk).view(b, s, d.kv_heads, d.head_dim)
            v = F.linear(hn, self.wv).view(b, s, d.kv_heads, d.head_dim)
        with torch.profiler.record_function("L:qk_norm"):
            q, k = rms(q, self.qn, d.eps), rms(k, self.kn, d.eps)
        with torch.profiler.record_function("L:rope"):
            cos, sin = self.cos[:s, None, :], self.sin[:s, None, :]
            q, k = rope(q, cos, sin), rope(k, cos, sin)
        with torch.profiler.record_function("L:attention"):
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2), is_causal=True,
                                               enable_gqa=True)
        with torch.profiler.record_function("L:o_proj"):
            o = F.linear(o.transpose(1, 2).reshape(b, s, -1), self.wo)
        with torch.profiler.record_function("L:attn_residual"):
            return x + o

    def route(self, hn: torch.Tensor, router: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Expert ids [t, k] (global, 0..E-1) and probabilities [t, k]."""
        d = self.d
        t = hn.shape[0]
        if router == "fake_balanced":
            ids = torch.arange(t * d.topk, device=hn.device).view(t, d.topk) % d.experts
            return ids, torch.full((t, d.topk), 1.0 / d.topk, device=hn.device, dtype=hn.dtype)
        logits = F.linear(hn, self.wg).float()
        probs, ids = torch.topk(torch.softmax(logits, -1), d.topk, dim=-1)
        return ids, (probs / probs.sum(-1, keepdim=True)).to(hn.dtype)

    def experts(self, xs: torch.Tensor, ps: torch.Tensor, counts: list[int],
                variant: str) -> torch.Tensor:
        """SwiGLU experts over rows sorted by local expert, ``counts`` rows each."""
        inter = self.d.inter
        if variant == "grouped_mm":
            offs = torch.tensor(counts, device=xs.device).cumsum(0).to(torch.int32)
            with torch.profiler.record_function("L:experts gate_up"):
                gu = torch._grouped_mm(xs, self.w13.transpose(-2, -1), offs=offs)
            with torch.profiler.record_function("L:experts act"):
                a = F.silu(gu[:, :inter]) * gu[:, inter:] * ps
            with torch.profiler.record_function("L:experts down"):
                return torch._grouped_mm(a, self.w2.transpose(-2, -1), offs=offs)
        with torch.profiler.record_function("L:experts gate_up"):
            gu = LoopedGmm.apply(xs, self.w13, counts, self.streams)  # type: ignore[no-untyped-call]
        with torch.profiler.record_function("L:experts act"):
            a = F.silu(gu[:, :inter]) * gu[:, inter:] * ps
        with torch.profiler.record_function("L:experts down"):
            out: torch.Tensor = LoopedGmm.apply(  # type: ignore[no-untyped-call]
                a, self.w2, counts, self.streams)
            return out

    def moe(self, x: torch.Tensor, router: str, variant: str) -> torch.Tensor:
        d = self.d
        b, s, h = x.shape
        with torch.profiler.record_function("L:mlp_norm"):
            hn = rms(x, self.n2, d.eps).view(b * s, h)
        with torch.profiler.record_function("L:router"):
            ids, probs = self.route(hn, router)
            # EP-8-equivalent: this rank's experts receive every row (ids folded onto local)
            ids = ids % self.local
        with torch.profiler.record_function("L:permute"):
            flat = ids.reshape(-1)
            order = torch.argsort(flat, stable=True)
            tok = order // d.topk
            xs = hn.index_select(0, tok)
            ps = probs.reshape(-1, 1).index_select(0, order)
        # counts are static for the fake gate; the topk router needs a host sync (as the
        # grouped_gemm batch_sizes on host)
        counts = torch.bincount(flat, minlength=self.local).tolist()
        y = self.experts(xs, ps, counts, variant)
        with torch.profiler.record_function("L:unpermute"):
            out = torch.zeros_like(hn).index_add_(0, tok, y.to(hn.dtype))
        with torch.profiler.record_function("L:mlp_residual"):
            return x + out.view(b, s, h)

    def forward(self, x: torch.Tensor, router: str, variant: str) -> torch.Tensor:
        return self.moe(self.attention(x), router, variant)


def classify(name: str) -> str:
    """Kernel group by name: gemm / attention / elementwise (everything else)."""
    n = name.lower()
    if "flash" in n or "fmha" in n or "attention" in n:
        return "attention"
    if any(s in n for s in ("gemm", "cutlass", "xmma", "sm90_", "sm80_", "cublas", "nvjet")):
        return "gemm"
    return "elementwise"


def _launchers(evt: Any) -> tuple[str | None, str | None]:
    """The innermost ``L:`` forward label and autograd node above a CPU op (same thread)."""
    label, node, par = None, None, evt
    while par is not None:
        if label is None and par.name.startswith("L:"):
            label = par.name[2:]
        if node is None and par.name.startswith("autograd::engine"):
            node = par.name.split(": ")[-1]
        par = par.cpu_parent
    return label, node


def profile_step(step: Any, out_dir: str, case: str) -> dict[str, float]:
    """One profiled step. From the device events: µs per kernel group (gemm / attention /
    elementwise; kernel-time sums, so kernels overlapping on the 4 expert streams each count)
    and per stream (``stream:<id>``). From each CPU op's kernels (``FunctionEvent.kernels``,
    the kernels whose launch correlates to that op): µs per launcher (``fwd:<label>`` under a
    ``L:`` range, ``bwd:<autograd node>`` in the backward) and one row per kernel in
    ``DIR/moe_layer_kernels.jsonl`` (case, name, us, group, label, bwd_node, op)."""
    from torch.profiler import ProfilerActivity, profile

    on_gpu = torch.cuda.is_available()
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if on_gpu else [ProfilerActivity.CPU]
    step()
    if on_gpu:
        torch.cuda.synchronize()
    with profile(activities=acts) as prof:
        step()
        if on_gpu:
            torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA  # type: ignore[attr-defined]
    groups: dict[str, float] = defaultdict(float)
    events = prof.events()
    for evt in events:
        if evt.device_type == cuda:
            us = evt.time_range.elapsed_us()
            groups[classify(evt.name)] += us
            groups[f"stream:{getattr(evt, 'device_resource_id', None)}"] += us
    lines = []
    try:
        for evt in events:
            if evt.device_type == cuda or not getattr(evt, "kernels", None):
                continue
            label, node = _launchers(evt)
            for k in evt.kernels:
                us = float(k.duration)
                groups[f"bwd:{node}" if node else f"fwd:{label}"] += us
                lines.append({"case": case, "name": str(k.name)[:200], "us": us,
                              "group": classify(str(k.name)), "label": label,
                              "bwd_node": node, "op": evt.name})
    except Exception as exc:  # noqa: BLE001 - attribution is a bonus; keep the totals
        lines.append({"case": case, "error": f"{type(exc).__name__}: {exc}"[:400]})
    with open(os.path.join(out_dir, "moe_layer_kernels.jsonl"), "a") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return dict(groups)


def priced(micro: int, ep: int, router: str, hw: str) -> dict[str, Any]:
    """One layer's rows of ``estimate(..., modules="automodel")``, µs: the AutoModel row's
    settings (DeepEP dispatcher at EP > 1) without recompute or optimizer, collective rows
    dropped (this script runs no communication; DeepEP's layout / multihot and the chunk
    sorts stay priced, so compare row by row)."""
    import roofline as rl

    e = rl.transformer.estimate(
        MODEL, "train", micro, seq_len=4096, hardware=hw, ep=ep, dp=ep,
        modules="automodel", moe_router=router, recompute="none", optimizer_update=False,
        moe_dispatcher="deepep" if ep > 1 else "alltoall")
    times = e.columns["time_s"]
    rows = {}
    groups: dict[str, float] = defaultdict(float)
    for (grp, name, kind), t in zip(e.rows, times, strict=True):
        if grp != 0 or kind == "collective":
            continue
        rows[name] = round(float(t) * 1e6, 1)
        groups["attention" if kind == "attention" else kind] += float(t) * 1e6
        groups["fwd" if not name.endswith(" bwd") else "bwd"] += float(t) * 1e6
    return {"rows": rows, "groups": {k: round(v, 1) for k, v in groups.items()}}


def hardware_name() -> str:
    if not torch.cuda.is_available():
        return "H100 SXM"
    n = torch.cuda.get_device_name()
    return "H200" if "H200" in n else "B200" if "B200" in n else "H100 SXM"


def run_case(out: Out, args: Any, d: Dims, micro: int, ep: int, router: str,
             variant: str) -> None:
    dev = "cuda" if not args.dry_run else "cpu"
    case = f"mb{micro}_ep{ep}_{router}_{variant}"
    local = d.experts // ep
    layer = Layer(d, local, dev, torch.bfloat16)
    x = torch.randn(micro, d.seq, d.hidden, device=dev, dtype=torch.bfloat16,
                    requires_grad=True)
    gy = torch.randn_like(x)

    def fwd() -> None:
        with torch.no_grad():
            layer.forward(x, router, variant)

    def step() -> None:
        torch.autograd.backward(layer.forward(x, router, variant), gy)
        for p in [*layer.params(), x]:
            p.grad = None

    if args.dry_run:
        step()
        t = time_step(step, warmup=1, repeats=2)
        tf = time_step(fwd, warmup=1, repeats=2)
        groups = profile_step(step, args.out, case)  # CPU: no kernels, exercises the code
    else:
        t_end = time.perf_counter() + args.settle_s
        while time.perf_counter() < t_end:
            step()
        torch.cuda.synchronize()
        t = time_step(step, warmup=2, target_s=1.0, max_repeats=30)
        tf = time_step(fwd, warmup=2, target_s=0.5, max_repeats=30)
        groups = profile_step(step, args.out, case)
    pr = priced(micro, ep, router, hardware_name())
    meas = {k: round(v, 1) for k, v in groups.items() if ":" not in k}
    by_launcher = {k: round(v, 1) for k, v in sorted(groups.items(), key=lambda kv: -kv[1])
                   if ":" in k}
    meas["fwd+bwd"] = round(t["gpu_s"] * 1e6, 1)
    meas["fwd"] = round(tf["gpu_s"] * 1e6, 1)
    pg = pr["groups"]
    pg["fwd+bwd"] = round(pg.get("fwd", 0.0) + pg.get("bwd", 0.0), 1)
    # the AutoModel row runs recompute="full": forward, recomputed forward, backward
    meas["fwd+rc+bwd"] = round(meas["fwd+bwd"] + meas["fwd"], 1)
    pg["fwd+rc+bwd"] = round(pg["fwd+bwd"] + pg.get("fwd", 0.0), 1)
    out.row(name=case, micro_batch=micro, seq=d.seq, ep_equiv=ep, local_experts=local,
            router=router, variant=variant, hardware=hardware_name(),
            measured_us=meas, priced_us=pg, priced_rows=pr["rows"],
            measured_by_launcher_us=by_launcher,
            wall_s=t["wall_s"], repeats=t["repeats"],
            peak_mem_gb=(torch.cuda.max_memory_allocated() / 2**30
                         if torch.cuda.is_available() else None))
    print(f"## {case}: group, measured us, priced us")
    for g in ("gemm", "attention", "elementwise", "fwd", "fwd+bwd", "fwd+rc+bwd"):
        print(f"   {g:12s} {meas.get(g, float('nan')):12.1f} {pg.get(g, float('nan')):12.1f}")
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("--dry-run", action="store_true", help="tiny shapes on CPU")
    ap.add_argument("--settle-s", type=float, default=2.0, help="clock-settling run, s")
    args = ap.parse_args()
    if not args.dry_run and not torch.cuda.is_available():
        raise SystemExit("moe_layer.py: no CUDA device (use --dry-run on CPU)")
    d = TINY if args.dry_run else Dims()
    out = Out(args.out, "moe_layer")
    # (micro-batch, EP-equivalent, router, experts variant); most informative first
    cases = [(4, 8, "fake_balanced", "looped"), (4, 1, "fake_balanced", "looped"),
             (4, 8, "fake_balanced", "grouped_mm"), (1, 8, "fake_balanced", "looped"),
             (4, 8, "topk", "looped"), (1, 1, "fake_balanced", "grouped_mm")]
    for micro, ep, router, variant in cases:
        name = f"mb{micro}_ep{ep}_{router}_{variant}"
        out.guarded(name, functools.partial(run_case, out, args, d, micro, ep, router, variant))


if __name__ == "__main__":
    main()
