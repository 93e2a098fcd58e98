"""SGLang v0.4's decode attention over one-token pages, against the published evidence (task
fipage13).

The DataCrunch SGLang offline rows at 4096-token prompts have a median ITL about twice the
model's at ~200 decoding requests of 2000-6000 keys (``data/hardware-notes.md`` section 32).
SGLang v0.4.0 - v0.4.1 (Dec 2024, FlashInfer 0.1.6) decodes Llama 3 70B at TP 4 (16 query
heads, 2 KV heads per rank, GQA group 8) with ``BatchDecodeWithPagedKVCacheWrapper(...,
use_tensor_cores=True)`` (``layers/attention/flashinfer_backend.py``: tensor cores when the
group is not one of the CUDA-core kernel's compiled sizes or is above 4), i.e. FlashInfer's
prefill kernel (sm80 template, 16-row query tiles holding the 8 packed query heads) over
the page-size-1 pool (``TokenToKVPool``: ``k_buffer[layer]`` of shape ``[tokens, kv_heads,
head_dim]``, each token's 256-byte K (and V) row per KV head gathered through
``kv_indices``, built every step by ``create_flashinfer_kv_indices_triton``).

This script prints, per decode step of the 70B at TP 4 on an H200, for batches and mean
contexts around the rows':

1. the KV bytes one layer's decode attention reads, and their time at the H200's DRAM rate
   (the floor no kernel beats);
2. the model's price of one layer's decode attention as ``runtime="sglang"`` prices it now
   (``backend="fa3"``, ``page_tokens=1``: FA3's paged path without TMA), and with the kernel
   that ran (``backend="flashinfer"``, ``page_tokens=1``: 16-row mma.sync decode tiles);
3. the only published page-size-1 figure found with its conditions: FlashInfer's v0.2
   release post (flashinfer.ai, 2024-12-16; ``flashinfer-ai/flashinfer-ai.github.io``
   ``_posts/2024-12-12-flashinfer-v02-release.md``): vector-sparse attention (page size 1,
   ``BatchPrefillWithPagedKVCacheWrapper``) reaches 90 % of dense (ragged) attention's
   throughput, head dim 128, causal prefill, H100 SXM5, FA-2 (v0.1.*) and FA-3 (v0.2)
   templates alike. Applied to decode as a bound (a decode kernel at 90 % of its contiguous
   rate: time / 0.9), it adds 11 % to attention;
4. the whole decode step (``transformer.estimate(phase="decode", runtime="sglang")``), the
   attention's share of it, and the factor attention would need for the step to double
   (what the measured median ITL at 4096-token prompts asks for).

Nothing is fitted and no job row is read. Run:
``PYTHONPATH=python python benchmarks/sglang_decode_pages.py``.
"""

from __future__ import annotations

import roofline as rl

#: Published page-size-1 (vector-sparse) throughput relative to dense: FlashInfer v0.2 post.
VECTOR_SPARSE_RATIO = 0.90

MODEL = "Llama-3-70B"
TP = 4
HEADS, KV_HEADS, HEAD_DIM, LAYERS = 64 // TP, 8 // TP, 128, 80


def _layer_attention_s(hw: rl.Hardware, batch: int, keys: int, backend: str) -> float:
    """One layer's decode attention (one query per request) at ``keys`` cached tokens."""
    return float(rl.attention(batch, HEADS, 1, keys, HEAD_DIM, kv_heads=KV_HEADS,
                              backend=backend, page_tokens=1, hardware=hw).time_s)


def main() -> None:
    hw = rl.hardware("H200")
    bw = hw.mem_bytes_per_s
    print(f"{MODEL} TP {TP} on {hw.name}: per rank {HEADS} query heads, {KV_HEADS} KV heads, "
          f"head dim {HEAD_DIM}, {LAYERS} layers; DRAM {bw / 1e12:.2f} TB/s")
    print("per layer (us): KV bytes at the DRAM rate | model fa3 page 1 (priced now) | "
          "flashinfer page 1 (what ran) | flashinfer / 0.90 (published vector-sparse bound)")
    print("per step (ms): decode step as priced now, attention's share, and attention's factor "
          "for the step to double")
    head = (f"{'batch':>5} {'keys':>5} {'KV MB':>7} {'floor':>7} {'fa3':>7} {'finfer':>7} "
            f"{'fi/0.9':>7} | {'step':>6} {'attn':>5} {'x2 needs':>8}")
    print(head)
    print("-" * len(head))
    for batch in (64, 128, 200, 256, 400):
        for keys in (1000, 2000, 3000, 4500, 6000):
            kv_bytes = batch * keys * KV_HEADS * 2 * HEAD_DIM * 2.0  # K and V, bf16
            fa3 = _layer_attention_s(hw, batch, keys, "fa3")
            fi = _layer_attention_s(hw, batch, keys, "flashinfer")
            step = rl.transformer.estimate(model=MODEL, phase="decode", batch=batch,
                                           kv_len=keys, tp=TP, runtime="sglang", hardware=hw)
            df = step.to_pandas()
            attn = float(df.loc[df.kind == "attention", "time_s"].sum())
            share = attn / step.time_s
            needs = (attn + step.time_s) / attn  # attention alone doubling the step
            print(f"{batch:>5} {keys:>5} {kv_bytes / 1e6:>7.1f} {kv_bytes / bw * 1e6:>7.1f} "
                  f"{fa3 * 1e6:>7.1f} {fi * 1e6:>7.1f} {fi / VECTOR_SPARSE_RATIO * 1e6:>7.1f} | "
                  f"{step.time_s * 1e3:>6.2f} {share:>5.0%} {needs:>7.2f}x")
    print()
    print("Published page-size-1 figure (the only one found with its conditions): FlashInfer "
          "v0.2 post, vector-sparse (page size 1) = 90 % of dense throughput, head dim 128, "
          "causal prefill, H100 SXM5, FA-2 and FA-3 templates: a bound of x1.11 on attention, "
          "not a decode measurement.")


if __name__ == "__main__":
    main()
