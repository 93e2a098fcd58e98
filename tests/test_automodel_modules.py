"""``estimate(modules="automodel")``: NeMo AutoModel's TE-backed layer modules
(:mod:`roofline.transformer.automodel`, hardware-notes §50), hand-derived on one
Qwen3-30B-A3B layer (AutoModel's DGX-H100 row: micro-batch 4 x 4096 tokens, EP 8) and one
DeepSeek-V3 MLA layer."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline._errors import ArgumentValueError
from roofline.transformer import config
from roofline.transformer.automodel import (
    AUTOMODEL_MODULE_CALLS,
    automodel_rewrite,
    complex_rope_passes,
    expert_gate_up_bias_passes,
    half_rope_passes,
)
from roofline.transformer.layers import GLU_CLAMP_ROW, record_step
from roofline.transformer.program import Program

T = 4 * 4096  # tokens of one micro-batch on one GPU


def _program(model: str, modules: str, tokens: int = T, batch: int = 4,
             backend: str = "auto") -> Program:
    cfg = config(model)
    ops = Program(train=True, recipe=None)
    record_step(ops, cfg, batch=batch, q=tokens // batch, kv=tokens // batch, tokens=tokens,
                tp=1, ep=8, cp=1, phase="train",
                attn_kw=dict(causal=True, flash=True, backend=backend, dtype="bf16"),
                act_bytes=2.0, lowp=False, skew=0.0)
    if modules == "automodel":
        automodel_rewrite(ops, cfg, tokens, 1)
    return ops


def _rows(ops: Program, g: int = 0) -> dict[str, list[tuple[str, int]]]:
    return {name: parts for gi, name, _, parts in ops.rows if gi == g}


def _elts(ops: Program, parts: list[tuple[str, int]]) -> list[tuple[float, float, float]]:
    return [ops.elts[i] for k, i in parts if k == "elts"]


def test_qwen3_layer_separate_qkv_gemms_and_grad_sum() -> None:
    ops = _program("Qwen3-30B-A3B", "automodel")
    rows = _rows(ops)
    # q_proj 2048 -> 32 x 128 = 4096, k_proj / v_proj 2048 -> 4 x 128 = 512: three GEMMs
    assert [ops.gemms[i] for _, i in rows["qkv_proj"]] == [
        (T, 2048, 4096, 1.0, False), (T, 2048, 512, 1.0, False), (T, 2048, 512, 1.0, False)]
    # backward: each one's dgrad (t x n x 2048) and wgrad (2048 x t x n, A transposed)
    assert [ops.gemms[i] for _, i in rows["qkv_proj bwd"]] == [
        (T, 4096, 2048, 1.0, False), (2048, T, 4096, 1.0, True),
        (T, 512, 2048, 1.0, False), (2048, T, 512, 1.0, True),
        (T, 512, 2048, 1.0, False), (2048, T, 512, 1.0, True)]
    # autograd sums three input gradients: two adds over t x 2048 (read 2, write 1)
    assert _elts(ops, rows["q/k/v dgrad sum bwd"]) == [(T * 2048, 2.0, 1.0)] * 2
    assert "q/k/v dgrad sum" not in rows  # backward only
    # the q / k / v outputs are views: no Megatron-Core split copy
    assert not any(n.startswith("mcore qkv split") for n in rows)
    assert any(n.startswith("mcore qkv split") for n in _rows(_program("Qwen3-30B-A3B", "te")))


def test_qwen3_layer_eager_rope_kernels_and_bytes() -> None:
    ops = _program("Qwen3-30B-A3B", "automodel")
    rows = _rows(ops)
    assert "rope" not in rows and "rope bwd" not in rows
    nq, nk = T * 32 * 128, T * 4 * 128  # 67,108,864 and 8,388,608 elements
    fwd, bwd = _elts(ops, rows["rope (eager)"]), _elts(ops, rows["rope (eager) bwd"])
    assert len(fwd) == 2 * 9 and len(bwd) == 2 * 8  # q then k forward; k then q backward
    # q forward: two cos / sin casts over t x 64 (fp32 -> bf16: read 2, write 1), four
    # products over n/2, a sub and an add over n/2 (read 2), the cat over n
    assert fwd[:9] == [(T * 64, 2.0, 1.0)] * 2 + [
        (nq / 2, 1.0, 1.0), (nq / 2, 1.0, 1.0), (nq / 2, 2.0, 1.0),
        (nq / 2, 1.0, 1.0), (nq / 2, 1.0, 1.0), (nq / 2, 2.0, 1.0), (nq, 1.0, 1.0)]
    moved = sum(e * (r + w) for e, r, w in fwd) * 2  # bytes
    # 9 n per tensor (5 read, 4 written) plus 4 casts of 3 x 2 bytes x t x 64
    assert moved == pytest.approx(9 * (nq + nk) * 2 + 4 * T * 64 * 3 * 2)
    assert moved == pytest.approx(1_384_120_320)
    # backward: neg (n/2), four products (n/2 each), two adds (n/2, read 2), the split's cat
    # (n): 10 n element passes per tensor
    assert sum(e * (r + w) for e, r, w in bwd) * 2 == pytest.approx(20 * (nq + nk))
    assert bwd[8:] == half_rope_passes(nq, T, 64.0)[1]  # k first, then q


def test_qwen3_layer_flops_unchanged_bytes_grow() -> None:
    """Same math as the fused layer: separate GEMMs move the FLOPs between kernels only."""
    kw = dict(hardware="H100 SXM", batch=4, seq_len=4096, ep=8, dp=8, zero=3, fsdp="fsdp2",
              recompute="full", moe_router="fake_balanced", moe_dispatcher="deepep",
              micro_batch=4, grad_accum=16)
    te = rl.transformer.estimate("Qwen3-30B-A3B", "train", **kw)
    am = rl.transformer.estimate("Qwen3-30B-A3B", "train", modules="automodel", **kw)
    assert am.flops == pytest.approx(te.flops, rel=1e-12)
    assert am.totals["bytes"] > te.totals["bytes"]
    assert am.time_s > te.time_s  # more kernels, no fewer bytes


def test_mla_layer_two_down_projections_complex_rope_and_cats() -> None:
    cfg = config("DeepSeek-V3")
    t = 4096
    ops = _program("DeepSeek-V3", "automodel", tokens=t, batch=1)
    g = next(i for i, (gi, n, _, _) in enumerate(ops.rows) if n == "attention (MLA)")
    rows = _rows(ops, ops.rows[g][0])
    # q_a_proj 7168 -> 1536 and kv_a_proj_with_mqa 7168 -> 512 + 64
    assert [ops.gemms[i][:3] for _, i in rows["q_a+kv_a_proj"]] == [
        (t, 7168, 1536), (t, 7168, 576)]
    assert _elts(ops, rows["q_a/kv_a dgrad sum bwd"]) == [(t * 7168, 2.0, 1.0)]
    # complex RoPE on q_pe (t x 128 heads x 64) and k_pe (t x 64): cast, complex mul, cast
    fq, _ = complex_rope_passes(float(t * cfg.num_heads * 64))
    assert _elts(ops, rows["rope (eager)"])[:3] == fq == [
        (t * 128 * 64, 1.0, 2.0), (t * 128 * 64, 2.0, 2.0), (t * 128 * 64, 2.0, 1.0)]
    assert len(_elts(ops, rows["rope (eager)"])) == 6
    # q = cat([q_nope, q_pe]), k = cat([k_nope, k_pe.expand]): t x 128 x 192 each
    assert _elts(ops, rows["mla q/k cat"]) == [(t * 128 * 192, 1.0, 1.0)] * 2
    assert len(_elts(ops, rows["mla q/k cat bwd"])) == 4
    assert ops.module_calls == {(r, b): n for (r, b, mla), n in AUTOMODEL_MODULE_CALLS.items()
                                if mla}


def test_module_calls_follow_the_source_counts() -> None:
    ops = _program("Qwen3-30B-A3B", "automodel")
    # checkpoint wrapper + checkpoint entry + FSDP2 pre-forward + previous post-forward, the
    # input RMSNorm module and its fuser; q / k / v Linears; FakeBalancedGate
    assert ops.module_calls[("attn_norm", False)] == 6.0
    assert ops.module_calls[("qkv_proj", False)] == 3.0
    assert ops.module_calls[("fake gate", False)] == 1.0
    assert ops.module_calls[("qkv_proj", True)] == 2.0
    assert _program("Qwen3-30B-A3B", "te").module_calls == {}


def test_automodel_modules_is_a_megatron_runtime_choice() -> None:
    with pytest.raises(ArgumentValueError, match="modules"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", hardware="H100 SXM", batch=1,
                                seq_len=4096, runtime="hf", modules="automodel")
    with pytest.raises(KeyError, match="modules"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", hardware="H100 SXM", batch=1,
                                seq_len=4096, modules="auto_model")
    # inference: nothing to rewrite (the modules are a training program's)
    a = rl.transformer.estimate("Qwen3-30B-A3B", "prefill", hardware="H100 SXM", batch=1,
                                seq_len=1024, modules="automodel")
    b = rl.transformer.estimate("Qwen3-30B-A3B", "prefill", hardware="H100 SXM", batch=1,
                                seq_len=1024)
    assert a.time_s == b.time_s


def test_mla_model_mlp_split_and_eager_silu() -> None:
    """AutoModel's ``MLP`` (DeepSeek-V3's dense layers and shared expert): gate_proj and
    up_proj as two GEMMs, their input gradients summed, ``F.silu(g) * u`` eager."""
    cfg = config("DeepSeek-V3")
    t = 4096
    ops = _program("DeepSeek-V3", "automodel", tokens=t, batch=1)
    dense = _rows(ops, 0)  # layers 0-2: intermediate 18432
    assert [ops.gemms[i][:3] for _, i in dense["gate_up_proj"]] == [
        (t, 7168, 18432), (t, 7168, 18432)]
    assert [ops.gemms[i][:3] for _, i in dense["gate_up_proj bwd"]] == [
        (t, 18432, 7168), (7168, t, 18432), (t, 18432, 7168), (7168, t, 18432)]
    assert _elts(ops, dense["gate/up dgrad sum bwd"]) == [(t * 7168, 2.0, 1.0)]
    n = t * 18432
    # silu (1 read, 1 write), the product (2, 1); backward two products and silu's: (2, 1)
    assert _elts(ops, dense["act (silu*up)"]) == [(n, 1.0, 1.0), (n, 2.0, 1.0)]
    assert _elts(ops, dense["act (silu*up) bwd"]) == [(n, 2.0, 1.0)] * 3
    g = next(gi for gi, name, _, _ in ops.rows if name == "shared gate_up")
    shared = _rows(ops, g)
    w = cfg.moe_intermediate_size * cfg.num_shared_experts  # 2048
    assert [ops.gemms[i][:3] for _, i in shared["shared gate_up"]] == [(t, 7168, w)] * 2
    assert _elts(ops, shared["shared act"]) == [(t * w, 1.0, 1.0), (t * w, 2.0, 1.0)]
    assert "shared gate/up dgrad sum bwd" in shared
    # the shared MLP's activation is eager: no compiled call (-1 per pass), one more module
    assert ops.module_calls[("shared act", False)] == ops.module_calls[("shared act", True)] == -1
    assert ops.module_calls[("shared gate_up", False)] == 1


# GPT-OSS-20B as AutoModel's DGX-H100 row runs it: micro-batch 2 x 4096 tokens, EP 8, flex
TG = 2 * 4096


def _gptoss(modules: str) -> Program:
    return _program("GPT-OSS-20B", modules, tokens=TG, batch=2, backend="flex")


def test_gptoss_layer_attention_as_gptossattention_runs_it() -> None:
    """One GPT-OSS-20B layer (hidden 2880, 64 query heads and 8 KV heads of 64): separate
    biased q / k / v Linears, AutoModel's own ``_apply_rotary_emb`` in place of
    Megatron-Core's unfused YaRN RoPE, the o_proj bias in TE's epilogue."""
    ops, te = _gptoss("automodel"), _gptoss("te")
    rows, mrows = _rows(ops), _rows(te)
    # q_proj 2880 -> 64 x 64 = 4096, k_proj / v_proj 2880 -> 8 x 64 = 512
    assert [ops.gemms[i] for _, i in rows["qkv_proj"]] == [
        (TG, 2880, 4096, 1.0, False), (TG, 2880, 512, 1.0, False), (TG, 2880, 512, 1.0, False)]
    assert _elts(ops, rows["q/k/v dgrad sum bwd"]) == [(TG * 2880, 2.0, 1.0)] * 2
    # Megatron-Core's rows for GPT-OSS (mscale 1.35: unfused YaRN RoPE; the bias add) go
    for name in ("rope (yarn, unfused)", "attn_proj bias (unfused bda)"):
        assert name in mrows and name not in rows and name + " bwd" not in rows
    assert not any(n.startswith("mcore qkv split") for n in rows)
    # the eager half-RoPE on q (t x 64 x 64) then k (t x 8 x 64), 32 cos / sin per token
    nq, nk = TG * 64 * 64, TG * 8 * 64
    fwd = _elts(ops, rows["rope (eager)"])
    assert fwd[:2] == [(TG * 32, 2.0, 1.0)] * 2  # cos, sin: fp32 -> bf16
    assert fwd == half_rope_passes(nq, TG, 32.0)[0] + half_rope_passes(nk, TG, 32.0)[0]
    # 9 n moved per rotated tensor plus 4 casts of 3 x 2 bytes x t x 32
    assert sum(e * (r + w) for e, r, w in fwd) * 2 == pytest.approx(
        9 * (nq + nk) * 2 + 4 * TG * 32 * 6)
    assert _elts(ops, rows["rope (eager) bwd"]) == (half_rope_passes(nk, TG, 32.0)[1]
                                                    + half_rope_passes(nq, TG, 32.0)[1])
    # FlexAttention's own rows (copies, template, sinks) are untouched
    for name in ("flex q/k/v/o transpose", "attention (flex causal)", "flex sinks rescale"):
        assert rows[name] == mrows[name]
    assert ops.module_calls[("qkv_proj", False)] == 3.0  # Qwen3's block: the same calls


def test_gptoss_layer_experts_biases_and_compiled_quick_geglu() -> None:
    """GroupedExpertsDeepEP with GPT-OSS's expert biases: 4 local experts of 32 at EP 8, each
    receiving 8192 rows (2 x 4096 tokens x top-4 / 32 experts x 8 ranks), gate_and_up width
    2 x 2880."""
    ops, te = _gptoss("automodel"), _gptoss("te")
    rows, mrows = _rows(ops), _rows(te)
    e, n = 8192 * 5760, 4 * 8192 * 5760  # 47,185,920 per expert, 188,743,680
    # t + b per expert, then the cat; backward each bias's row reduction and the split's cat
    assert _elts(ops, rows["experts gate_up bias"]) == [(e, 1.0, 1.0)] * 4 + [(n, 1.0, 1.0)]
    assert _elts(ops, rows["experts gate_up bias bwd"]) == [(e, 1.0, 0.0)] * 4 + [
        (n, 1.0, 1.0)]
    assert expert_gate_up_bias_passes((8192,) * 4, 5760.0) == (
        _elts(ops, rows["experts gate_up bias"]), _elts(ops, rows["experts gate_up bias bwd"]))
    fwd_bytes = sum(x * (r + w) for x, r, w in _elts(ops, rows["experts gate_up bias"])) * 2
    assert fwd_bytes == 8 * n == 1_509_949_440
    names = [name for gi, name, _, _ in ops.rows if gi == 0]
    assert names.index("experts gate_up bwd") < names.index("experts gate_up bias") \
        < names.index("experts act")
    # the compiled quick_geglu_deepep fuses the clamps: no eager clamp row, its saved input
    # (t x 2880 of each half) counted once, by "experts act"
    assert GLU_CLAMP_ROW in mrows and GLU_CLAMP_ROW not in rows
    assert te.saved[0] - ops.saved[0] == pytest.approx(2 * 4 * 8192 * 2880)
    # the output bias with the probabilities is Megatron-Core's _apply_bias: kept
    assert rows["experts fc2 bias (unfused)"] == mrows["experts fc2 bias (unfused)"]
    assert "experts gate_up bias" not in _rows(_program("Qwen3-30B-A3B", "automodel"))


def test_gptoss_flops_unchanged() -> None:
    kw = dict(hardware="H100 SXM", batch=2, seq_len=4096, ep=8, dp=8, zero=3, fsdp="fsdp2",
              recompute="full", moe_router="fake_balanced", moe_dispatcher="deepep",
              attention_backend="flex", micro_batch=2, grad_accum=16)
    te = rl.transformer.estimate("GPT-OSS-20B", "train", **kw)
    am = rl.transformer.estimate("GPT-OSS-20B", "train", modules="automodel", **kw)
    assert am.flops == pytest.approx(te.flops, rel=1e-12)
