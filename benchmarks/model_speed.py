"""Time of one whole-model estimate: a 61-layer DeepSeek-V3 decode step on H800.

Run: ``python benchmarks/model_speed.py [--repeat 200]``. Prints the best and median wall time
of ``rl.transformer.estimate`` (validation, every op of both layer kinds, collectives and
memory) and of building the per-(layer, op) pandas table. Target: estimate < 5 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time

import roofline as rl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    cfg = rl.transformer.config("DeepSeek-V3")
    hw = rl.hardware("H800")

    def run() -> rl.transformer.ModelEstimate:
        return rl.transformer.estimate(cfg, phase="decode", batch=64, kv_len=4096,
                                       hardware=hw, ep=128)

    r = run()  # warm-up (config and hardware caches, pandas not involved)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    table = r.to_pandas()
    table_s = time.perf_counter() - t0
    print(f"DeepSeek-V3 decode, batch 64, kv_len 4096, ep 128 on H800: "
          f"{r.time_s * 1e3:.3f} ms predicted per step ({len(table)} op rows)")
    print(f"estimate: best {min(times) * 1e3:.3f} ms, median "
          f"{statistics.median(times) * 1e3:.3f} ms over {args.repeat} runs (target < 5 ms)")
    print(f"per-layer table (pandas, first call): {table_s * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
