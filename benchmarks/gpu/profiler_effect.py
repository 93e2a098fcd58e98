"""Does a finished torch.profiler session slow later host-bound calls down? (issue #26)

Run on the GPU machine: python3 benchmarks/gpu/profiler_effect.py --out DIR

In one fresh process: an HF LlamaForCausalLM decode step (Llama-3-8B dims, 2 layers, batch 1,
4096 cached tokens, Dynamic and Static cache, eager), a torch.compile'd ``x * 2``, a compiled
layer_norm (4096 x 1024 bf16) and a chain of 100 bare eager adds are timed (wall per call,
median of 7 interleaved rounds of 20 calls) BEFORE any profiler ran, then one
``torch.profiler.profile`` session records one decode step, then everything is timed AGAIN.
Rows: ``phase`` ("before" / "after"), ``name``, ``wall_s``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, script_parser  # noqa: E402
from llama_programs import CACHE, build, fill_dynamic, fill_static, llama_config  # noqa: E402


def main() -> None:
    ap = script_parser(__doc__)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    dev = "cuda"
    out = Out(args.out, "profiler_effect")
    hc = llama_config(2)
    model = build(hc, dev).eval()
    ids = torch.zeros(1, 1, dtype=torch.long, device=dev)
    dyn, st = fill_dynamic(hc, 1, dev), fill_static(hc, 1, dev)
    pos = torch.full((1, 1), CACHE, device=dev)

    def s_dyn() -> None:
        with torch.no_grad():
            model(input_ids=ids, cache=dyn, use_cache=True)
        dyn.crop(-1)

    def s_st() -> None:
        with torch.no_grad():
            model(input_ids=ids, cache=st, position_ids=pos, use_cache=True)
        st.crop(-1)

    x = torch.randn(1024, 1024, device=dev)
    twice = torch.compile(lambda t: t * 2, dynamic=False)
    h = torch.randn(4096, 1024, device=dev, dtype=torch.bfloat16)
    w = torch.ones(1024, device=dev, dtype=torch.bfloat16)
    ln = torch.compile(lambda t: F.layer_norm(t, (1024,), w, w), dynamic=False)
    z = torch.zeros(16, device=dev)

    def chain() -> None:
        y = z
        for _ in range(100):
            y = y + 1

    progs: dict[str, Callable[[], object]] = {
        "hf_decode_dynamic_L2_b1": s_dyn, "hf_decode_static_L2_b1": s_st,
        "compiled_x2": lambda: twice(x), "compiled_layernorm_4096x1024": lambda: ln(h),
        "eager_add_chain_100": chain}
    for fn in progs.values():
        for _ in range(3):
            fn()
    torch.cuda.synchronize()

    def measure(phase: str) -> None:
        walls: dict[str, list[float]] = {k: [] for k in progs}
        for _ in range(7):
            for name, fn in progs.items():
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(20):
                    fn()
                torch.cuda.synchronize()
                walls[name].append((time.perf_counter() - t0) / 20)
        for name, ws in walls.items():
            out.row(name=name, phase=phase, wall_s=statistics.median(ws), wall_min_s=min(ws))

    measure("before")
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True):
        s_dyn()
        twice(x)
        torch.cuda.synchronize()
    measure("after")


if __name__ == "__main__":
    main()
