"""SDPA decode with and without a boolean mask, per backend (issue #23: StaticCache decode).

Run on the GPU machine: python3 benchmarks/gpu/masked_decode.py --out DIR

q (b, 32, 1, 128) against K/V (b, 8, 4097, 128) bf16 (GQA, ``enable_gqa=True``), and the same
with the query heads packed per KV head (q (b, 8, 4, 128), K/V (b, 8, 4097, 128): what HF's
StaticCache step runs); with ``attn_mask`` None or a (b, 1, 1, 4097) bool mask; backends
default, cudnn, flash, efficient, math; batch 1, 16, 64, 256. do_bench median per call, plus
the kernel names of one call from a profiler session run at the very end (after all
timings).
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, do_bench, script_parser  # noqa: E402


def main() -> None:
    ap = script_parser(__doc__)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    from torch.nn.attention import SDPBackend, sdpa_kernel

    out = Out(args.out, "masked_decode")
    backends: dict[str, Any] = {"default": None, "cudnn": SDPBackend.CUDNN_ATTENTION,
                                "flash": SDPBackend.FLASH_ATTENTION,
                                "efficient": SDPBackend.EFFICIENT_ATTENTION,
                                "math": SDPBackend.MATH}
    cases = []
    for b in (1, 16, 64, 256):
        k = torch.randn(b, 8, 4097, 128, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        mask = torch.ones(b, 1, 1, 4097, device="cuda", dtype=torch.bool)
        for layout in ("gqa", "packed"):
            q = (torch.randn(b, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
                 if layout == "gqa" else
                 torch.randn(b, 8, 4, 128, device="cuda", dtype=torch.bfloat16))
            for masked in (False, True):
                for name, be in backends.items():
                    def fn(q: Any = q, k: Any = k, v: Any = v, be: Any = be,
                           m: Any = mask if masked else None, gqa: bool = layout == "gqa"
                           ) -> Any:
                        if be is None:
                            return F.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                                  enable_gqa=gqa)
                        with sdpa_kernel(be):
                            return F.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                                  enable_gqa=gqa)
                    try:
                        fn()
                        t = do_bench(fn)
                    except Exception as exc:  # noqa: BLE001
                        out.row(name=f"decode_{layout}_{'mask' if masked else 'nomask'}_"
                                     f"{name}_b{b}", error=str(exc)[:160])
                        continue
                    nbytes = 2 * k.numel() * 2
                    out.row(name=f"decode_{layout}_{'mask' if masked else 'nomask'}_{name}_b{b}",
                            batch=b, layout=layout, masked=masked, backend=name, measured=t,
                            kv_bytes=nbytes, tb_per_s=nbytes / t / 1e12)
                    cases.append((f"{layout}_{'mask' if masked else 'nomask'}_{name}_b{b}", fn))
    from torch.profiler import ProfilerActivity, profile

    names: dict[str, list[str]] = {}
    for label, fn in cases:
        if not label.endswith("_b64"):
            continue
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            fn()
            torch.cuda.synchronize()
        names[label] = sorted({e.name[:90] for e in p.events()
                               if e.device_type == torch.autograd.DeviceType.CUDA})
    out.row(name="kernels_b64", kernels=names)


if __name__ == "__main__":
    main()
