"""Seed 001 (sglang PR #17801): 8 projection GEMMs against 1 fused GEMM + 1 batched GEMM.

Prints our predictions (rl.fusion.fuse_projections, default calibrated model, bf16) on H100
SXM and H200 -- and on H20, the GPU the PR's numbers point to -- next to the PR's measured
numbers, with ratios ours / PR. Run: ``python benchmarks/fusion_pr.py [--efficiency peak]``.

The PR's numbers: decode kernel time 5.9+5.7+5.6+5.6+2.5+5.2+5.7+2.6 = 38.8 us -> 8.7+3 =
11.7 us ("4k input 1k output" decode, batch not stated); prefill kernel time
286+286+286+45+20+14+45+19 = 1001 us -> 934+35 = 969 us; standalone torch timings
0.57 -> 0.50 ms (m = 4096), 1.03 -> 0.98 ms (8192), 1.99 -> 1.91 ms (16384).
"""

from __future__ import annotations

import argparse

import roofline as rl

K = 2304
NS = [1024, 1024, 1024, 8, 128, 128]  # q, k, v, b, f_a, g_a: same input x
FOLLOW_UPS = [(4, 1024), (5, 1024)]  # f_b(f_a), g_b(g_a): 128 -> 1024 each
HARDWARE = ["H100 SXM", "H200", "H20"]

#: (what, m, before_s, after_s) as reported in the PR; None = not stated.
PR = [
    ("decode kernels (profile)", None, 38.8e-6, 11.7e-6),
    ("prefill kernels (profile)", 8192, 1001e-6, 969e-6),
    ("standalone torch", 4096, 0.57e-3, 0.50e-3),
    ("standalone torch", 8192, 1.03e-3, 0.98e-3),
    ("standalone torch", 16384, 1.99e-3, 1.91e-3),
]

#: m used for the PR's decode profile, whose batch is not stated (see docs/fusion.md).
DECODE_M = 64


def predict(m: int, hardware: str, efficiency: str) -> rl.fusion.Comparison:
    """Our comparison for ``m`` tokens."""
    return rl.fusion.fuse_projections(m, K, NS, FOLLOW_UPS, hardware=hardware,
                                      efficiency=efficiency)


def us(x: float) -> str:
    return f"{x * 1e6:8.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--efficiency", default="default", help="default, peak, constant, torchao")
    args = ap.parse_args()
    eff = args.efficiency

    print(f"Seed 001: 8 GEMMs (x[m x {K}] @ W, N = {'+'.join(map(str, NS))}, then 2 x 128->1024)"
          f" vs 1 GEMM (N = {sum(NS)}) + 1 bmm (batch 2, 128->1024); bf16, efficiency {eff}")
    print("times in us; ratio = ours / PR; saving = 1 - after / before\n")

    print("1) decode, m = 1 .. 256 (our predictions; the PR reports 38.8 -> 11.7 us, "
          "saving 69.8 %, batch not stated)")
    print(f"{'hardware':<10} {'m':>6} {'before':>8} {'after':>8} {'saving':>7}")
    for hw in HARDWARE:
        for m in (1, 16, 64, 128, 256):
            c = predict(m, hw, eff)
            print(f"{hw:<10} {m:>6} {us(c.baseline.time_s)} {us(c.candidate.time_s)} "
                  f"{100 * c.saving:6.1f}%")
    print()

    print("2) next to the PR's numbers (decode compared at m = "
          f"{DECODE_M}, see docs/fusion.md)")
    head = (f"{'measurement':<26} {'m':>6} {'PR before':>9} {'PR after':>9} {'PR sav':>7} | "
            f"{'hardware':<9} {'before':>8} {'after':>8} {'saving':>7} {'ratio b':>7} "
            f"{'ratio a':>7}")
    print(head)
    print("-" * len(head))
    for what, m_pr, pb, pa in PR:
        mm = DECODE_M if m_pr is None else m_pr
        for hw in HARDWARE:
            c = predict(mm, hw, eff)
            b, a = c.baseline.time_s, c.candidate.time_s
            print(f"{what:<26} {mm:>6} {us(pb):>9} {us(pa):>9} {100 * (1 - pa / pb):6.1f}% | "
                  f"{hw:<9} {us(b)} {us(a)} {100 * c.saving:6.1f}% {b / pb:7.2f} {a / pa:7.2f}")
    print()

    print("3) per kernel at m = 8192 on H20 (PR profile: 286, 286, 286, 45, 20, 14, 45, 19 -> "
          "934, 35 us)")
    c = predict(8192, "H20", eff)
    for plan in (c.baseline, c.candidate):
        print(f"  {plan.name:<16} " + ", ".join(f"{k.name.split(' ')[0]} {k.time_s * 1e6:.1f}"
                                             for k in plan.kernels))
    print("\nAchieved rate implied by the PR's standalone timing at m = 16384: "
          f"{predict(16384, 'H20', eff).baseline.flops / 1.99e-3 / 1e12:.0f} TFLOP/s "
          "(H20 dense bf16 peak 148, H100/H200 989.5): the PR's GPU is H20-class.")


if __name__ == "__main__":
    main()
