"""GPU kernel time per call of small attention calls and of compiled norms (issue #23 / #25).

Two questions the model's GPU-time terms rest on, answered with profiler kernel times (sum of
every CUDA kernel's self time per call, ``calls`` calls after warm-up; host time excluded):

1. **Attention at small shapes, per SDPA backend** (flash, efficient, cuDNN), forward and
   backward (``torch.autograd.grad`` of the output, retained graph): the GPU part of the
   attention call constants (``universal.gpu_call_s``, set on one cuDNN decode kernel) and
   whether a backward's kernels can take less time than its forward's.
2. **Compiled LayerNorm vs RMSNorm** (``torch.compile`` of ``F.layer_norm`` /
   ``F.rms_norm`` with weights, bf16, forward): whether Inductor's looped Welford
   reduction costs more GPU time than RMSNorm's looped sum of squares on the same bytes.

Rows: ``name``, ``what``, ``args``, ``kernel_s`` (per call), ``kernels`` ([name, µs per call,
launches per call]), ``versions``. Evidence only; nothing is fitted to it.

Run (on the GPU machine): ``python3 benchmarks/gpu/small_kernels.py --out DIR``.
"""

from __future__ import annotations

import json
import os
import sys
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from _common import kernel_time, script_parser, versions  # noqa: E402

CALLS = 20


def attention_rows(ver: dict[str, Any]) -> list[dict[str, Any]]:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION}
    shapes = [(1, 8, 128, 128, 64), (1, 32, 128, 128, 128), (1, 32, 512, 512, 128),
              (1, 32, 1024, 1024, 128), (2, 32, 2048, 2048, 128), (1, 32, 1, 4096, 128),
              (4, 16, 256, 256, 64)]
    rows = []
    for b, h, q, kv, d in shapes:
        for name, be in backends.items():
            args = {"batch": b, "heads": h, "q_len": q, "kv_len": kv, "head_dim": d,
                    "backend": name, "dtype": "bf16", "causal": False}
            try:
                qt = torch.randn(b, h, q, d, device="cuda", dtype=torch.bfloat16,
                                 requires_grad=True)
                kt = torch.randn(b, h, kv, d, device="cuda", dtype=torch.bfloat16,
                                 requires_grad=True)
                vt = torch.randn(b, h, kv, d, device="cuda", dtype=torch.bfloat16,
                                 requires_grad=True)
                with sdpa_kernel([be]):
                    fwd = partial(F.scaled_dot_product_attention, qt, kt, vt)
                    t_f, _, k_f = kernel_time(fwd, CALLS)
                    out = fwd()
                    bwd = partial(torch.autograd.grad, out, (qt, kt, vt), torch.randn_like(out),
                                  retain_graph=True)
                    t_b, _, k_b = kernel_time(bwd, CALLS)
            except Exception as exc:  # noqa: BLE001  (a backend refusing a shape is data)
                rows.append({"name": f"attention_{name}_{b}x{h}x{q}x{kv}x{d}", "what": "attention",
                             "args": args, "error": repr(exc)[:300], "versions": ver})
                continue
            rows.append({"name": f"attention_{name}_{b}x{h}x{q}x{kv}x{d}", "what": "attention",
                         "args": args, "fwd_kernel_s": t_f, "bwd_kernel_s": t_b,
                         "fwd_kernels": k_f, "bwd_kernels": k_b, "versions": ver})
            print(rows[-1]["name"], f"fwd {t_f * 1e6:.2f} us  bwd {t_b * 1e6:.2f} us", flush=True)
    return rows


def norm_rows(ver: dict[str, Any]) -> list[dict[str, Any]]:
    shapes = [(4096, 4096), (16384, 1024), (16384, 4096), (16384, 8192), (65536, 4096),
              (65536, 8192)]
    ln = torch.compile(lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b), dynamic=False)
    rms = torch.compile(lambda x, w: F.rms_norm(x, (x.shape[-1],), w), dynamic=False)
    rows = []
    for r, c in shapes:
        x = torch.randn(r, c, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(c, device="cuda", dtype=torch.bfloat16)
        bias = torch.randn(c, device="cuda", dtype=torch.bfloat16)
        for name, fn in (("layernorm", partial(ln, x, w, bias)), ("rmsnorm", partial(rms, x, w))):
            t, _, k = kernel_time(fn, CALLS)
            rows.append({"name": f"{name}_compiled_{r}x{c}", "what": f"{name}_compiled",
                         "args": {"rows": r, "cols": c, "dtype": "bf16"}, "kernel_s": t,
                         "kernels": k, "versions": ver})
            print(rows[-1]["name"], f"{t * 1e6:.2f} us", k[:2], flush=True)
    return rows


def main() -> None:
    args = script_parser(__doc__).parse_args()
    os.makedirs(args.out, exist_ok=True)
    ver = versions()
    rows = attention_rows(ver) + norm_rows(ver)
    with open(os.path.join(args.out, "small_kernels.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
