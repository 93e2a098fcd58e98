"""What a slower Grace host would do to the published jobs (issue #24; nothing here is fitted).

GB200 / GB300 NVL72 trays run the framework's Python on NVIDIA Grace (Arm Neoverse V2); the
host terms of ``data/terms/host.json`` were measured on x86 hosts (H100 / H200 machines). The
public figures disagree on how much slower Grace is per call (``data/hardware-notes.md``,
"The Grace host CPU"): a pure-Python call 1.06-1.09x (PyTorch issue #187862), a
``torch.nn.Linear`` forward's CPU time 2.75x (TE issue #2053). This prints, for each ratio
``r``, every family's median / p90 / bias and the GB rows' errors when the host's Python and
dispatch terms (``eager_launch_s`` and the compiled / torchao call terms; every eager class
term is a multiple of ``eager_launch_s``) are ``r`` times the fitted ones on GB200 and GB300;
the GPU-side terms (``kernel_gap_s``, ``kernel_latency_s``, ``graph_launch_s``) are kept. The
scaling is applied in memory (``roofline._params.host.values`` wrapped); the model itself is
unchanged. Run: ``PYTHONPATH=python python benchmarks/grace_host_sensitivity.py [r ...]``
(default ratios 1, 1.09, 1.5, 2.75).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from roofline._params import host as host_params
from roofline._params.resolve import clear_caches
from roofline.validation.jobs import JOBS_FILE, validate_jobs

#: Accelerators whose host is a Grace CPU in the published rows (canonical names).
GRACE = ("GB200", "GB300")
#: Host terms that are CPU time (Python, dispatcher, driver call); the rest are GPU-side.
PYTHON_TERMS = ("eager_launch_s", "compiled_launch_s", "compiled_call_s", "compiled_region_s",
                "compiled_forward_s", "torchao_call_s")

_values = host_params.values


def _scaled(ratio: float) -> Any:
    def values(hw: Any, doc: dict[str, Any]) -> dict[str, float]:
        out: dict[str, float] = dict(_values(hw, doc))
        if getattr(hw, "name", None) in GRACE:
            out.update({k: out[k] * ratio for k in PYTHON_TERMS})
        return out
    return values


def main(ratios: list[float]) -> None:
    for ratio in ratios:
        host_params.values = _scaled(ratio)
        clear_caches()
        res = validate_jobs(JOBS_FILE)
        jobs = res.jobs
        print(f"== Grace host ratio {ratio:g}")
        for fam, g in jobs.groupby("family"):
            e = g["error"].to_numpy()
            print(f"  {fam:20s} rows {e.size:3d}  median {np.median(np.abs(e)):6.1%}  "
                  f"p90 {np.percentile(np.abs(e), 90):6.1%}  bias {np.median(e):+6.1%}")
        e = jobs["error"].to_numpy()
        print(f"  {'all':20s} rows {e.size:3d}  median {np.median(np.abs(e)):6.1%}  "
              f"p90 {np.percentile(np.abs(e), 90):6.1%}")
        gb = jobs[jobs["hardware"].isin(GRACE) & (jobs["family"] == "train_moe")]
        print("  " + ", ".join(f"{r.id.removeprefix('mbridge2511_')} {r.error:+.1%}"
                               for r in gb.itertuples()))
    host_params.values = _values
    clear_caches()


if __name__ == "__main__":
    main([float(a) for a in sys.argv[1:]] or [1.0, 1.09, 1.5, 2.75])
