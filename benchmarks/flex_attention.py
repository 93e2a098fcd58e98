"""PyTorch FlexAttention: the model (``rl.attention(backend="flex")``, FA2's work units at the
published share of FA2's rate) against the published flex-vs-FA2 timings of
``data/measurements/flex_attention_published.csv``, and the BlockMask's visited blocks of
NeMo AutoModel's GPT-OSS layers (hardware-notes §51).

Prints, per published row, the measured FlashAttention-2 and FlexAttention times, the model's
times for both backends and their ratios (model / measured). The H100 forward rows are the
ones the forward share was taken from (their median FA2 / flex ratio), so their flex ratio
column checks the rest of the model (FA2's own pricing at that shape), not the share; the
A6000 backward row (no RTX A6000 in the hardware database) only prints its ratio. Then
GPT-OSS-20B's attention at 4096 tokens (batch 2, 64 heads of 64, 8 KV heads): blocks
visited, and the flex, FA2 and cuDNN (SDPA's ``"auto"``) prices per layer, forward and
backward.

Run: ``PYTHONPATH=python python benchmarks/flex_attention.py``
"""

from __future__ import annotations

import csv
from pathlib import Path

import roofline as rl
from roofline.transformer.flex import flex_block_fraction, flex_visited_blocks

DATA = Path(__file__).resolve().parents[1] / "data" / "measurements"
GPU = {"H100": "H100 SXM"}  # the RTX A6000 is not in the hardware database


def published() -> None:
    """The model against each published row."""
    print(f"{'gpu':6} {'pass':4} {'causal':6} {'B,H,S,D':18} {'FA2 ms':>8} {'flex ms':>8} "
          f"{'model FA2':>9} {'model flex':>10} {'FA2 m/p':>7} {'flex m/p':>8}")
    with open(DATA / "flex_attention_published.csv") as f:
        for r in csv.DictReader(f):
            b, h, s, d = (int(r[k]) for k in ("batch", "heads", "seqlen", "headdim"))
            bwd = r["pass"] == "bwd"
            unit = 1e-6 if "us" in r["source"] else 1e-3
            fa2_s, flex_s = float(r["fa2_ms"]) * unit, float(r["flex_ms"]) * unit
            if r["gpu"] not in GPU:  # only the published ratio (the backward share itself)
                print(f"{r['gpu']:6} {r['pass']:4} {r['causal']:6} {f'{b},{h},{s},{d}':18} "
                      f"{fa2_s * 1e3:8.3f} {flex_s * 1e3:8.3f}  (not in the database; "
                      f"FA2 / flex = {fa2_s / flex_s:.4f}, the backward share)")
                continue
            kw = dict(causal=r["causal"] == "True", backward=bwd, hardware=GPU[r["gpu"]])
            m_fa2 = float(rl.attention(b, h, s, s, d, backend="flash", **kw).time_s)
            m_flex = float(rl.attention(b, h, s, s, d, backend="flex", **kw).time_s)
            print(f"{r['gpu']:6} {r['pass']:4} {r['causal']:6} {f'{b},{h},{s},{d}':18} "
                  f"{fa2_s * 1e3:8.3f} {flex_s * 1e3:8.3f} {m_fa2 * 1e3:9.3f} "
                  f"{m_flex * 1e3:10.3f} {m_fa2 / fa2_s:7.2f} {m_flex / flex_s:8.2f}")


def gpt_oss_layers() -> None:
    """GPT-OSS-20B's two attention kinds at 4096 tokens, per layer and micro-batch of 2."""
    b, h, kvh, s, d = 2, 64, 8, 4096, 64
    print(f"\nGPT-OSS-20B attention per layer (B={b}, {h} heads of {d}, {kvh} KV heads, "
          f"{s} tokens), H100 SXM, ms")
    for window, name in ((0, "causal"), (128, "sliding 128")):
        blocks = flex_visited_blocks(s, s, window)
        frac = flex_block_fraction(s, s, window)
        out = []
        for bwd in (False, True):
            kw = dict(kv_heads=kvh, backward=bwd, hardware="H100 SXM")
            flex = frac * float(rl.attention(b, h, s, s, d, causal=False, backend="flex",
                                             **kw).time_s)
            if window:  # SDPA kernels: 128-query tiles over window + 128 keys (layers.py)
                n = s // 128
                fa2 = float(rl.attention(b * n, h, 128, 256, d, backend="flash", **kw).time_s)
                cud = float(rl.attention(b * n, h, 128, 256, d, backend="auto", **kw).time_s)
            else:
                fa2 = float(rl.attention(b, h, s, s, d, causal=True, backend="flash",
                                         **kw).time_s)
                cud = float(rl.attention(b, h, s, s, d, causal=True, backend="auto",
                                         **kw).time_s)
            out.append((flex, fa2, cud))
        (ff, af, cf), (fb, ab, cb) = out
        print(f"  {name:12} blocks {blocks:4d} ({frac:.4f} of the dense call)  fwd flex "
              f"{ff * 1e3:.3f} FA2 {af * 1e3:.3f} cuDNN {cf * 1e3:.3f}  bwd flex "
              f"{fb * 1e3:.3f} FA2 {ab * 1e3:.3f} cuDNN {cb * 1e3:.3f}")


if __name__ == "__main__":
    published()
    gpt_oss_layers()
