"""Per-launch times of the optimizer's ``_foreach_*`` kernels in the H200 HF Llama train traces.

A ``_foreach_`` call over the model's parameter list runs as tens of ``multi_tensor_apply``
launches (``_core.multi_tensor_apply_launches``); the first launches of each call walk only
the list's first tensor (the token embedding, 128256 x 4096 in Llama 3 8B). This prints, per
op, the median measured time of those launches, of the other launches, and the model's time
per launch (the op's priced total over its launches), so a slowdown confined to one tensor of
the list shows up apart from the kernel's general rate.

Finding (issue #23): ``div_`` / ``addcdiv_`` (and ``sqrt`` a little) run 40-75 % slower on
the embedding's launches only, while ``mul_`` / ``add_`` / ``lerp_`` / ``addcmul_`` do not.
The embedding rows of tokens absent from the batch have exactly zero gradients and Adam
moments, so those launches divide zeros and take square roots of zeros; the likely cause is
the slow path that nvcc's IEEE fp32 division / square root (aten compiles without fast math)
branch to for zero or denormal operands (inferred from which launches slow down, not from a
SASS listing). The other launches of ``div_`` and ``sqrt`` are within 8 % of ``mul_``: the
fast path's extra instructions hide behind the DRAM round trips. Not modelled.
Run: ``PYTHONPATH=python python benchmarks/foreach_launches.py``.
"""

from __future__ import annotations

import statistics
import warnings
from pathlib import Path

import numpy as np

import roofline as rl
import roofline.trace  # noqa: F401
from roofline import _core

ROOT = Path(__file__).resolve().parents[1]
TRACES = ("llama_train_eager_b1", "llama_train_float8_rowwise_b1",
          "llama_train_float8_tensorwise_b1")


def _numel(shape: str) -> float:
    """Elements of one ``AxBxC`` shape."""
    return float(np.prod([float(d) for d in shape.split("x")]))


def main() -> None:
    warnings.simplefilter("ignore")
    for name in TRACES:
        rep = rl.trace.explain(ROOT / "data" / "programs" / "h200" / "traces"
                               / f"{name}.json.gz", hardware="H200 SXM")
        k = rep.kernels()
        k = k[k.op.str.startswith("aten::_foreach_")]
        print(name)
        print(f"  {'op':26s} {'launches':>8s} {'first-tensor us':>16s} {'other us':>9s} "
              f"{'model us':>9s}")
        for op, g in k.groupby("op", sort=False):
            first_list = str(g.shapes.iloc[0]).split("], [")[0].strip("[]")
            numel = np.array([_numel(s) for s in first_list.split(", ")])
            depth = 1  # the first tensor's own launch count does not depend on the depth
            per_call = int(_core.multi_tensor_apply_launches(numel, depth))
            alone = int(_core.multi_tensor_apply_launches(numel[:1], depth)) - 1
            pos = np.arange(len(g)) % max(per_call, 1)
            t = 1e6 * g.measured_s.to_numpy()
            first = [float(v) for v, i in zip(t, pos, strict=True) if i < alone]
            other = [float(v) for v, i in zip(t, pos, strict=True) if i >= alone]
            model = 1e6 * float(g.predicted_s.sum()) / len(g)
            print(f"  {op:26s} {len(g):8d} "
                  f"{statistics.median(first) if first else float('nan'):16.1f} "
                  f"{statistics.median(other) if other else float('nan'):9.1f} {model:9.1f}")


if __name__ == "__main__":
    main()
