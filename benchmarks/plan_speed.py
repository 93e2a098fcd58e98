"""Time rl.transformer.plan on the two notebook questions and a 1,024-GPU DeepSeek-V3 search.

Usage: PYTHONPATH=python python benchmarks/plan_speed.py
Prints one row per search: layouts kept, op estimates run, seconds, best layout.
"""

from __future__ import annotations

import time

import roofline as rl

CASES = [
    ("DeepSeek-V3 train, 1024 x H800", dict(model="DeepSeek-V3", gpus=1024, hardware="H800",
                                            seq_len=4096, global_batch_tokens=15360 * 4096,
                                            linear_recipe="blockwise")),
    ("Llama-3-70B train, 64 x H100", dict(model="Llama-3-70B", gpus=64, hardware="H100 SXM",
                                          seq_len=8192, global_batch_tokens=2**21)),
    ("DeepSeek-V3 decode, 32 x H800", dict(model="DeepSeek-V3", gpus=32, hardware="H800",
                                           phase="decode", seq_len=4096, output_len=1024,
                                           linear_recipe="blockwise")),
]


def main() -> None:
    print(f"{'search':34} {'layouts':>8} {'estimates':>9} {'seconds':>8}  best")
    for name, kw in CASES:
        t = time.perf_counter()
        df = rl.transformer.plan(**kw)
        dt = time.perf_counter() - t
        best = df.iloc[0]
        keys = ("tp", "pp", "dp", "ep", "cp", "zero", "recompute", "batch")
        desc = " ".join(f"{k}={best[k]}" for k in keys if k in df.columns)
        print(f"{name:34} {len(df):8d} {df.attrs['estimates']:9d} {dt:8.2f}  {desc}")


if __name__ == "__main__":
    main()
