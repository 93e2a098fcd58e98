"""Per-kernel budget of one GPT-OSS-120B training micro-batch as the model prices it (#24).

For a published job row (default: the Megatron-Bridge 25.11 GB200 GPT-OSS-120B bf16 row,
EP64, TP1, MBS 1, 8192 tokens), prints every priced op of the busiest stage's layers: time
per layer (forward and backward), the rate it runs at (TFLOP/s for GEMMs and attention, GB/s
for memory-bound rows and collectives), the milliseconds it adds to one micro-batch, and the
Megatron-Core 92c8482 / Transformer Engine 2.9 kernel (or kernels) it stands for, read from
their source (hardware-notes "GPT-OSS-120B kernel budget"). The total is compared with the
micro-batch time the measurement implies. Nothing here is fitted. Run:
``PYTHONPATH=python python benchmarks/gptoss_kernel_budget.py [row id]``.
"""

from __future__ import annotations

import sys
from typing import Any

from train_moe_breakdown import job_row

from roofline.validation.jobs import job_estimate

#: What each priced row stands for in Megatron-Core 92c8482 / TE 2.9 (the forward; " bwd"
#: rows are the autograd of the same module).
LAUNCHED = {
    "attn_norm": "TELayerNormColumnParallelLinear: TE rmsnorm_fwd (fused into the QKV module)",
    "qkv_proj": "same module: cuBLAS GEMM, bias in the epilogue (add_bias_linear)",
    "mcore qkv split (q reshape; grads cat)": "get_query_key_value_tensors: query reshape copy "
             "(GQA); SplitAlongDim.backward cat of dq / dk / dv",
    "rope (yarn, unfused)": "rope_utils._apply_rotary_pos_emb_bshd on q and k (mscale 1.347)",
    "attention": "TE FusedAttention, cuDNN F16_arbitrary_seqlen, learnable sinks, causal",
    "attention (sliding 128)": "same, diagonal band (128, 0): masked tiles skipped",
    "o_proj": "TERowParallelLinear: cuBLAS GEMM, bias returned (skip_bias_add)",
    "attn_proj bias (unfused bda)": "bias_dropout_add unfused (bias_dropout_fusion=False)",
    "attn_residual": "residual add of the same bias_dropout_add",
    "mlp_norm": "pre_mlp_layernorm: TENorm (te.pytorch.RMSNorm)",
    "router": "TopKRouter.gating: general_gemm bf16 (2880 x 128)",
    "topk": "fused_topk_with_score_function (softmax after top-4; RandomSTE logits)",
    "permute": "moe_permute_with_probs (TE fused permute, 4 rows per token)",
    "dispatch all_to_all": "NCCL all_to_all_single over EP64 (tokens, bf16)",
    "dispatch probs all_to_all": "NCCL all_to_all_single over EP64 (probabilities, fp32)",
    "sort chunks by expert": "sort_chunks_by_idxs (TE fused)",
    "experts gate_up": "TE GroupedLinear fc1: one cuBLAS GEMM per local expert (2), bias fused",
    "experts act clamp (unfused)": "weighted_bias_quick_geglu_impl: eager clamp / clamp / cat",
    "experts act": "weighted quick-GEGLU (torch.compile kernel)",
    "experts down": "TE GroupedLinear fc2: one cuBLAS GEMM per expert, skip_bias_add",
    "experts fc2 bias (unfused)": "TEGroupedMLP._apply_bias: t + b*p in fp32 per expert, cat",
    "unsort chunks": "sort_chunks_by_idxs back (TE fused)",
    "combine all_to_all": "NCCL all_to_all_single over EP64",
    "moe weighted sum": "moe_unpermute (TE fused, probabilities applied)",
    "mlp_residual": "residual add after the MoE layer",
    "embedding": "VocabParallelEmbedding lookup",
    "final_norm": "final TENorm",
    "lm_head": "output_layer ColumnParallelLinear (bf16, 201,088 columns)",
    "cross_entropy": "TE parallel_cross_entropy (cross_entropy_fusion_impl='te')",
}


def budget(rid: str = "mbridge2511_gb200_gptoss120b_bf16") -> dict[str, Any]:
    """The row's priced ops: ``rows`` of (group kind, op, kind, seconds per layer, rate text,
    ms per micro-batch), their ``total_ms``, the micro-batch time the measurement implies
    (``implied_ms``) and the step's other terms per micro-batch (``other_ms``)."""
    row = job_row(rid, "budget")
    c = row["config"]
    est = job_estimate(row)
    pred = est.step.tokens_per_s / est.step.gpus  # price_job's figure
    step = est.step
    micro = c.get("grad_accum", 1)
    rows = []
    cols = est.columns
    for i, (g, name, kind) in enumerate(est.rows):
        gkind, layers = est.groups[g]
        t = float(cols["time_s"][i])
        flops, nbytes = float(cols["flops"][i]), float(cols["bytes"][i])
        if kind in ("gemm", "linear", "attention") and flops > 0:
            rate = f"{flops / t / 1e12:7.0f} TFLOP/s"
        else:
            rate = f"{nbytes / t / 1e9:8.0f} GB/s" if t > 0 else ""
        rows.append((gkind, name, kind, t, rate, t * max(len(layers), 1) * 1e3))
    return {"row": row, "pred": pred, "rows": rows,
            "total_ms": sum(r[-1] for r in rows),
            "implied_ms": step.time_s * pred / row["measured"] / micro * 1e3,
            "other_ms": {"host": step.host_s / micro * 1e3,
                         "exposed DP comm": step.exposed_comm_s / micro * 1e3,
                         "optimizer": step.optimizer_s / micro * 1e3}}


def main() -> None:
    rid = sys.argv[1] if len(sys.argv) > 1 else "mbridge2511_gb200_gptoss120b_bf16"
    b = budget(rid)
    row, c = b["row"], b["row"]["config"]
    print(f"{rid}: {row['hardware']}, {c.get('micro_batch')} x {c.get('seq_len')} tokens per "
          f"micro-batch; measured {row['measured']:.0f}, predicted {b['pred']:.0f} tokens/s/GPU")
    print(f"{'group':12s} {'op':38s} {'us/layer':>9s} {'rate':>14s} {'ms/mb':>7s}  launched")
    for gkind, name, _kind, t, rate, ms in b["rows"]:
        what = "" if name.endswith(" bwd") else LAUNCHED.get(name, "")
        print(f"{gkind:12s} {name:38s} {t * 1e6:9.1f} {rate:>14s} {ms:7.2f}  {what}")
    other = ", ".join(f"{k} {v:.1f}" for k, v in b["other_ms"].items())
    print(f"priced GPU time per micro-batch {b['total_ms']:.1f} ms; the step's other terms "
          f"per micro-batch: {other} ms; the measurement implies {b['implied_ms']:.1f} ms")


if __name__ == "__main__":
    main()
