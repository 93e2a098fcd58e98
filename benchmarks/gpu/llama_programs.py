"""Real programs on a GPU: an HF Llama (Llama-3-8B dims, few layers) and MoE blocks, timed
and traced with torch.profiler. The evidence for ``roofline.torch.estimate``,
``transformer.estimate(runtime="hf")`` and ``trace.explain`` on whole programs.

Run on the GPU machine (offline; writes rows and traces, never reads the network):
    python3 benchmarks/gpu/llama_programs.py --out DIR [--parts eager,graphs,compiled,float8,moe]

Parts:
- eager: train step (AdamW, bf16 weights), prefill (logits_to_keep=1) and decode steps
  (batch 1/16/64/256, 4096 cached tokens) with DynamicCache (grown by ``torch.cat`` each
  step, cropped back outside the timed call) and StaticCache (max_cache_len = cache + 1, so
  no mask is needed: ``index_copy_`` into the preallocated cache).
- graphs: the StaticCache decode step captured once into a CUDA graph and replayed.
- compiled: the train step and the StaticCache decode step under ``torch.compile``.
- float8: the train step with torchao ``convert_to_float8_training`` (tensorwise, rowwise)
  on every decoder linear (not the LM head), compiled, as torchao's docs run it.
- moe: a Mixtral block and a Qwen3-MoE block as HF runs them, and the same expert math
  through ``torch._grouped_mm`` (tokens sorted by expert, one grouped GEMM per projection).

Each row: ``name``, ``part``, ``config`` (what ran), ``gpu_s`` (median CUDA-event time per
step), ``wall_s`` (host-inclusive time per step), ``trace`` (file under DIR/traces).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, script_parser, time_step, trace  # noqa: E402

CACHE = 4096
SEQ = 4096
DECODE_BATCHES = (1, 16, 64, 256)
PREFILL_BATCHES = (1, 16, 64)
TRAIN_BATCHES = (1, 2)


def llama_config(layers: int) -> Any:
    from transformers import LlamaConfig

    hc = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=layers,
                     num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                     max_position_embeddings=8192, rope_theta=500000.0)
    hc._attn_implementation = "sdpa"
    return hc


def build(hc: Any, dev: str) -> Any:
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    with torch.device(dev):
        model = LlamaForCausalLM(hc).to(torch.bfloat16)
    return model


def fill_dynamic(hc: Any, batch: int, dev: str) -> Any:
    from transformers import DynamicCache

    cache = DynamicCache(config=hc)
    for i in range(hc.num_hidden_layers):
        k = torch.randn(batch, hc.num_key_value_heads, CACHE, 128, dtype=torch.bfloat16,
                        device=dev)
        cache.update(k, torch.randn_like(k), i)
    return cache


def fill_static(hc: Any, batch: int, dev: str) -> Any:
    from transformers import StaticCache

    cache = StaticCache(config=hc, max_cache_len=CACHE + 1)
    for i in range(hc.num_hidden_layers):
        k = torch.randn(batch, hc.num_key_value_heads, CACHE, 128, dtype=torch.bfloat16,
                        device=dev)
        cache.update(k, torch.randn_like(k), i)
    return cache


def capture(step: Callable[[], Any]) -> Callable[[], Any]:
    """``step`` captured into a CUDA graph (after warm-up on a side stream); returns replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    return g.replay


class Runner:
    def __init__(self, out: Out, dev: str, layers: int, small: bool) -> None:
        self.out, self.dev, self.layers, self.small = out, dev, layers, small
        self.traced = True
        self.hc = llama_config(layers)
        if small:  # CPU smoke test of the script itself
            self.hc.hidden_size, self.hc.intermediate_size = 256, 512
            self.hc.num_attention_heads, self.hc.num_key_value_heads = 2, 1
            self.hc.vocab_size = 1000
            self.hc.head_dim = 128
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = build(self.hc, self.dev)
        return self._model

    def config(self, **kw: Any) -> dict[str, Any]:
        return {"model": "LlamaForCausalLM", "hidden": self.hc.hidden_size,
                "intermediate": self.hc.intermediate_size, "layers": self.layers,
                "heads": self.hc.num_attention_heads, "kv_heads": self.hc.num_key_value_heads,
                "vocab": self.hc.vocab_size, "dtype": "bf16", "attn": "sdpa", **kw}

    def record(self, name: str, part: str, step: Callable[[], Any], cfg: dict[str, Any],
               after: Callable[[], Any] | None = None, steps: int = 2, **timing: Any) -> None:
        if self.layers != 2:
            name = f"{name}_L{self.layers}"
        t = time_step(step, after=after, **timing)
        if not self.traced:  # timings only: no profiler session ever runs in this process
            self.out.row(name=name, part=part, config=cfg, **t)
            return
        tr = trace(step, self.out.trace_path(name), steps=steps, after=after)
        self.out.row(name=name, part=part, config=cfg, trace=tr, trace_steps=steps, **t)

    # -- eager -------------------------------------------------------------------------------
    def train(self, batch: int, tag: str = "eager", model: Any = None,
              wrap: Callable[[Any], Any] | None = None, extra: dict[str, Any] | None = None
              ) -> None:
        model = model if model is not None else self.model
        model.train()
        seq = 256 if self.small else SEQ
        ids = torch.randint(0, self.hc.vocab_size, (batch, seq), device=self.dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
        fwd = wrap(model) if wrap is not None else model

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            loss = fwd(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()

        cfg = self.config(phase="train", batch=batch, seq_len=seq, optimizer="AdamW(foreach)",
                          runtime=tag, **(extra or {}))
        self.record(f"llama_train_{tag}_b{batch}", tag, step, cfg, steps=1, target_s=2.0,
                    max_repeats=10)
        model.zero_grad(set_to_none=True)
        model.eval()

    @torch.no_grad()
    def prefill(self, batch: int) -> None:
        from transformers import DynamicCache

        seq = 256 if self.small else SEQ
        ids = torch.randint(0, self.hc.vocab_size, (batch, seq), device=self.dev)

        def step() -> None:
            self.model(input_ids=ids, cache=DynamicCache(config=self.hc), use_cache=True,
                       logits_to_keep=1)

        cfg = self.config(phase="prefill", batch=batch, seq_len=seq, cache="DynamicCache",
                          logits_to_keep=1, runtime="eager")
        self.record(f"llama_prefill_eager_b{batch}", "eager", step, cfg, steps=1,
                    target_s=1.5, max_repeats=20)

    @torch.no_grad()
    def decode_dynamic(self, batch: int) -> None:
        cache = fill_dynamic(self.hc, batch, self.dev)
        ids = torch.randint(0, self.hc.vocab_size, (batch, 1), device=self.dev)

        def step() -> None:
            self.model(input_ids=ids, cache=cache, use_cache=True)

        cfg = self.config(phase="decode", batch=batch, kv_len=CACHE + 1, cache="DynamicCache",
                          runtime="eager")
        # crop(-1) drops the appended token (a view), so every step sees CACHE cached tokens
        self.record(f"llama_decode_dynamic_eager_b{batch}", "eager", step, cfg,
                    after=lambda: cache.crop(-1), steps=3)

    def static_step(self, batch: int, model: Any = None) -> tuple[Callable[[], Any], Any]:
        model = model if model is not None else self.model
        cache = fill_static(self.hc, batch, self.dev)
        ids = torch.randint(0, self.hc.vocab_size, (batch, 1), device=self.dev)
        position_ids = torch.full((batch, 1), CACHE, device=self.dev)

        @torch.no_grad()
        def step() -> Any:
            logits = model(input_ids=ids, cache=cache, position_ids=position_ids,
                           use_cache=True).logits
            # rewind the cache's length counter (one tiny kernel): every step writes slot CACHE
            cache.crop(-1)
            return logits

        return step, cache

    def decode_static(self, batch: int, graph: bool) -> None:
        step, _cache = self.static_step(batch)
        tag = "graph" if graph else "eager"
        if graph:
            step = capture(step)
        cfg = self.config(phase="decode", batch=batch, kv_len=CACHE + 1, cache="StaticCache",
                          max_cache_len=CACHE + 1, runtime=tag)
        self.record(f"llama_decode_static_{tag}_b{batch}", tag, step, cfg, steps=3)

    # -- compiled ----------------------------------------------------------------------------
    def decode_compiled(self, batch: int) -> None:
        torch._dynamo.reset()
        cmodel = torch.compile(self.model, dynamic=False)
        step, _cache = self.static_step(batch, cmodel)
        cfg = self.config(phase="decode", batch=batch, kv_len=CACHE + 1, cache="StaticCache",
                          max_cache_len=CACHE + 1, runtime="compiled")
        self.record(f"llama_decode_static_compiled_b{batch}", "compiled", step, cfg, steps=3)
        gstep = capture(step)
        cfg = dict(cfg, runtime="compiled+graph")
        self.record(f"llama_decode_static_compiledgraph_b{batch}", "compiled", gstep, cfg,
                    steps=3)

    def train_compiled(self, batch: int) -> None:
        torch._dynamo.reset()
        self.train(batch, "compiled", wrap=lambda m: torch.compile(m, dynamic=False))

    def train_float8(self, batch: int, recipe: str) -> None:
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        torch._dynamo.reset()
        model = build(self.hc, self.dev)

        def keep(mod: Any, fqn: str) -> bool:
            return isinstance(mod, torch.nn.Linear) and "lm_head" not in fqn \
                and mod.in_features % 16 == 0 and mod.out_features % 16 == 0

        convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name(recipe),
                                   module_filter_fn=keep)
        self.train(batch, f"float8_{recipe}", model=model,
                   wrap=lambda m: torch.compile(m, dynamic=False),
                   extra={"float8": f"torchao convert_to_float8_training({recipe}), "
                          "decoder linears (not lm_head), torch.compile"})
        del model


# -- MoE -------------------------------------------------------------------------------------
class GroupedExperts(torch.nn.Module):
    """Router + top-k + experts through torch._grouped_mm (tokens sorted by expert)."""

    def __init__(self, hidden: int, inter: int, experts: int, top_k: int, norm_topk: bool
                 ) -> None:
        super().__init__()
        self.top_k, self.experts, self.norm_topk = top_k, experts, norm_topk
        self.router = torch.nn.Linear(hidden, experts, bias=False)
        self.w13 = torch.nn.Parameter(torch.randn(experts, hidden, 2 * inter) * 0.02)
        self.w2 = torch.nn.Parameter(torch.randn(experts, inter, hidden) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        probs = torch.softmax(self.router(x).float(), dim=-1)
        w, idx = torch.topk(probs, self.top_k, dim=-1)
        if self.norm_topk:
            w = w / w.sum(-1, keepdim=True)
        flat = idx.reshape(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=self.experts)
        offs = torch.cumsum(counts, 0).to(torch.int32)
        xs = x[order // self.top_k]
        h = torch._grouped_mm(xs, self.w13, offs=offs)
        g, u = h.chunk(2, dim=-1)
        h = torch.nn.functional.silu(g) * u
        y = torch._grouped_mm(h, self.w2, offs=offs)
        y = y * w.reshape(-1)[order].unsqueeze(-1).to(y.dtype)
        out = torch.zeros_like(x)
        out.index_add_(0, order // self.top_k, y)
        return out.reshape(shape)


def moe(out: Out, dev: str, small: bool) -> None:
    from transformers import MixtralConfig, Qwen3MoeConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

    cases = [
        ("mixtral", MixtralConfig(hidden_size=4096, intermediate_size=14336,
                                  num_local_experts=8, num_experts_per_tok=2),
         MixtralSparseMoeBlock, 4096, 14336, 8, 2, True),
        ("qwen3moe", Qwen3MoeConfig(hidden_size=2048, moe_intermediate_size=768,
                                    num_experts=128, num_experts_per_tok=8, norm_topk_prob=True),
         Qwen3MoeSparseMoeBlock, 2048, 768, 128, 8, True),
    ]
    for tokens in ((256,) if small else (512, 4096, 16384)):
        for name, cfg, cls, hidden, inter, experts, top_k, norm in cases:
            if small:
                hidden, inter = 64, 128
                cfg.hidden_size, cfg.intermediate_size = hidden, inter
                if hasattr(cfg, "moe_intermediate_size"):
                    cfg.moe_intermediate_size = inter
            x = torch.randn(1, tokens, hidden, device=dev, dtype=torch.bfloat16)
            base = {"tokens": tokens, "hidden": hidden, "intermediate": inter,
                    "experts": experts, "top_k": top_k, "dtype": "bf16", "phase": "forward"}

            def hf_case(name: str = name, cfg: Any = cfg, cls: Any = cls, x: Any = x,
                        base: dict[str, Any] = base) -> None:
                torch.manual_seed(0)
                with torch.device(dev):
                    block = cls(cfg).to(torch.bfloat16)
                impl = getattr(cfg, "_experts_implementation", None)
                with torch.no_grad():
                    def step() -> None:
                        block(x)

                    t = time_step(step, target_s=1.0, max_repeats=30)
                    tr = trace(step, out.trace_path(f"moe_{name}_hf_t{x.shape[1]}"), steps=2)
                out.row(name=f"moe_{name}_hf_t{x.shape[1]}", part="moe", trace=tr, trace_steps=2,
                        config=dict(base, module=cls.__name__, experts_implementation=impl),
                        **t)

            def gmm_case(name: str = name, x: Any = x, base: dict[str, Any] = base,
                         hidden: int = hidden, inter: int = inter, experts: int = experts,
                         top_k: int = top_k, norm: bool = norm) -> None:
                with torch.device(dev):
                    block = GroupedExperts(hidden, inter, experts, top_k, norm
                                           ).to(torch.bfloat16)
                for phase in ("forward", "train"):
                    xx = x.detach().requires_grad_(phase == "train")

                    def step(xx: Any = xx, phase: str = phase) -> None:
                        if phase == "train":
                            block(xx).sum().backward()
                        else:
                            with torch.no_grad():
                                block(xx)

                    nm = f"moe_{name}_grouped_mm_{phase}_t{x.shape[1]}"
                    t = time_step(step, target_s=1.0, max_repeats=30)
                    tr = trace(step, out.trace_path(nm), steps=2)
                    out.row(name=nm, part="moe", trace=tr, trace_steps=2,
                            config=dict(base, module="GroupedExperts (torch._grouped_mm)",
                                        phase=phase), **t)

            out.guarded(f"moe_{name}_hf_t{tokens}", hf_case)
            if dev == "cuda":
                out.guarded(f"moe_{name}_grouped_mm_t{tokens}", gmm_case)


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("--parts", default="eager,graphs,compiled,float8,moe")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--small", action="store_true", help="tiny dims (CPU smoke test)")
    ap.add_argument("--no-trace", action="store_true",
                    help="timings only, no profiler in the process (a finished profiler "
                         "session leaves host-bound calls ~2x slower: profiler_effect.py)")
    ap.add_argument("--name", default="programs", help="output file stem (default programs)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    out = Out(args.out, args.name)
    parts = set(args.parts.split(","))
    r = Runner(out, dev, args.layers, args.small)
    r.traced = not args.no_trace
    dec = (1, 4) if args.small else DECODE_BATCHES
    if "eager" in parts:
        for b in (1,) if args.small else TRAIN_BATCHES:
            out.guarded(f"train_eager_b{b}", lambda b=b: r.train(b))
        for b in (1, 2) if args.small else PREFILL_BATCHES:
            out.guarded(f"prefill_b{b}", lambda b=b: r.prefill(b))
        for b in dec:
            out.guarded(f"decode_dynamic_b{b}", lambda b=b: r.decode_dynamic(b))
            out.guarded(f"decode_static_b{b}", lambda b=b: r.decode_static(b, graph=False))
    if "graphs" in parts and dev == "cuda":
        for b in dec:
            out.guarded(f"decode_static_graph_b{b}", lambda b=b: r.decode_static(b, graph=True))
    if "moe" in parts:
        moe(out, dev, args.small)
    if "compiled" in parts:
        for b in (1, 64):
            out.guarded(f"decode_compiled_b{b}", lambda b=b: r.decode_compiled(b))
        out.guarded("train_compiled_b1", lambda: r.train_compiled(1))
    if "float8" in parts and dev == "cuda":
        for recipe in ("tensorwise", "rowwise"):
            out.guarded(f"train_float8_{recipe}_b1",
                        lambda recipe=recipe: r.train_float8(1, recipe))
    with contextlib.suppress(Exception):
        print(torch.cuda.memory_summary(abbreviated=True) if dev == "cuda" else "")


if __name__ == "__main__":
    main()
