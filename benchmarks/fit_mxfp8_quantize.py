"""Blackwell's ``mxfp8_quantize_fraction`` (``cast.json``), re-derived from its nine published
B200 kernel times (``data/hardware-notes.md`` §11, §41).

The term is the median, over nine published MXFP8 quantize kernels on a B200, of each
kernel's achieved bytes per second over the model's B200 streaming rate::

    fraction_i = bytes_i / t_i / (mem_bytes_per_s(B200) x memory_fraction)
    bytes_i    = elements_i x (2 + layouts_i x (1 + 1/32))

(bf16 read, one fp8 byte and 1/32 of an e8m0 scale byte written per element and layout).
The kernels: Transformer Engine's ``quantize_mxfp8`` of a bf16 8192 x 8192 tensor, rowwise /
colwise / both layouts (the three "TE quantize_mxfp8 B200" rows of
``data/published/blackwell_kernels.jsonl``; ROCm/TransformerEngine PR #598, B200 column), and
torchao's six MXFP8 casts of DeepSeek-V3 MoE tensors (``torchao/prototype/moe_training/
README.md`` @2c2d402, "MXFP8 Kernel Microbenchmarks: Breakdown by Pass", B200). None of
them is a job row. The streaming rate moves with the B200's HBM peak (``data/hardware.csv``),
so the fraction is re-derived whenever that peak changes.

Run: ``PYTHONPATH=python python benchmarks/fit_mxfp8_quantize.py [--peak TB/s] [--write]``.
Prints every kernel's rate and fraction and the residual of each against the median (the
rounded value ``cast.json`` holds); ``--peak`` prices at another B200 peak (8.0 = the
vendor's rounded figure, the value before §41); ``--write`` stores the median (3 decimals)
in ``cast.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import roofline as rl
from roofline._params.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "data" / "published" / "blackwell_kernels.jsonl"
CAST_JSON = ROOT / "python" / "roofline" / "data" / "terms" / "cast.json"
TORCHAO = ("https://github.com/pytorch/ao/blob/2c2d402/torchao/prototype/moe_training/"
           "README.md")

#: torchao's MXFP8 casts on a B200 (name, shape, published microseconds); one layout each.
TORCHAO_CASTS: tuple[tuple[str, tuple[int, ...], float], ...] = (
    ("triton_to_mxfp8_dim0 A (fwd)", (131072, 7168), 525.3),
    ("triton_to_mxfp8_dim0 B (fwd)", (8, 2048, 7168), 65.4),
    ("triton_to_mxfp8_dim0 grad_out (dA)", (131072, 2048), 144.4),
    ("mxfp8_quantize_cuda_3d B (dA)", (8, 2048, 7168), 70.7),
    ("to_mxfp8_dim1_cuda grad_out (dB)", (131072, 2048), 141.5),
    ("to_mxfp8_dim1_cuda A (dB)", (131072, 7168), 472.2),
)


def kernels() -> list[tuple[str, int, int, float]]:
    """The nine kernels as (name, elements, layouts, seconds): TE's three rows from the
    published kernel file, torchao's six from :data:`TORCHAO_CASTS`."""
    out: list[tuple[str, int, int, float]] = []
    for line in PUBLISHED.read_text().splitlines():
        row = json.loads(line)
        if row.get("group") == "TE quantize_mxfp8 B200":
            c = row["config"]
            out.append((f"TE quantize_mxfp8 {c['scaling']}", c["rows"] * c["cols"],
                        2 if c["scaling"] == "both" else 1, float(row["measured_s"])))
    for name, shape, us in TORCHAO_CASTS:
        n = 1
        for d in shape:
            n *= d
        out.append((name, n, 1, us * 1e-6))
    if len(out) != 9:
        raise ValueError(f"expected nine MXFP8 quantize kernels, found {len(out)}")
    return out


def quantize_bytes(elements: int, layouts: int) -> float:
    """Bytes one quantize moves: 2 read, (1 + 1/32) written per element and layout."""
    return elements * (2.0 + layouts * (1.0 + 1.0 / 32.0))


def streaming_rate(peak_bytes_per_s: float | None = None) -> float:
    """The model's B200 streaming rate (B/s): its HBM peak (``hardware.csv``, or
    ``peak_bytes_per_s``) times the calibrated ``memory_fraction``."""
    _, chw, ceff = resolve("B200", "default")
    peak = chw.mem_bytes_per_s if peak_bytes_per_s is None else peak_bytes_per_s
    return float(peak * ceff.memory_fraction)


def fractions(peak_bytes_per_s: float | None = None) -> list[tuple[str, float, float]]:
    """Each kernel's (name, achieved B/s, fraction of the streaming rate)."""
    rate = streaming_rate(peak_bytes_per_s)
    out = []
    for name, n, layouts, s in kernels():
        achieved = quantize_bytes(n, layouts) / s
        out.append((name, achieved, achieved / rate))
    return out


def fit(peak_bytes_per_s: float | None = None) -> float:
    """The median fraction, unrounded."""
    return float(statistics.median(f for _, _, f in fractions(peak_bytes_per_s)))


def write(value: float) -> None:
    """Store ``value`` as Blackwell's ``mxfp8_quantize_fraction`` in ``cast.json``."""
    doc = json.loads(CAST_JSON.read_text())
    doc["per_architecture"]["blackwell"]["mxfp8_quantize_fraction"] = value
    CAST_JSON.write_text(json.dumps(doc, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--peak", type=float, default=None, help="B200 HBM peak in TB/s")
    ap.add_argument("--write", action="store_true", help="store the median in cast.json")
    a = ap.parse_args()
    peak = None if a.peak is None else a.peak * 1e12
    rows = fractions(peak)
    med = fit(peak)
    stored = round(med, 3)
    print(f"B200 peak {(peak or rl.hardware('B200').mem_bytes_per_s) / 1e12:.5f} TB/s, "
          f"streaming rate {streaming_rate(peak) / 1e12:.3f} TB/s")
    print(f"{'kernel':40s} {'TB/s':>6s} {'fraction':>9s} {'residual':>9s}")
    for name, achieved, f in rows:
        print(f"{name:40s} {achieved / 1e12:6.3f} {f:9.3f} {f / stored - 1:+9.1%}")
    print(f"median {med:.4f} -> {stored}")
    if a.write:
        write(stored)
        print(f"wrote {stored} to {CAST_JSON.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
