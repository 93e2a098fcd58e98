"""Training activations as the frameworks keep them (issue #24): one layer's saved bytes derived
by hand from what each module saves for its backward, and every published training row fits
its GPU.

A layer's bytes are the difference of the activations of a 2-layer and a 1-layer model
(``pp = 1``, one micro-batch held): the head and the embedding cancel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import roofline as rl
from roofline.transformer.program import TE_SAVED_BYTES, Program
from roofline.validation.jobs import JOBS_FILE, job_estimate, read_jobs

T = rl.transformer


def _layer_bytes(model: str, **kw: Any) -> float:
    base = T.config(model)
    a = [T.estimate(base.replace(num_layers=n), "train", optimizer_update=False, **kw)
         .memory["activations_bytes"] for n in (1, 2)]
    return a[1] - a[0]


LLAMA405 = dict(hardware="GB200", seq_len=8192, micro_batch=1, tp=4, sequence_parallel=True)


def test_te_fp8_layer_under_sequence_parallelism() -> None:
    # Llama-3.1-405B, TP4 + SP, Float8CurrentScaling: per token (h/t = 4096, ffn/t = 13312,
    # 32 query heads, 2 KV heads of 128 on this rank), bytes:
    #   LayerNormLinear qkv: norm input 2·4096 (local) + quantized ln_out 1·4096 (local)
    #   attention: q 2·4096, k, v 2·2·256, output 2·4096, logsumexp 4·32
    #   proj: its fp8 input 1·4096
    #   LayerNormLinear fc1: 2·4096 + 1·4096;  SwiGLU input 2·2·13312;  fc2 fp8 input 13312
    # residual adds and RoPE keep nothing (Korthikanti et al.'s 34·s·b·h/t order without
    # dropout masks: 112,768 B per token against their 34·16384/4 = 139,264)
    per_token = (2 * 4096 + 4096) + (2 * 4096 + 2 * 512 + 2 * 4096 + 4 * 32) + 4096 \
        + (2 * 4096 + 4096) + 2 * 2 * 13312 + 13312
    assert per_token == 112768
    got = _layer_bytes("Llama-3.1-405B", linear_recipe="tensorwise_te", **LLAMA405)
    assert got == pytest.approx(8192 * per_token, rel=1e-12)


def test_te_bf16_output_projection_keeps_the_attention_output() -> None:
    # bf16: TE's Linear saves the tensor it is given (cast_if_needed returns it), so the
    # attention's output is held once, by the projection; ln_out, proj and fc2 inputs in bf16
    per_token = (2 * 4096 + 2 * 4096) + (2 * 4096 + 2 * 512 + 4 * 32) + 2 * 4096 \
        + (2 * 4096 + 2 * 4096) + 2 * 2 * 13312 + 2 * 13312
    assert per_token == 130176
    got = _layer_bytes("Llama-3.1-405B", **LLAMA405)
    assert got == pytest.approx(8192 * per_token, rel=1e-12)


def test_eager_pytorch_layer_keeps_shared_inputs_once() -> None:
    # Llama-3.1-8B (h 4096, 32 heads and 8 KV heads of 128, ffn 14336) as eager PyTorch runs
    # it (runtime="hf"): the norm's input; q, k, v projections read one tensor (kept once);
    # SDPA keeps q, k, v, its output and the fp32 logsumexp; o_proj its own (transposed
    # copy) input; the MLP norm's input; gate / up their shared input; silu its input,
    # the product both factors, down_proj its input. Elements per token, bf16:
    h, kv, ffn, heads = 4096, 8 * 128, 14336, 32
    per_token = 2 * (h + h + (h + 2 * kv + h + 2 * heads) + h + h + h + ffn + 2 * ffn + ffn)
    got = _layer_bytes("Llama-3.1-8B", hardware="H100 SXM", seq_len=2048, micro_batch=1,
                       runtime="hf")
    assert got == pytest.approx(2048 * per_token, rel=1e-12)


def test_te_linears_save_their_quantized_input() -> None:
    ops = Program(train=True, recipe="mxfp8_te")
    ops.linear(0, "fc", 64, 128, 256)
    # 1 byte + one E8M0 scale per 32 elements, in 2-byte elements
    assert ops.saved[0] == pytest.approx(64 * 128 * (1 + 1 / 32) / 2)
    assert TE_SAVED_BYTES["tensorwise_te"] == 1.0
    torchao = Program(train=True, recipe="tensorwise")  # Float8Linear keeps the bf16 input
    torchao.linear(0, "fc", 64, 128, 256)
    assert torchao.saved[0] == 64 * 128
    # a grouped linear's quantize kernels save nothing: the quantized inputs are the
    # GroupedLinear's, counted once there
    ops = Program(train=True, recipe="mxfp8_te")
    ops.grouped_quantize(0, "experts quantize", (10, 20), (128, 64), (128, 128))
    assert ops.saved.get(0, 0.0) == 0.0
    ops.grouped_linear(0, "experts gate_up", (10, 20), 128, 128)
    assert ops.saved[0] == pytest.approx(30 * 128 * (1 + 1 / 32) / 2)


def test_column_parallel_input_is_local_under_te_modules() -> None:
    te = Program(train=True, recipe=None, te_modules=True)
    te.linear(0, "qkv_proj", 64, 128, 256, cat="col")
    assert te.saved_by[0, "rep"] == 64 * 128  # divided by tp under sequence parallelism
    torch = Program(train=True, recipe=None)
    torch.linear(0, "qkv_proj", 64, 128, 256, cat="col")
    assert torch.saved_by[0, "other"] == 64 * 128  # the all-gathered input autograd keeps


def test_mla_up_proj_frees_the_attention_inputs() -> None:
    # DeepSeek-V3 layer, bf16, ep 8: qkv_up_checkpoint frees q, k, v (128 heads, q/k 192,
    # v 128) once the attention used them; the up-projections' inputs stay (as the
    # checkpoint's inputs)
    kw: dict[str, Any] = dict(hardware="B200", seq_len=4096, micro_batch=1, ep=8, dp=8)
    cfg = T.config("DeepSeek-V3").replace(num_layers=4, dense_layers=(), mtp_layers=0)
    none, mods = (T.estimate(cfg, "train", optimizer_update=False, recompute=r, **kw)
                  .memory["activations_bytes"] for r in ("none", "modules:mla_up_proj"))
    # four layers free them, one layer's are held again while its backward recomputes them
    assert none - mods == pytest.approx(3 * 2 * 4096 * 128 * (192 + 192 + 128), rel=1e-12)


def test_moe_act_and_layernorm_free_what_the_next_module_saved() -> None:
    # Qwen3-30B-A3B (h 2048, expert ffn 768), bf16, 48 layers: layernorm frees the norms'
    # outputs as qkv_proj and the router saved them (t·h each), moe_act fc2's input (the
    # activation's output: rows·768); rows read off the experts' fc1 FLOPs
    kw: dict[str, Any] = dict(hardware="B200", seq_len=4096, micro_batch=1, ep=8, dp=8,
                              optimizer_update=False)
    none = T.estimate("Qwen3-30B-A3B", "train", **kw)
    mods = T.estimate("Qwen3-30B-A3B", "train", recompute="modules:layernorm,moe_act", **kw)
    i = next(i for i, (_, n, _) in enumerate(none.rows) if n == "experts gate_up")
    rows = float(none.columns["flops"][i]) / (2 * 2048 * 2 * 768)
    assert rows == pytest.approx(round(rows))
    drop = (48 - 1) * 2 * (2 * 4096 * 2048 + rows * 768)  # less one layer's, recomputed
    assert none.memory["activations_bytes"] - mods.memory["activations_bytes"] == \
        pytest.approx(drop, rel=1e-12)


def test_mlp_module_frees_the_dense_mlp_internals() -> None:
    # DeepSeek-V3 with 3 dense layers (h 7168, ffn 18432) and 2 MoE layers, bf16, tp 1:
    # recompute_mlp checkpoints the dense MLP on the residual stream (the fused norm's input,
    # kept), freeing fc1's ln_out (t·h), the SwiGLU input (t·2·ffn) and fc2's input (t·ffn);
    # one dense layer's are held again during its backward
    kw: dict[str, Any] = dict(hardware="B200", seq_len=4096, micro_batch=1, ep=8, dp=8,
                              optimizer_update=False)
    cfg = T.config("DeepSeek-V3").replace(num_layers=5, mtp_layers=0)
    none, mlp = (T.estimate(cfg, "train", recompute=r, **kw).memory["activations_bytes"]
                 for r in ("none", "modules:mlp"))
    t, h, ffn = 4096, 7168, 18432
    assert none - mlp == pytest.approx((3 - 1) * 2 * t * (h + 2 * ffn + ffn), rel=1e-12)


def test_moe_permute_keeps_its_row_id_map() -> None:
    # TE's moe_permute keeps an int32 [tokens, 2·experts + 1] row_id_map, the unpermute
    # (no merging probs: Megatron-Core applies them in the experts) the same map
    kw: dict[str, Any] = dict(hardware="B200", seq_len=4096, micro_batch=1, ep=8, dp=8,
                              optimizer_update=False)
    est = T.estimate(T.config("Qwen3-30B-A3B").replace(num_layers=1), "train", **kw)
    one = _layer_bytes("Qwen3-30B-A3B", **{k: v for k, v in kw.items()
                                            if k != "optimizer_update"})
    i = next(i for i, (_, n, _) in enumerate(est.rows) if n == "experts gate_up")
    rows = float(est.columns["flops"][i]) / (2 * 2048 * 2 * 768)
    t, h = 4096, 2048
    per_layer = 2 * (t * h + t * h + t * 36 * 128  # norm in, qkv in, q/k norms' input
                     + t * (32 * 128 + 2 * 4 * 128) + t * 2 * 32  # q, k, v; logsumexp
                     + t * 32 * 128  # proj input (the attention output)
                     + t * h + t * h + t * 128  # MoE norm in, router in, top-k scores
                     + t * (2 * 128 + 1) * 2  # the row_id_map, int32
                     + rows * (h + 2 * 768 + 768))  # experts fc1 in, SwiGLU in, fc2 in
    assert one == pytest.approx(per_layer, rel=1e-12)


@pytest.fixture(scope="module")
def train_memory() -> list[tuple[str, float, float]]:
    out = []
    for r in read_jobs(JOBS_FILE):
        if r["config"].get("api") == "train":
            m = job_estimate(r).memory
            out.append((r["id"], m["total_bytes"], m["capacity_bytes"]))
    return out


def test_every_published_training_row_fits_its_gpu(
        train_memory: list[tuple[str, float, float]]) -> None:
    # every one of them ran
    assert len(train_memory) == 234
    over = [(rid, total / cap) for rid, total, cap in train_memory if not total <= cap]
    assert over == []
    assert np.all(np.isfinite([cap for _, _, cap in train_memory]))
