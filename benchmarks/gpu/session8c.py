"""Does HF's DynamicCache decode step run aten's slow generic cat, or the vectorized one?
(issue #23; measured on the lent GPU, torch + transformers only).

The H200 decode programs of session 5 (``llama_programs.py``) cropped the cache back after
every step (``DynamicCache.crop(-1)``: the past keys/values become a sliced, non-contiguous
view), so each timed ``torch.cat`` saw a non-contiguous input and ran the generic strided
``CatArrayBatchedCopy`` (~0.7 TB/s). In a real generation loop the past is the previous
step's ``cat`` output (contiguous) and the new key/value states of one token are contiguous,
so aten's ``parallel_cat`` may run ``CatArrayBatchedCopy_vectorized`` instead. Parts:

- ``cat``: ``torch.cat([past, new], dim=-2)`` for past [b, 8, 4096, 128] bf16, b = 1/16/64,
  contiguous or a crop view of a [b, 8, 4097, 128] buffer; kernel time and kernel names.
- ``decode``: a 2-layer HF Llama (Llama-3-8B dims) decode step with a DynamicCache of 4096
  tokens, b = 1/16/64, grown by every step as ``generate`` does (no crop), and the same
  with ``crop(-1)`` after each step (the session-5 method) side by side: CUDA-event GPU time
  and wall time per step, and the profiler's kernels.

Rows: ``DIR/session8c.jsonl``. Run: ``python3 benchmarks/gpu/session8c.py --out DIR``.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, script_parser, time_step  # noqa: E402
from _common import kernel_time as _kernel_time  # noqa: E402
from llama_programs import CACHE, build, fill_dynamic, llama_config  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"
SMOKE = DEV == "cpu"
BATCHES = (1, 16, 64)


def kernel_time(fn: Any, calls: int = 10) -> tuple[float, float, list[list[Any]]]:
    if SMOKE:
        fn()
        return 0.0, 0.0, []
    total, launches, kernels = _kernel_time(fn, calls, warmup=2)
    return total, launches, [[n[:110], t, c] for n, t, c in kernels[:8]]


def cat_part(out: Out) -> None:
    cache = 64 if SMOKE else CACHE
    for b in BATCHES:
        new = torch.randn(b, 8, 1, 128, device=DEV, dtype=torch.bfloat16)
        contig = torch.randn(b, 8, cache, 128, device=DEV, dtype=torch.bfloat16)
        view = torch.randn(b, 8, cache + 1, 128, device=DEV, dtype=torch.bfloat16)[:, :, :cache]
        for name, past in (("contiguous", contig), ("crop_view", view)):
            ts, launches, ks = kernel_time(lambda past=past, new=new: torch.cat([past, new], -2))
            out.row(name=f"cat_{name}_b{b}", what="cat",
                    args={"batch": b, "kv_heads": 8, "cache": cache, "head_dim": 128,
                          "past": name, "past_strides": list(past.stride()),
                          "dtype": "bf16"},
                    kernel_s=ts, launches=launches, kernels=ks)


def decode_part(out: Out) -> None:
    hc = llama_config(2)
    if SMOKE:
        hc.hidden_size, hc.intermediate_size = 256, 512
        hc.num_attention_heads, hc.num_key_value_heads, hc.vocab_size = 2, 1, 1000
        hc.head_dim = 128
    model = build(hc, DEV)
    for b in BATCHES:
        for mode in ("grown", "cropped"):
            cache = fill_dynamic(hc, b, DEV)
            ids = torch.randint(0, hc.vocab_size, (b, 1), device=DEV)

            def step(cache: Any = cache, ids: Any = ids) -> None:
                with torch.no_grad():
                    model(input_ids=ids, past_key_values=cache, use_cache=True)

            after = (lambda cache=cache: cache.crop(-1)) if mode == "cropped" else None
            t = time_step(step, warmup=3, repeats=10, after=after)
            ts, launches, ks = kernel_time(step) if mode == "grown" else (0.0, 0.0, [])
            out.row(name=f"decode_dynamic_{mode}_b{b}", what="hf_decode",
                    args={"batch": b, "cache": CACHE, "layers": 2, "mode": mode,
                          "model": "LlamaForCausalLM (Llama-3-8B dims)", "attn": "sdpa"},
                    kernel_s=ts, launches=launches, kernels=ks, **t)


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("--part", action="append", choices=("cat", "decode"))
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    out = Out(args.out, "session8c")
    for part in args.part or ["cat", "decode"]:
        out.guarded(part, lambda part=part: cat_part(out) if part == "cat" else decode_part(out))


if __name__ == "__main__":
    main()
