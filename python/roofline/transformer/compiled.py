"""The program of ``runtime="compiled"``: a Hugging Face ``*ForCausalLM`` (Llama / Mistral /
Qwen / Mixtral families, transformers 5.x, SDPA attention) under ``torch.compile`` (Inductor,
default mode; ``launch="graph"`` for ``mode="reduce-overhead"``), recorded as registry
:class:`~roofline.ops.registry.Call` records.

What Inductor runs (read from the H200 traces of ``data/programs/h200/``, torch 2.11, and
from what Inductor does: ``torch/_inductor/lowering.py`` lowers aten ops to pointwise /
reduction IR nodes, ``scheduler.py`` fuses nodes that share a loop nest into one Triton kernel,
``mm`` / ``bmm`` / ``_grouped_mm`` and SDPA stay extern kernels (cuBLAS, cuDNN):

- every GEMM is the same cuBLAS ``mm`` eager PyTorch runs (``extern_kernels.mm``);
- the pointwise and reduction ops between two extern kernels fuse into one Triton kernel,
  priced as **one memory pass of its inputs and outputs** (the registry's Triton family):
  the residual ``add`` with the next RMSNorm (fp32 upcast, ``pow``, ``mean``, ``rsqrt``,
  ``mul``, downcast, weight ``mul``: one ``triton_red`` reading the stream and the block
  output, writing their sum and the normed tensor; the first layer's fuses the embedding
  gather), RoPE with its ``cos`` / ``sin`` computed inline from the positions (no rotary table
  kernel), SiLU · up, the StaticCache ``index_copy_`` of the new K / V (AOTAutograd
  functionalizes the mutation of the cache, a graph input, into ``index_copy`` + ``copy_``;
  ``fx_passes/reinplace.py`` turns it back into an in-place scatter: only the new tokens are
  written, no clone of the cache: the trace's ``..._index_copy_...`` kernels take 1-2 µs at
  batch 64), the loss's fp32 log-softmax statistics, and in the backward the SwiGLU, RMSNorm
  and RoPE gradients;
- HF's Python takes its compile branches (transformers 5.24): ``is_torchdynamo_compiling()``
  is True, and before torch 2.14 Dynamo also folds ``torch.compiler.is_exporting()`` to True
  (pytorch#176499), so ``_ignore_causal_mask_sdpa`` never skips the mask: SDPA gets a mask in
  every phase and ``use_gqa_in_sdpa`` is False; decode does not ``pack_gqa`` the query (the
  eager branch, ``q_length == 1 and not is_torchdynamo_compiling()``) but ``repeat_kv``-s K
  and V to every query head: **two Triton copies per layer of the whole cache times the group
  size**. This is the 2.8 ms of the H200 StaticCache step at batch 64 (4097 slots: 4 kernels
  of 700 µs over 64·32·4097·128 elements, each writing 2.15 GB at 3.8 TB/s, of the step's
  5.3 ms), not a copy of the cache; cuDNN then attends over ``num_heads`` full heads under the
  mask (non-causal: the mask carries causality, every key block is computed);
- training: AOTAutograd's min-cut partitioner saves the extern kernels' inputs (the normed
  activations, Q / K / V after RoPE, the attention output and log-sum-exp, the SiLU inputs and
  the SiLU · up product) and the norms' inputs, and recomputes the cheap pointwise chains inside
  the backward's fused kernels (SiLU in its gradient kernel, the norms' ``rsqrt`` in theirs,
  ``cos`` / ``sin`` in RoPE's); the embedding gradient accumulates in fp32 (a zeroed
  ``vocab x hidden`` fp32 buffer, then one kernel converting it to the weight's format); the
  optimizer runs eagerly after the compiled backward.

The mask kernel runs once per layer in decode (Inductor recomputes a cheap pointwise node in
each consumer) and once per step otherwise, as the traces show.
"""

from __future__ import annotations

from typing import Any

from ..ops.registry import Call, TensorArg
from .config import TransformerConfig
from .hf import _ITEM, _linear, _mm, _plain, _row, _t, layer_groups
from .program import Program
from .torch_cp import torch_cp_attention

__all__ = ["fused", "record_compiled_step"]

_TAGS = {"poi": frozenset({"pointwise"}), "red": frozenset({"reduction"})}


def fused(kind: str, ops: str, ins: list[TensorArg], outs: list[TensorArg]) -> Call:
    """One Inductor Triton kernel (``kind`` ``"poi"`` pointwise or ``"red"`` reduction) that
    fused the aten ops ``ops`` names; the registry prices it as one memory pass reading
    ``ins`` and writing ``outs`` (their bytes: ``sum(numel·itemsize)``)."""
    if kind not in _TAGS:
        raise ValueError(f"fused: kind must be 'poi' or 'red', got {kind!r}")
    return Call(f"triton_{kind}_fused_{ops}", tuple(ins), tuple(outs), {}, (), _TAGS[kind])


def _norm(shape: tuple[int, ...], dt: str, train: bool, residual: bool = True
          ) -> tuple[list[Call], list[Call]]:
    """RMSNorm fused with the residual add before it: reads the stream and the block output
    (``residual``) and the weight, writes their sum and the normed tensor (and, for the
    backward, the fp32 ``rsqrt`` per row). Backward: the input gradient (reads the output
    gradients of the GEMMs fed by the norm, summed inside, the saved input, ``rsqrt``, the
    weight and the residual gradient; writes the input gradient) and the weight gradient
    (reads the output gradient and the saved input, writes per-row-block fp32 partial sums,
    then a second kernel sums them)."""
    x, w, r = _t(shape, dt), _t(shape[-1:], dt), _t((*shape[:-1], 1), "fp32")
    ins = [x, x, w] if residual else [x, w]
    outs = [x, x] + ([r] if train else []) if residual else [x] + ([r] if train else [])
    fwd = [fused("red", "add_mean_mul_pow_rsqrt", ins, outs)]
    if not train:
        return fwd, []
    w32 = _t(shape[-1:], "fp32")
    bwd = [fused("red", "add_div_mul_pow_sum", [x, x, x, r, w, x], [x]),
           fused("red", "mul_sum", [x, x], [w32]), fused("red", "sum", [w32], [w])]
    return fwd, bwd


def _attention(ops: Program, g: int, cfg: TransformerConfig, b: int, s: int, kv: int,
               dt: str, train: bool, cache: str, cp: tuple[int, str] = (1, "ring"),
               sdpa: str = "auto") -> None:
    hid, h, kvh, d = cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    t = b * s
    fwd, bwd = _norm((b, s, hid), dt, train)
    _row(ops, g, "attn_norm (+residual)", "elementwise", fwd, bwd, 2 * t * hid, "rep")
    for name, width in (("q_proj", h * d), ("k_proj", kvh * d), ("v_proj", kvh * d)):
        fwd, bwd = _linear(t, hid, width, dt, train)
        _row(ops, g, name, "gemm", fwd, bwd, t * hid)
    q, k = _t((b, s, h, d), dt), _t((b, s, kvh, d), dt)
    pos = _t((s,), "i64")
    new = _t((b, kvh, s, d), dt)
    if cfg.rope or cfg.qk_norm:  # cos / sin from the positions inside the kernel (and the
        # q / k RMSNorm before it); K's kernel also writes the new K into the cache
        kind, name = ("red", "mean_rsqrt_") if cfg.qk_norm else ("poi", "")
        wq = [_t((d,), dt)] if cfg.qk_norm else []
        rope = [fused(kind, name + "cos_mul_neg_sin", [q, pos, *wq], [_t((b, h, s, d), dt)]),
                fused(kind, name + "cos_index_copy_mul_neg_sin", [k, pos, *wq], [new])]
        sq, sk = ([q], [k]) if cfg.qk_norm else ([], [])  # the saved norm inputs
        rope_b = ([fused(kind, name + "cos_mul_neg_sin_slice_backward", [q, *sq, pos, *wq], [q]),
                   fused(kind, name + "cos_mul_neg_sin_slice_backward", [k, *sk, pos, *wq], [k])]
                  if train else [])
        _row(ops, g, "rope", "elementwise", rope, rope_b, t * (h + kvh) * d)
    full = _t((b, kvh, kv, d), dt)
    if cache == "static":  # index_copy_ of the new V (K's is fused into its RoPE kernel)
        _row(ops, g, "kv cache index_copy", "elementwise",
             [fused("poi", "index_copy", [_t((b, s, kvh, d), dt), pos], [new])], [])
    else:  # DynamicCache: the cat lowered to one Triton copy per tensor
        cached = kv - s
        if cached:
            past = _t((b, kvh, cached, d), dt)
            _row(ops, g, "kv cache cat", "elementwise",
                 [fused("poi", "cat", [past, new], [full])] * 2, [])
    if s == 1:  # decode: the mask, rebuilt in each layer's kernel
        _row(ops, g, "attention mask", "elementwise",
             [fused("poi", "arange_le_where", [pos], [_t((b, 1, s, kv), "bf16")])], [])
    keys = full
    if h > kvh:  # repeat_kv: K and V expanded to every query head and made contiguous
        keys = _t((b, h, kv, d), dt)
        back = [fused("poi", "sum", [keys], [full])] * 2 if train else []
        _row(ops, g, "repeat_kv", "elementwise", [fused("poi", "clone_expand", [full], [keys])]
             * 2, back)
    qa = _t((b, h, s, d), dt)
    qkv: dict[str, Any] = {"query": qa, "key": keys, "value": keys, "is_causal": False,
                           "attn_mask": True}
    att = Call("roofline::sdpa", (qa, keys, keys), (qa,), qkv)
    att_b = Call("roofline::sdpa_backward", (qa, keys, keys), (qa, keys, keys), qkv)
    if cp[0] > 1:  # PyTorch's ring SDPA over the context ranks (is_causal, no mask), eager
        torch_cp_attention(ops, g, "attention", batch=b, heads=h, seq=s * cp[0], head_dim=d,
                           v_head_dim=d, ranks=cp[0], method=cp[1], act_bytes=_ITEM[dt],
                           attn_kw=dict(flash=True, dtype=dt, backend=sdpa))
    else:
        _row(ops, g, "attention", "attention", [att], [att_b] if train else [],
             b * (h * s * d + 2 * h * kv * d), "attn_core")
    if train:  # the attention output gradient and the V gradient made contiguous; the K / V
        # returned in the cache (HF's use_cache default) get zeros tangents, as the logits
        o, ov = _t((b, s, h, d), dt), _t((b, s, kvh, d), dt)
        ops.calls_row(g, "attn transpose bwd", "elementwise",
                      [Call("aten::zeros", (), (new,)),
                       Call("aten::zeros", (), (new,)),
                       fused("poi", "clone_transpose", [o], [o]),
                       fused("poi", "clone_transpose", [ov, new], [ov])])
    fwd, bwd = _linear(t, h * d, hid, dt, train)
    _row(ops, g, "o_proj", "gemm", fwd, bwd, t * h * d)


def _dense_mlp(ops: Program, g: int, cfg: TransformerConfig, b: int, s: int, dt: str,
               train: bool) -> None:
    hid, inter, t = cfg.hidden_size, cfg.intermediate_size, b * s
    fwd, bwd = _norm((b, s, hid), dt, train)
    _row(ops, g, "mlp_norm (+residual)", "elementwise", fwd, bwd, 2 * t * hid, "rep")
    for name, k, n in (("gate_proj", hid, inter), ("up_proj", hid, inter)):
        fwd, bwd = _linear(t, k, n, dt, train)
        _row(ops, g, name, "gemm", fwd, bwd, t * hid)
    y = _t((t, inter), dt)
    act_b = [fused("poi", "mul_silu_silu_backward", [y, y, y], [y, y])] if train else []
    _row(ops, g, "silu*up", "elementwise", [fused("poi", "mul_silu", [y, y], [y])], act_b,
         2 * t * inter)
    fwd, bwd = _linear(t, inter, hid, dt, train)
    _row(ops, g, "down_proj", "gemm", fwd, bwd, t * inter)


def _moe_mlp(ops: Program, g: int, cfg: TransformerConfig, b: int, s: int, dt: str) -> None:
    """Mixtral-style experts under Inductor (inference): the router GEMM, its fp32 softmax and
    renormalized top-k (one reduction kernel; ``topk`` and ``sort`` fall back to aten), the
    token gather, two ``_grouped_mm`` extern kernels around the fused SiLU · up, and the
    weighted combine (one reduction kernel: scale, scatter back, sum over the top-k, cast)."""
    hid, e, k, w = (cfg.hidden_size, cfg.num_experts, cfg.experts_per_token,
                    cfg.moe_intermediate_size)
    t = b * s
    fwd, _ = _norm((b, s, hid), dt, False)
    _row(ops, g, "mlp_norm (+residual)", "elementwise", fwd, [], 2 * t * hid, "rep")
    rows = t * k
    l32, top, idx = _t((t, e), "fp32"), _t((t, k), "fp32"), _t((t, k), "i64")
    flat = _t((rows,), "i64")
    router = [_mm(t, hid, e, dt), fused("red", "_softmax_amax_exp_sum", [_t((t, e), dt)], [l32]),
              _plain("topk", [l32], [top, idx]), fused("red", "div_sum", [top], [top])]
    _row(ops, g, "router", "gemm", router, [], t * hid)
    xs, counts = _t((rows, hid), dt), _t((e,), "i32")
    dispatch = [_plain("sort", [flat], [flat, flat]),
                fused("poi", "index_floor_divide", [_t((t, hid), dt), flat], [xs]),
                fused("red", "histc_cumsum", [flat], [counts])]
    _row(ops, g, "experts dispatch", "elementwise", dispatch, [])
    act, gate_up = _t((rows, w), dt), _t((rows, 2 * w), dt)
    _row(ops, g, "experts gate_up", "gemm",
         [_plain("_grouped_mm", [xs, _t((e, hid, 2 * w), dt), counts], [gate_up])], [], rows * hid)
    _row(ops, g, "experts act", "elementwise",
         [fused("poi", "mul_silu", [gate_up], [act])], [], rows * w)
    _row(ops, g, "experts down", "gemm",
         [_plain("_grouped_mm", [act, _t((e, w, hid), dt), counts], [xs])], [], rows * w)
    _row(ops, g, "experts combine", "elementwise",
         [fused("red", "index_mul_sum", [xs, _t((rows,), "fp32"), flat], [_t((t, hid), dt)])],
         [])


def _head(ops: Program, g: int, cfg: TransformerConfig, b: int, s: int, dt: str, phase: str,
          cache: str, kv: int) -> None:
    hid, v = cfg.hidden_size, cfg.vocab_size
    train, t = phase == "train", b * s
    if s > 1:  # the causal mask over the step's keys, built once
        _row(ops, g, "attention mask", "elementwise",
             [fused("poi", "arange_le_where", [_t((s,), "i64")], [_t((b, 1, s, kv), "bf16")])],
             [])
    fwd, bwd = _norm((b, s, hid), dt, train)
    if train:  # the embedding gradient: a zeroed fp32 table, rows added, converted
        tab = _t((v, hid), "fp32")
        bwd = bwd + [fused("poi", "embedding_dense_backward", [], [tab]),
                     fused("poi", "embedding_dense_backward", [tab, _t((t, hid), dt)],
                           [_t((v, hid), dt)])]
    _row(ops, g, "final_norm (+residual)", "elementwise", fwd, bwd, 2 * t * hid, "rep")
    if cache == "static" and s == 1:  # the cache's position counters
        one = _t((1,), "i64")
        ops.calls_row(g, "cache position", "elementwise", [fused("poi", "add_copy", [one], [one])]
                      * 2)
    if not v:
        return
    if phase == "prefill":  # logits of the last token only
        lm = [_plain("bmm", [_t((b, 1, hid), dt), _t((b, hid, v), dt)], [_t((b, 1, v), dt)])]
        _row(ops, g, "lm_head", "gemm", lm, [], b * hid)
        return
    fwd, bwd = _linear(t, hid, v, dt, train)
    _row(ops, g, "lm_head", "gemm", fwd, bwd, t * hid)
    if not train:
        return
    lg, st, tgt = _t((t, v), dt), _t((t, 1), "fp32"), _t((t,), "i64")
    loss = [fused("red", "to_copy_logsumexp", [lg], [st, st]),
            fused("red", "nll_loss_forward", [st, st, tgt], [_t((), "fp32")])]
    # the returned logits get no gradient from loss.backward(): AOTAutograd's runtime wrapper
    # passes a zeros tangent for them (aten's fill), which the loss gradient kernel adds
    loss_b = [Call("aten::zeros", (), (lg,)),
              fused("poi", "log_softmax_backward_nll_loss_backward", [lg, lg, st, st, tgt],
                    [lg])]
    _row(ops, g, "cross_entropy (fp32 stats)", "elementwise", loss, loss_b, t * v)


def record_compiled_step(ops: Program, cfg: TransformerConfig, *, batch: int, q: int, kv: int,
                         phase: str, dtype: str, cache: str = "dynamic",
                         cp: tuple[int, str] = (1, "ring"), sdpa: str = "auto"
                         ) -> list[tuple[str, list[int]]]:
    """Record one layer of each kind and the model-level kernels of a compiled HF step into
    ``ops`` (groups as :func:`roofline.transformer.layers.record_step` returns them);
    ``cache`` is ``"dynamic"`` (``DynamicCache``: its cat lowered to a Triton copy) or
    ``"static"`` (``StaticCache`` of ``kv`` slots). ``cp = (ranks, cp_comm)``, training: the
    ``q`` tokens split over ``ranks`` context ranks (every kernel over ``q / ranks`` local
    tokens) and the attention as PyTorch's ring SDPA (:mod:`.torch_cp`, ``cp_comm`` one of
    its rotaters) run as in eager between the compiled regions: the layer compiled around it
    (RoPE, ``repeat_kv``, projections, norms fused as without it), the ring's SDPA calls,
    merges and rotations as :func:`.torch_cp.torch_cp_attention` prices them (NeMo
    AutoModel's Llama with ``enable_compile`` under ``context_parallel``; whether Dynamo
    traces through the ring's dispatcher, fusing its fp32 merges, is not known here);
    ``sdpa``: the ring's SDPA kernel (``attention_backend``)."""
    train = phase == "train"
    groups = layer_groups(cfg)
    if cp[0] > 1:
        q = kv = q // cp[0]
    for gi, (kind, _) in enumerate(groups):
        _attention(ops, gi, cfg, batch, q, kv, dtype, train, cache, cp, sdpa)
        if kind == "dense":
            _dense_mlp(ops, gi, cfg, batch, q, dtype, train)
        else:
            _moe_mlp(ops, gi, cfg, batch, q, dtype)
    groups.append(("head", []))
    _head(ops, len(groups) - 1, cfg, batch, q, dtype, phase, cache, kv)
    return groups
