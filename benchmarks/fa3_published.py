"""backend="fa3" against the published FlashAttention-3 figures on H100
(data/measurements/fa3_fwd_h100.csv), and FA3 vs FlashAttention-2 (SDPA's, backend="flash").

Run: PYTHONPATH=python python benchmarks/fa3_published.py
Prints one row per published FA3 figure (source, shape, TFLOPS published and predicted, error),
the median absolute error per source and overall, then the model's FA2 / FA3 time ratio per
head dim and mask (forward and backward) at the paper's shapes next to the chart's.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import roofline as rl

DATA = Path(__file__).resolve().parents[1] / "data" / "measurements" / "fa3_fwd_h100.csv"
HW = "H100 SXM"


def main() -> None:
    with DATA.open() as f:
        rows = list(csv.DictReader(f))
    errs: dict[str, list[float]] = {}
    chart: dict[tuple[str, int, bool, int], float] = {}
    print(f"{'source':12s} {'dtype':5s} {'hd':>4s} {'causal':>6s} {'seq':>6s} {'pub':>6s} "
          f"{'model':>6s} {'error':>7s}")
    for r in rows:
        b, h, s, d = (int(r[k]) for k in ("batch", "nheads", "seqlen_q", "headdim"))
        causal = r["causal"] == "True"
        chart[r["impl"], d, causal, s] = float(r["measured_tflops"])
        if r["impl"] != "FlashAttention-3":
            continue
        dtype = "fp8" if "fp8" in r["dtype"] else "bf16"
        e = rl.attention(b, h, s, s, d, causal=causal, dtype=dtype, hardware=HW, backend="fa3")
        err = float(e.time_s) / (float(r["derived_time_ms"]) * 1e-3) - 1.0
        src = r["source"].split()[0].replace("github.com/", "")[:12]
        errs.setdefault(src, []).append(abs(err))
        pub = float(r["measured_tflops"])
        print(f"{src:12s} {dtype:5s} {d:4d} {causal!s:>6s} {s:6d} {pub:6.0f} "
              f"{float(e.flops) / float(e.time_s) / 1e12:6.0f} {err:+7.1%}")
    everything = [x for v in errs.values() for x in v]
    for src, v in errs.items():
        print(f"median |error| {src}: {statistics.median(v):.1%} ({len(v)} rows)")
    print(f"median |error| all: {statistics.median(everything):.1%} ({len(everything)} rows)")
    print("\nFA2 (SDPA flash) time / FA3 time, model (chart: FA2 standalone / FA3 forward)")
    for d in (64, 128, 256):
        for causal in (False, True):
            out = []
            for s in (512, 2048, 8192, 16384):
                b, h = 16384 // s, 2048 // d
                kw = dict(causal=causal, hardware=HW)
                fwd = [float(rl.attention(b, h, s, s, d, backend=be, **kw).time_s)
                       for be in ("flash", "fa3")]
                bwd = [float(rl.attention(b, h, s, s, d, backend=be, backward=True,
                                          **kw).time_s) for be in ("flash", "fa3")]
                pub = chart["FlashAttention-3", d, causal, s] / chart[
                    "FlashAttention-2", d, causal, s]
                out.append(f"s={s}: fwd {fwd[0] / fwd[1]:.2f} ({pub:.2f}) "
                           f"bwd {bwd[0] / bwd[1]:.2f}")
            print(f"hd {d:3d} causal={causal!s:5s} " + "; ".join(out))


if __name__ == "__main__":
    main()
