"""vLLM's Triton fused_moe on H100 against the model: Mixtral-8x7B's experts at TP 2 (#24).

Published kernel times: vLLM PR #24700 (mgoin, 2025-09-11, "Improve default fused moe
configs"), ``python benchmarks/kernels/benchmark_moe.py --model=mistralai/Mixtral-8x7B-
Instruct-v0.1 -tp=2`` on an H100 80GB HBM3 with the tuned config file
``E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3.json`` ("Tuned Config" column). The script
times one ``fused_moe`` call (mean of a CUDA graph of 10 calls replayed 100 times) on
``randn`` fp32 gating logits drawn anew per replay: uniform random top-2 routing, so a batch
of ``b`` tokens touches ``8·(1 - (3/4)^b)`` experts in expectation. The call runs the top-k
softmax (with renormalization), ``moe_align_block_size`` (fill, zeros, align), the two
``fused_moe_kernel`` GEMMs (``w1``: 4096 -> 2·7168, ``w2``: 7168 -> 4096 per expert), the
SiLU-and-mul between and ``moe_sum``; no gate GEMM, no all-reduce, no fp32 cast (the logits
are fp32 already).

The model's side: the rows of that call in one MoE layer of
``rl.transformer.estimate("mixtral-8x7b", "decode", b, tp=2, runtime="vllm")`` (decode at
``b`` tokens; 1..512 are CUDA-graph capture sizes, so no padding), summed: GPU seconds of the
same kernels. One constant comes from this table: the core's ``kFusedMoeComputeFraction``
(0.65), solved on the 1536-token call alone; every other row is a check: the distinct-expert
expectation (the rise of the curve to 16 tokens), the weight-streaming rate of the expert
GEMMs (16-256 tokens) and the compute rate at 512 / 1024 tokens.

Run: ``PYTHONPATH=python python benchmarks/vllm_fused_moe.py``.
"""

from __future__ import annotations

import roofline as rl
from roofline.transformer.routing import touched_experts

#: PR #24700's tuned-config kernel times (microseconds) by batch size (tokens).
PUBLISHED_US = {1: 144.03, 2: 229.28, 4: 351.10, 8: 434.98, 16: 471.49, 24: 478.27,
                32: 487.35, 48: 487.85, 64: 483.14, 96: 494.42, 128: 491.39, 256: 536.77,
                512: 662.33, 1024: 833.72, 1536: 1122.93}
#: The rows of one ``fused_moe`` call as benchmark_moe.py times it.
CALL_ROWS = ("topk", "topk renormalize sum", "topk renormalize div", "moe_align fill",
             "moe_align zeros", "moe_align_block_size", "experts gate_up", "experts act",
             "experts down", "moe weighted sum")
#: Bytes of one expert's weights at TP 2 (bf16): w1 2·7168 x 4096, w2 4096 x 7168.
EXPERT_BYTES = 3 * 7168 * 4096 * 2


def model_us(batch: int, hardware: str = "h100-sxm") -> float:
    """The model's GPU microseconds of one fused_moe call of ``batch`` tokens."""
    est = rl.transformer.estimate("mixtral-8x7b", "decode", batch, kv_len=1024, tp=2,
                                  hardware=hardware, runtime="vllm")
    times = est.columns["time_s"]
    return 1e6 * sum(float(t) for (g, name, _), t in zip(est.rows, times, strict=True)
                     if g == 0 and name in CALL_ROWS)


def table() -> list[dict[str, float]]:
    """One row per published batch: tokens, expected experts touched, the published and the
    model's microseconds, their ratio, and the published time's weight-read rate (TB/s)."""
    out = []
    for b, pub in PUBLISHED_US.items():
        d = touched_experts(b, 8, 2)
        mod = model_us(b)
        out.append({"batch": b, "experts": d, "published_us": pub, "model_us": mod,
                    "ratio": mod / pub, "published_tb_s": d * EXPERT_BYTES / pub / 1e6})
    return out


def main() -> None:
    print(f"{'batch':>6} {'experts':>8} {'published':>10} {'model':>8} {'model/pub':>9} "
          f"{'pub TB/s':>8}")
    for r in table():
        print(f"{r['batch']:>6} {r['experts']:>8.3f} {r['published_us']:>10.1f} "
              f"{r['model_us']:>8.1f} {r['ratio']:>9.3f} {r['published_tb_s']:>8.2f}")


if __name__ == "__main__":
    main()
