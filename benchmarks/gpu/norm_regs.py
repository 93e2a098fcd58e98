"""Device script: the launch config Inductor picked for compiled F.layer_norm / F.rms_norm
forward (bf16, torch.no_grad) and its registers, spills and shared memory per CTA, from the
CachingAutotuner launchers left after each compile; with the call time (CUDA events around one
call, median of 30: host launch included). Printed one JSON line per kernel; the 2026-11-28
run on the H200 is data/programs/h200/norm_configs.jsonl (call_ms, device and the SM clock
added). Run on the device: ``python3 benchmarks/gpu/norm_regs.py``."""

from __future__ import annotations

import gc
import json
import statistics

import torch
import torch.nn.functional as F
from torch._inductor.runtime.triton_heuristics import CachingAutotuner

SHAPES = [(65536, 4096), (65536, 8192), (65536, 2048), (16384, 16384)]


def autotuners() -> list[object]:
    # issubclass(type(o)): isinstance on a dead weak proxy raises ReferenceError.
    return [o for o in gc.get_objects() if issubclass(type(o), CachingAutotuner)]


def call_ms(fn, x) -> float:  # type: ignore[no-untyped-def]
    ts = []
    for _ in range(30):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn(x)
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def main() -> None:
    for rows, cols in SHAPES:
        x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
        for op in ("layernorm", "rmsnorm"):
            torch._dynamo.reset()
            before = {id(o) for o in autotuners()}
            if op == "layernorm":
                fn = torch.compile(lambda t, c=cols, w=w, b=b: F.layer_norm(t, (c,), w, b))
            else:
                fn = torch.compile(lambda t, c=cols, w=w: F.rms_norm(t, (c,), w))
            with torch.no_grad():
                fn(x)
                torch.cuda.synchronize()
                t = call_ms(fn, x)
            for o in autotuners():
                if id(o) in before:
                    continue
                for ln in o.launchers:  # type: ignore[attr-defined]
                    c = ln.config
                    print(json.dumps({
                        "op": op, "rows": rows, "cols": cols,
                        "kernel": o.inductor_meta.get("kernel_name"),  # type: ignore[attr-defined]
                        "config": c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages,
                        "n_regs": getattr(ln, "n_regs", None),
                        "n_spills": getattr(ln, "n_spills", None),
                        "shared": getattr(ln, "shared", None), "call_ms": round(t, 4)}))


if __name__ == "__main__":
    main()
