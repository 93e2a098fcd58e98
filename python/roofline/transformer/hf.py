"""The program of ``runtime="hf"``: the aten kernels a Hugging Face ``*ForCausalLM`` (Llama /
Mistral / Qwen / Mixtral families, transformers 5.x, SDPA attention) launches in eager PyTorch,
recorded as registry :class:`~roofline.ops.registry.Call` records so that each is priced by
the same entry as when ``roofline.torch.estimate`` meets it in the real module.

What HF runs, per layer: RMSNorm as its fp32 decomposition (``_to_copy``, ``pow``, ``mean``,
``add``, ``rsqrt``, ``mul``, ``_to_copy``, ``mul`` by the weight), separate q / k / v / o
projections, rotary embedding as ``mul`` / ``neg`` / ``cat`` / ``mul`` / ``add`` on Q and K,
the ``DynamicCache`` update (``torch.cat`` of the cached K and V with the new ones: aten's
batched copy, every step) or the ``StaticCache`` one (``index_copy_`` of the new K and V into
the preallocated cache; decode then attends over every slot under a mask, one query token
packed per KV head), SDPA (one fused kernel; GQA without repeating K/V), a ``clone``
of the transposed attention output when more than one token, the SiLU-gated MLP as
``mm`` + ``silu`` + ``mul`` + ``mm`` (Mixtral: router ``mm``, fp32 softmax, ``topk``, token
sort and gather, two ``_grouped_mm``, weighted fp32 sum), residual ``add``s. Model level:
the embedding gather, the rotary table (``cos`` / ``sin`` in fp32), the final norm, the LM
head (prefill: the last token only, a batched product over the sliced hidden state, as
``logits_to_keep=1`` in ``generate`` runs it) and in training the loss in fp32
(``logits.float()``, ``log_softmax``, ``nll_loss``) and the backward of all of it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ops.registry import Call, TensorArg
from .config import TransformerConfig
from .program import Program
from .torch_cp import ROTATIONS, torch_cp_attention

__all__ = ["host_calls", "layer_groups", "record_hf_step"]

_ITEM = {"bf16": 2, "fp16": 2, "fp32": 4, "i64": 8, "i32": 4}
_PW = frozenset({"pointwise"})
_RED = frozenset({"reduction"})


def _t(shape: tuple[int, ...] | list[int], dt: str) -> TensorArg:
    """A contiguous tensor (its strides decide aten's elementwise loop, as on the live path)."""
    dims = tuple(int(s) for s in shape)
    stride, acc = [], 1
    for n in reversed(dims):
        stride.append(acc)
        acc *= n
    return TensorArg(dims, None if dt in ("i64", "i32") else dt, _ITEM[dt],
                     tuple(reversed(stride)))


def _pw(op: str, ins: list[TensorArg], out: TensorArg) -> Call:
    return Call(f"aten::{op}", tuple(ins), (out,), {}, (), _PW)


def _red(op: str, x: TensorArg, out: TensorArg) -> Call:
    return Call(f"aten::{op}", (x,), (out,), {}, (), _RED)


def _plain(op: str, ins: list[Any], outs: list[TensorArg], args: dict[str, Any] | None = None
           ) -> Call:
    return Call(f"aten::{op}", tuple(ins), tuple(outs), dict(args or {}))


def _copy(x: TensorArg, dt: str) -> Call:
    return _plain("_to_copy", [x], [_t(x.shape, dt)])


def _mm(m: int, k: int, n: int, dt: str) -> Call:
    return _plain("mm", [_t((m, k), dt), _t((k, n), dt)], [_t((m, n), dt)])


def _linear(m: int, k: int, n: int, dt: str, train: bool) -> tuple[list[Call], list[Call]]:
    """Forward ``mm`` and, in training, the backward's weight and input gradients."""
    bwd = [_mm(n, m, k, dt), _mm(m, n, k, dt)] if train else []
    return [_mm(m, k, n, dt)], bwd


def _rmsnorm(shape: tuple[int, ...], dt: str, train: bool) -> tuple[list[Call], list[Call]]:
    """HF's ``*RMSNorm``: fp32 upcast, pow, mean, add eps, rsqrt, mul, downcast, weight mul."""
    x, x32 = _t(shape, dt), _t(shape, "fp32")
    r32 = _t((*shape[:-1], 1), "fp32")
    w = _t(shape[-1:], dt)
    fwd = [_copy(x, "fp32"), _pw("pow", [x32], x32), _red("mean", x32, r32),
           _pw("add", [r32], r32), _pw("rsqrt", [r32], r32), _pw("mul", [x32, r32], x32),
           _copy(x32, dt), _pw("mul", [w, x], x)]
    if not train:
        return fwd, []
    bwd = [_pw("mul", [x, w], x), _pw("mul", [x, x], x), _red("sum", x, w),
           _copy(x, "fp32"), _pw("mul", [x32, x32], x32), _pw("mul", [x32, r32], x32),
           _red("sum", x32, r32), _pw("pow", [r32], r32), _pw("mul", [r32], r32),
           _pw("mul", [r32, r32], r32), _pw("div", [x32], x32), _pw("pow", [x32], x32),
           _pw("mul", [x32], x32), _pw("mul", [x32, x32], x32), _pw("add", [x32, x32], x32),
           _copy(x32, dt)]
    return fwd, bwd


def _strided(shape: tuple[int, ...], stride: tuple[int, ...], dt: str) -> TensorArg:
    """A view of ``shape`` with ``stride`` (a slice or a transpose: not contiguous)."""
    return dataclasses.replace(_t(shape, dt), stride=tuple(int(x) for x in stride))


def _heads_view(b: int, h: int, s: int, d: int, dt: str) -> TensorArg:
    """(b, h, s, d) states laid out as the projection wrote them, (b, s, h, d): HF's
    ``view(...).transpose(1, 2)`` (contiguous only when ``s == 1``)."""
    return _strided((b, h, s, d), (s * h * d, d, h * d, 1), dt)


def _rope(b: int, h: int, s: int, d: int, dt: str, train: bool
          ) -> tuple[list[Call], list[Call]]:
    """``q * cos + rotate_half(q) * sin`` on (b, h, s, d). ``rotate_half`` cats ``-x2`` (a
    new tensor) with ``x1``, a slice of ``x`` (not contiguous): aten's generic strided cat."""
    x, half, cs = _t((b, h, s, d), dt), _t((b, h, s, d // 2), dt), _t((1, 1, s, d), dt)
    x1 = _strided((b, h, s, d // 2), (h * s * d, s * d, d, 1), dt)
    fwd = [_pw("mul", [x, cs], x), _pw("neg", [half], half),
           _plain("cat", [(half, x1)], [x]), _pw("mul", [x, cs], x), _pw("add", [x, x], x)]
    if not train:
        return fwd, []
    bwd = [_pw("mul", [x, cs], x), _pw("neg", [half], half),
           _plain("slice_backward", [half], [x]), _plain("slice_backward", [half], [x]),
           _pw("add", [x, x], x), _pw("mul", [x, cs], x), _pw("add", [x, x], x)]
    return fwd, bwd


def _row(ops: Program, g: int, name: str, kind: str, fwd: list[Call], bwd: list[Call],
         saved: float = 0.0, cat: str = "other") -> None:
    ops.calls_row(g, name, kind, fwd, saved, cat)
    if bwd:
        ops.calls_row(g, name + " bwd", kind, bwd)


def _attention(ops: Program, g: int, cfg: TransformerConfig, b: int, s: int, kv: int,
               dt: str, train: bool, cache: str, cp: tuple[int, str] = (1, ""),
               sdpa: str = "auto") -> None:
    """One layer's attention block over ``s`` (local) tokens; ``cp = (ranks, rotater)``
    with ranks > 1: the SDPA as PyTorch's ``context_parallel`` runs it over ``ranks·s``
    tokens (:func:`.torch_cp.torch_cp_attention`)."""
    hid, h, kvh, d = cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    t = b * s
    fwd, bwd = _rmsnorm((b, s, hid), dt, train)
    _row(ops, g, "attn_norm", "elementwise", fwd, bwd, t * hid, "rep")
    for name, width in (("q_proj", h * d), ("k_proj", kvh * d), ("v_proj", kvh * d)):
        fwd, bwd = _linear(t, hid, width, dt, train)
        if train and s > 1:  # the gradient of the transposed projection, made contiguous
            bwd = [_pw("clone", [_t((b, s, width // d, d), dt)], _t((b, s, width // d, d), dt))
                   ] + bwd
        # the three projections read one tensor (the norm's output): autograd keeps it once
        _row(ops, g, name, "gemm", fwd, bwd, t * hid if name == "q_proj" else 0.0)
    if train:  # the q, k, v input gradients summed
        acc = _t((b, s, hid), dt)
        ops.calls_row(g, "qkv grad sum bwd", "elementwise",
                      [_pw("add", [acc, acc], acc), _pw("add", [acc, acc], acc)])
    if cfg.qk_norm:
        fq, bq = _rmsnorm((b, s, h, d), dt, train)
        fk, bk = _rmsnorm((b, s, kvh, d), dt, train)
        _row(ops, g, "qk_norm", "elementwise", fq + fk, bk + bq, t * (h + kvh) * d)
    if cfg.rope:
        fq, bq = _rope(b, h, s, d, dt, train)
        fk, bk = _rope(b, kvh, s, d, dt, train)
        # x·cos + rotate_half(x)·sin: cos / sin need no gradient, so nothing of q, k is kept
        _row(ops, g, "rope", "elementwise", fq + fk, bk + bq, 0.0)
    q = _t((b, h, s, d), dt)
    new, full = _t((b, kvh, s, d), dt), _t((b, kvh, kv, d), dt)
    if cache == "static":  # StaticCache: the new K/V written in place, keys = the whole cache
        idx = _t((s,), "i64")
        put = Call("aten::index_copy_", (full, 2, idx, new), (full,), {"dim": 2})
        _row(ops, g, "kv cache index_copy_", "elementwise", [put, put], [])
        if s == 1 and h > kvh:  # pack_gqa: the query heads of one KV head as its query rows
            q = _t((b, kvh, h // kvh, d), dt)
        elif s > 1 and kv > s:  # a mask over the cache: repeat_kv copies K and V per head
            rep = _t((b, h, kv, d), dt)
            _row(ops, g, "repeat_kv", "elementwise", [_pw("clone", [rep], rep)] * 2, [])
            full = rep
        elif s > 1:  # prefill of an empty cache: no mask, the keys sliced to the prompt
            full = new
        causal = s > 1 and kv == s
    else:  # DynamicCache: torch.cat of the cached K / V with the new ones, every step
        # a generation loop's past is the previous step's cat output (contiguous) and one
        # token's new states are contiguous: the vectorized cat; a prompt's states keep the
        # projection's (b, s, h, d) layout: the generic strided cat
        cached = kv - s
        past = _t((b, kvh, cached, d), dt) if cached else _t((0,), dt)
        cat = _plain("cat", [(past, _heads_view(b, kvh, s, d, dt))], [full], {"dim": -2})
        zeros = [] if cached else [_plain("zeros", [], [_t((0,), dt)])] * 2
        _row(ops, g, "kv cache cat", "elementwise", [cat, cat], zeros if train else [])
        causal = s > 1
    qkv: dict[str, Any] = {"query": q, "key": full, "value": full, "is_causal": causal}
    if cache == "static" and kv > s:  # the mask over the cache's slots
        qkv["attn_mask"] = True
    att = Call("roofline::sdpa", (q, full, full), (q,), qkv)
    att_b = Call("roofline::sdpa_backward", (q, full, full), (q, full, full), qkv)
    if cp[0] > 1:
        torch_cp_attention(ops, g, "attention", batch=b, heads=h, seq=s * cp[0], head_dim=d,
                           v_head_dim=d, ranks=cp[0], method=cp[1], act_bytes=_ITEM[dt],
                           attn_kw=dict(flash=True, dtype=dt, backend=sdpa))
    else:  # SDPA's flash backward reads q, k, v, its output and the fp32 logsumexp
        _row(ops, g, "attention", "attention", [att], [att_b] if train else [],
             b * (h * s * d + 2 * kvh * kv * d + h * s * d + 2 * h * s), "attn_core")
    if s > 1:
        o = _t((b, s, h, d), dt)
        _row(ops, g, "attn transpose", "elementwise", [_pw("clone", [o], o)], [])
    fwd, bwd = _linear(t, h * d, hid, dt, train)
    _row(ops, g, "o_proj", "gemm", fwd, bwd, t * h * d)
    x = _t((b, s, hid), dt)
    _row(ops, g, "attn_residual", "elementwise", [_pw("add", [x, x], x)],
         [_pw("add", [x, x], x)] if train else [])  # add's backward keeps no input


def _dense_mlp(ops: Program, g: int, cfg: TransformerConfig, b: int, s: int, dt: str,
               train: bool) -> None:
    hid, inter, t = cfg.hidden_size, cfg.intermediate_size, b * s
    fwd, bwd = _rmsnorm((b, s, hid), dt, train)
    _row(ops, g, "mlp_norm", "elementwise", fwd, bwd, t * hid, "rep")
    y = _t((b, s, inter), dt)
    fg, bg = _linear(t, hid, inter, dt, train)
    fu, bu = _linear(t, hid, inter, dt, train)
    fd, bd = _linear(t, inter, hid, dt, train)
    _row(ops, g, "gate_proj", "gemm", fg, bg, t * hid)
    _row(ops, g, "act (silu)", "elementwise", [_pw("silu", [y], y)],
         [_pw("silu_backward", [y, y], y)] if train else [], t * inter)
    _row(ops, g, "up_proj", "gemm", fu, bu)  # its input is gate_proj's, kept once
    _row(ops, g, "mul (act*up)", "elementwise", [_pw("mul", [y, y], y)],
         [_pw("mul", [y, y], y)] * 2 if train else [], 2 * t * inter)
    _row(ops, g, "down_proj", "gemm", fd, bd, t * inter)
    x = _t((b, s, hid), dt)
    if train:
        ops.calls_row(g, "gate/up grad sum bwd", "elementwise", [_pw("add", [x, x], x)])
    _row(ops, g, "mlp_residual", "elementwise", [_pw("add", [x, x], x)],
         [_pw("add", [x, x], x)] if train else [])


def _moe_mlp(ops: Program, g: int, cfg: TransformerConfig, b: int, s: int, dt: str) -> None:
    """Mixtral-style experts as transformers 5.x runs them (inference)."""
    hid, e, k, w = (cfg.hidden_size, cfg.num_experts, cfg.experts_per_token,
                    cfg.moe_intermediate_size)
    t = b * s
    fwd, _ = _rmsnorm((b, s, hid), dt, False)
    _row(ops, g, "mlp_norm", "elementwise", fwd, [], t * hid, "rep")
    logits, l32 = _t((t, e), dt), _t((t, e), "fp32")
    top, idx = _t((t, k), "fp32"), _t((t, k), "i64")
    rows = t * k
    router = [_mm(t, hid, e, dt), _copy(logits, "fp32"),
              _plain("_softmax", [l32], [l32], {"self": l32, "dim": -1}),
              _plain("topk", [l32], [top, idx]), _red("sum", top, _t((t, 1), "fp32")),
              _pw("div_", [top, _t((t, 1), "fp32")], top)]
    _row(ops, g, "router", "gemm", router, [], t * hid)
    flat, f32, i32 = _t((rows,), "i64"), _t((rows,), "fp32"), _t((rows,), "i32")
    xs, gate_up = _t((rows, hid), dt), _t((rows, 2 * w), dt)
    counts = _t((e,), "i32")
    dispatch = [_plain("sort", [flat], [flat, flat]), _plain("floor_divide", [flat], [flat]),
                _plain("index", [_t((t, hid), dt), (flat,)], [xs]),
                _plain("index", [f32, (flat,)], [f32]), _copy(flat, "i32"),
                _plain("histc", [i32], [counts]), _plain("cumsum", [counts], [counts])]
    _row(ops, g, "experts dispatch", "elementwise", dispatch, [])
    act = _t((rows, w), dt)
    _row(ops, g, "experts gate_up", "gemm",
         [_plain("_grouped_mm", [xs, _t((e, hid, 2 * w), dt), counts], [gate_up])], [], rows * hid)
    _row(ops, g, "experts act", "elementwise",
         [_pw("silu", [act], act), _pw("mul", [act, act], act)], [], 2 * rows * w)
    _row(ops, g, "experts down", "gemm",
         [_plain("_grouped_mm", [act, _t((e, w, hid), dt), counts], [xs])], [], rows * w)
    y32 = _t((rows, hid), "fp32")
    combine = [_pw("mul", [xs, _t((rows, 1), "fp32")], y32), _plain("arange", [], [flat]),
               _plain("index_put_", [flat, (flat,), flat], [flat]),
               _plain("index", [y32, (flat,)], [y32]),
               _red("sum", y32, _t((t, hid), "fp32")), _copy(_t((t, hid), "fp32"), dt)]
    _row(ops, g, "experts combine", "elementwise", combine, [])
    x = _t((b, s, hid), dt)
    _row(ops, g, "mlp_residual", "elementwise", [_pw("add", [x, x], x)], [])


def _head(ops: Program, g: int, cfg: TransformerConfig, b: int, s: int, dt: str,
          phase: str) -> None:
    hid, v, d = cfg.hidden_size, cfg.vocab_size, cfg.head_dim
    train, t = phase == "train", b * s
    ids = _t((b, s), "i64")
    emb = Call("aten::embedding", (_t((v, hid), dt), ids), (_t((b, s, hid), dt),))
    emb_b = Call("aten::embedding_dense_backward", (_t((b, s, hid), dt), ids),
                 (_t((v, hid), dt),), {"num_weights": v})
    _row(ops, g, "embedding", "elementwise", [emb], [emb_b] if train else [])
    pos, half, full = _t((s,), "i64"), _t((1, s, d // 2), "fp32"), _t((1, s, d), "fp32")
    rotary = [_plain("arange", [], [pos]), _pw("add", [pos], pos),
              _copy(_t((1, s, 1), "i64"), "fp32"), _copy(_t((d // 2,), dt), "fp32"),
              _pw("mul", [_t((1, s, 1), "fp32"), _t((d // 2,), "fp32")], half),
              _plain("cat", [(half, half)], [full]),
              _pw("cos", [full], full), _pw("mul", [full], full), _pw("sin", [full], full),
              _pw("mul", [full], full), _copy(full, dt), _copy(full, dt)]
    if cfg.rope:
        _row(ops, g, "rotary table", "elementwise", rotary, [])
    fwd, bwd = _rmsnorm((b, s, hid), dt, train)
    _row(ops, g, "final_norm", "elementwise", fwd, bwd, t * hid, "rep")
    if not v:
        return
    if phase == "prefill":  # logits of the last token: a batched product over the slice
        lm = [_plain("bmm", [_t((b, 1, hid), dt), _t((b, hid, v), dt)], [_t((b, 1, v), dt)])]
        _row(ops, g, "lm_head", "gemm", lm, [], b * hid)
        return
    fwd, bwd = _linear(t, hid, v, dt, train)
    _row(ops, g, "lm_head", "gemm", fwd, bwd, t * hid)
    if not train:
        return
    lg, l32, tgt = _t((b, s, v), dt), _t((t, v), "fp32"), _t((t,), "i64")
    one = _t((), "fp32")
    loss = [_copy(lg, "fp32"), _plain("constant_pad_nd", [ids], [_t((b, s + 1), "i64")]),
            _pw("clone", [ids], ids),
            _plain("_log_softmax", [l32], [l32], {"self": l32, "dim": 1}),
            Call("aten::nll_loss_forward", (l32, tgt, None, 1, -100), (one, one))]
    loss_b = [Call("aten::nll_loss_backward", (one, l32, tgt, None, 1, -100, one), (l32,)),
              _plain("_log_softmax_backward_data", [l32, l32], [l32],
                     {"grad_output": l32, "dim": 1}),
              _copy(_t((b, s, v), "fp32"), dt)]
    _row(ops, g, "cross_entropy (fp32)", "elementwise", loss, loss_b, 2 * t * v)


def layer_groups(cfg: TransformerConfig) -> list[tuple[str, list[int]]]:
    """The model's layer groups, dense then MoE, each with its layer indices (the groups a
    recorded step prices one layer of)."""
    kinds = cfg.layer_kinds()
    groups: list[tuple[str, list[int]]] = []
    for kind in ("dense", "moe"):
        layers = [i for i, k in enumerate(kinds) if k == kind]
        if layers:
            groups.append((kind, layers))
    return groups


def record_hf_step(ops: Program, cfg: TransformerConfig, *, batch: int, q: int, kv: int,
                   phase: str, dtype: str, cache: str = "dynamic",
                   cp: tuple[int, str] = (1, "ring"), sdpa: str = "auto"
                   ) -> list[tuple[str, list[int]]]:
    """Record one layer of each kind and the model-level kernels of an HF step into ``ops``
    (groups as :func:`roofline.transformer.layers.record_step` returns them); ``cache`` is
    ``"dynamic"`` (``DynamicCache``) or ``"static"`` (``StaticCache`` of ``kv`` slots).
    ``cp = (ranks, cp_comm)``, training: the ``q`` tokens split over ``ranks`` context ranks
    (every kernel over ``q / ranks`` local tokens), the attention as PyTorch's ring SDPA runs
    it (:mod:`.torch_cp`; ``cp_comm`` one of its rotaters; ``sdpa`` its SDPA kernel)."""
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
    _head(ops, len(groups) - 1, cfg, batch, q, dtype, phase)
    if cache == "static" and kv > q:  # the mask over the cache's slots
        m = _t((batch, 1, q, kv), dtype)
        ops.calls_row(len(groups) - 1, "attention mask", "elementwise",
                      [_pw("where", [m], m)])
    ops.host_extra = host_calls(cfg, groups, cache)
    return groups


def host_calls(cfg: TransformerConfig, groups: list[tuple[str, list[int]]], cache: str
               ) -> dict[int, tuple[float, float]]:
    """Host calls of HF's Python that launch no kernel, per layer of each group and once for
    the head: (views, ``nn.Module`` calls).

    Counted by ``roofline.torch.estimate`` on the real transformers 5.x ``LlamaForCausalLM``
    (the same count at 1, 2 and 3 layers, decode, prefill and train): a decoder layer makes
    13 module calls (the layer, its two RMSNorms, attention with q/k/v/o projections, the MLP
    with gate/up/down projections and the activation; Qwen3's q/k norms add 2) and 16 views
    (q/k/v ``view`` + ``transpose``, rotary ``unsqueeze`` and ``rotate_half`` slices, the
    output ``transpose`` / ``reshape``; a StaticCache adds 1); the model level makes 6
    module calls (the causal LM, the model, embedding, rotary embedding, final norm, LM head)
    and 3 views (a StaticCache's mask and positions: 7). An MoE layer's block replaces the
    MLP's 4 module calls by 3 (block, router, experts).
    """
    out: dict[int, tuple[float, float]] = {}
    for g, (kind, _) in enumerate(groups):
        if kind == "head":
            out[g] = (7.0 if cache == "static" else 3.0, 6.0)
            continue
        modules = 13.0 + (2.0 if cfg.qk_norm else 0.0) - (1.0 if kind == "moe" else 0.0)
        out[g] = (16.0 + (1.0 if cache == "static" else 0.0), modules)
    return out


def check_hf(fn: str, cfg: TransformerConfig, phase: str, *, tp: int, ep: int,
             cp: tuple[int, str], recipe: str | None, flash: bool, kv_dtype_bytes: float,
             act_bytes: float, runtime: str = "hf", sdpa: str = "auto") -> None:
    """Raise NotImplementedError for what the HF program (``runtime``: ``"hf"`` eager or
    ``"compiled"``) does not model; ``cp = (ranks, cp_comm)``: training takes PyTorch's
    context parallelism (``cp_comm`` one of :data:`.torch_cp.ROTATIONS`), eager or compiled;
    ``sdpa`` (``attention_backend``) other than ``"auto"`` picks that ring's SDPA kernel only."""
    missing = []
    if tp > 1 or ep > 1:
        missing.append("tensor / expert parallelism (HF eager runs one GPU)")
    if cp[0] > 1 and cp[1] not in ROTATIONS:
        missing.append("context parallelism other than PyTorch's ring SDPA "
                       "(cp_comm='all_gather' or 'all_to_all')")
    if sdpa != "auto" and cp[0] <= 1:
        missing.append("an SDPA kernel choice outside context parallelism (attention_backend "
                       "picks the ring SDPA's kernel)")
    if recipe is not None:
        missing.append("float8 linear recipes")
    if not flash:
        missing.append("materialized attention (flash=False)")
    if kv_dtype_bytes != act_bytes:
        missing.append("a KV cache format other than the activations'")
    if cfg.is_mla:
        missing.append("multi-head latent attention (DeepSeek's modeling code)")
    if cfg.norm != "rmsnorm" or not cfg.mlp_gated:
        missing.append("LayerNorm / ungated MLPs (GPT-2-style modeling code)")
    if cfg.is_moe and (phase == "train" or cfg.num_shared_experts or cfg.dense_layers):
        missing.append("MoE training and shared experts / dense layers in MoE models")
    if missing:
        raise NotImplementedError(f"{fn}: runtime={runtime!r} does not model "
                                  + "; ".join(missing)
                                  + " yet")
