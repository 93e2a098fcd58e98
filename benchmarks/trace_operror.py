"""Per-op error of ``rl.trace.explain`` on every trace in the repository.

Prints, per trace, the time-weighted per-op error (``TraceReport.op_error``: sum over (op,
shapes) rows of |predicted - measured| / sum of measured), the measured and predicted GPU time
of the priced kernels per step, and the medians per program kind: the two shared H100 traces
(``tests/data/traces``), the H200 HF Llama programs and the H200 MoE blocks (HF's Mixtral and
Qwen3-MoE sparse blocks, and the same experts through ``torch._grouped_mm``, forward or
forward + backward, 512-16384 tokens; ``data/programs/h200/traces``, never fitted).
Graph-replayed traces record no ops and are skipped.
Run: ``PYTHONPATH=python python benchmarks/trace_operror.py``.
"""

from __future__ import annotations

import statistics
import warnings
from pathlib import Path

import roofline as rl
import roofline.trace  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
KINDS = (("decode dynamic", "decode_dynamic"), ("decode static eager", "decode_static_eager"),
         ("decode compiled", "decode_static_compiled_"), ("prefill", "prefill"),
         ("train eager", "train_eager"), ("train compiled", "train_compiled"),
         ("train float8", "train_float8"), ("MoE block HF", "_hf_t"),
         ("MoE grouped_mm fwd", "grouped_mm_forward"), ("MoE grouped_mm train", "grouped_mm_train"))


def main() -> None:
    warnings.simplefilter("ignore")
    shared = sorted((ROOT / "tests" / "data" / "traces").glob("*.json.gz"))
    h200 = sorted(p for p in (ROOT / "data" / "programs" / "h200" / "traces").glob(
        "*.json.gz") if p.name.startswith(("llama_", "moe_")) and "graph" not in p.name)
    errors: dict[str, float] = {}
    print(f"{'trace':52s} {'op_error':>9s} {'measured ms':>12s} {'model ms':>9s}")
    for path, hw in [(p, "H100 SXM") for p in shared] + [(p, "H200 SXM") for p in h200]:
        rep = rl.trace.explain(path, hardware=hw)
        name = path.name.removesuffix(".json.gz")
        errors[name] = rep.op_error
        print(f"{name:52s} {100 * rep.op_error:8.1f}% {1e3 * rep.priced_measured_s:12.3f} "
              f"{1e3 * rep.predicted_s:9.3f}")
    print()
    for label, key in KINDS:
        vals = [e for n, e in errors.items() if key in n]
        if vals:
            print(f"{label:22s} {len(vals):2d} traces: median {100 * statistics.median(vals):.1f} %"
                  f" ({100 * min(vals):.1f}-{100 * max(vals):.1f} %)")


if __name__ == "__main__":
    main()
