"""The product's predictions beside the H200 program measurements (data/programs/h200).

For every program row (HF Llama-3-8B dims with 2 or 4 layers: train, prefill, decode with a
DynamicCache or StaticCache, eager / CUDA graph / compiled / torchao float8) it prints:
- measured: the median CUDA-event time per step (``gpu_s``) and the host-inclusive wall time
  per step (``wall_s``) from benchmarks/gpu/llama_programs.py (the untraced re-timing where
  there is one);
- trace: ``rl.trace.explain`` of the committed profiler trace (kernel time per step it
  measured, and the model's price of the kernels it could price, with the priced fraction);
- torch: ``rl.torch.estimate`` of the same HF module on the meta device (GPU time, and the
  wall time with the launch mode that ran: eager, graph or compiled; compiled + graph: the
  compiled kernels, wall = GPU time; train steps with optimizer="adamw_foreach", as they ran);
- hf: ``rl.transformer.estimate(from_hf(config), runtime="hf")`` (GPU time and wall);
- compiled: ``rl.transformer.estimate(..., runtime="compiled")`` (the Inductor program), for
  the programs that ran under ``torch.compile`` (``compiled``; ``compiled+graph`` with
  ``launch="graph"``).
The errors are predicted / measured - 1 against wall_s (what the user waits for).

Run: PYTHONPATH=python python benchmarks/gpu_programs.py [--hardware H200] [--csv out.csv]
     [--match compiled]  (only the programs whose name contains the text)
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from typing import Any

import torch

import roofline as rl
import roofline.torch  # noqa: F401
import roofline.trace  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "programs", "h200")
LAUNCH = {"eager": "eager", "graph": "graph", "compiled": "compiled",
          "compiled+graph": "graph"}


def rows() -> list[dict[str, Any]]:
    """The traced programs; ``gpu_s`` / ``wall_s`` from ``programs_untraced.jsonl`` (timed with
    no profiler in the process) where it has the program: a finished profiler session leaves
    host-bound calls ~2x slower (profiler_effect.jsonl)."""
    with open(os.path.join(DATA, "programs_untraced.jsonl")) as f:
        clean = {r["name"]: r for r in map(json.loads, f)}
    with open(os.path.join(DATA, "programs.jsonl")) as f:
        out = [r for r in map(json.loads, f) if "error" not in r]
    for r in out:
        if r["name"] in clean:
            r["gpu_s"], r["wall_s"] = clean[r["name"]]["gpu_s"], clean[r["name"]]["wall_s"]
    return out


def hf_config(cfg: dict[str, Any]) -> Any:
    from transformers import LlamaConfig

    hc = LlamaConfig(hidden_size=cfg["hidden"], intermediate_size=cfg["intermediate"],
                     num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"],
                     num_key_value_heads=cfg["kv_heads"], vocab_size=cfg["vocab"],
                     max_position_embeddings=8192, rope_theta=500000.0)
    hc._attn_implementation = "sdpa"
    return hc


_MODELS: dict[int, Any] = {}


def meta_model(hc: Any) -> Any:
    from transformers import LlamaForCausalLM

    if hc.num_hidden_layers not in _MODELS:
        with torch.device("meta"):
            _MODELS[hc.num_hidden_layers] = LlamaForCausalLM(hc).to(torch.bfloat16)
    return _MODELS[hc.num_hidden_layers]


def torch_estimate(cfg: dict[str, Any], hw: str) -> Any:
    from transformers import DynamicCache, StaticCache

    hc = hf_config(cfg)
    model = meta_model(hc)
    phase, b = cfg["phase"], cfg["batch"]
    # compiled + CUDA graph: Inductor's kernels (launch="compiled"), replayed (wall = GPU)
    launch = "compiled" if cfg["runtime"].startswith("compiled") else LAUNCH.get(
        cfg["runtime"], "compiled")
    if phase == "decode":
        cache_len = cfg["kv_len"] - 1
        ids = torch.zeros(b, 1, dtype=torch.long, device="meta")
        if cfg["cache"] == "StaticCache":
            cache = StaticCache(config=hc, max_cache_len=cfg["max_cache_len"])
        else:
            cache = DynamicCache(config=hc)
        # the measured DynamicCache steps were rewound with crop(-1) after every step, so the
        # timed cat saw the past as a view of a one-token-longer buffer (non-contiguous: the
        # generic strided CatArrayBatchedCopy); price that, not a generation loop's
        # contiguous past (the vectorized cat)
        crop = int(cfg["cache"] != "StaticCache")
        for i in range(hc.num_hidden_layers):
            k = torch.empty(b, hc.num_key_value_heads, cache_len + crop, 128,
                            dtype=torch.bfloat16, device="meta")
            cache.update(k, k.clone(), i)
        if crop:
            cache.crop(-1)
        kw: dict[str, Any] = {"cache": cache, "use_cache": True}
        if cfg["cache"] == "StaticCache":
            kw["position_ids"] = torch.zeros(b, 1, dtype=torch.long, device="meta")
        mode = "inference"
    else:
        ids = torch.zeros(b, cfg["seq_len"], dtype=torch.long, device="meta")
        kw = {"labels": ids} if phase == "train" else {"logits_to_keep": 1}
        mode = "train" if phase == "train" else "inference"
    # the train steps ran torch's AdamW (foreach): priced as it launches
    opt = "adamw_foreach" if phase == "train" else None
    return rl.torch.estimate(model, ids, hw, mode=mode, kwargs=kw, launch=launch, optimizer=opt)


def hf_estimate(cfg: dict[str, Any], hw: str, runtime: str = "hf") -> Any:
    hc = hf_config(cfg)
    mc = rl.transformer.from_hf(hc.to_dict())
    kw: dict[str, Any] = ({"kv_len": cfg["kv_len"]} if cfg["phase"] == "decode"
                          else {"seq_len": cfg["seq_len"]})
    if cfg.get("cache") == "StaticCache":
        kw["cache"] = "static"
    launch = LAUNCH.get(cfg["runtime"], "compiled")
    if cfg["phase"] == "train":  # what the program ran: torch.optim.AdamW (foreach), bf16
        kw["optimizer"] = "adamw_foreach"
    return rl.transformer.estimate(mc, cfg["phase"], cfg["batch"], hardware=hw,
                                   runtime=runtime, launch=launch, **kw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hardware", default="H200")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--match", default="", help="only programs whose name contains this")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    out = []
    hdr = (f"{'program':44s} {'gpu ms':>8s} {'wall ms':>8s} | {'trace ms':>8s} {'model':>8s} "
           f"{'priced':>6s} | {'torch':>8s} {'wall':>8s} {'err':>6s} | {'hf':>8s} {'wall':>8s} "
           f"{'err':>6s} | {'compiled':>8s} {'wall':>8s} {'err':>6s}")
    print(hdr)
    for r in rows():
        cfg = r["config"]
        if cfg.get("model") != "LlamaForCausalLM" or args.match not in r["name"]:
            continue
        rec: dict[str, Any] = {"program": r["name"], "gpu_s": r["gpu_s"], "wall_s": r["wall_s"]}
        rep = rl.trace.explain(os.path.join(DATA, "traces", r["trace"]), hardware=args.hardware,
                               iterations=r.get("trace_steps", 1))
        rec.update(trace_s=rep.measured_s, trace_model_s=rep.predicted_s,
                   priced=rep.priced_fraction)
        if "float8" in cfg["runtime"]:
            rec.update(torch_s=None, torch_wall_s=None, hf_s=None, hf_wall_s=None)
            rec.update(comp_s=None, comp_wall_s=None)
        else:
            te = torch_estimate(cfg, args.hardware)
            he = hf_estimate(cfg, args.hardware)
            t_wall = te.time_s if cfg["runtime"] == "compiled+graph" else te.wall_s
            rec.update(torch_s=te.time_s, torch_wall_s=t_wall, hf_s=float(he.time_s),
                       hf_wall_s=float(he.wall_s) if he.wall_s is not None else None)
            ce = (hf_estimate(cfg, args.hardware, "compiled")
                  if cfg["runtime"].startswith("compiled") else None)
            rec.update(comp_s=float(ce.time_s) if ce is not None else None,
                       comp_wall_s=float(ce.wall_s) if ce is not None else None)
        out.append(rec)

        def ms(x: float | None) -> str:
            return f"{x * 1e3:8.3f}" if x is not None else f"{'-':>8s}"

        def err(x: float | None, wall: float = r["wall_s"]) -> str:
            return f"{x / wall - 1:+6.0%}" if x is not None else f"{'-':>6s}"

        print(f"{r['name']:44s} {ms(r['gpu_s'])} {ms(r['wall_s'])} | {ms(rec['trace_s'])} "
              f"{ms(rec['trace_model_s'])} {rec['priced']:6.0%} | {ms(rec['torch_s'])} "
              f"{ms(rec['torch_wall_s'])} {err(rec['torch_wall_s'])} | {ms(rec['hf_s'])} "
              f"{ms(rec['hf_wall_s'])} {err(rec['hf_wall_s'])} | {ms(rec['comp_s'])} "
              f"{ms(rec['comp_wall_s'])} {err(rec['comp_wall_s'])}", flush=True)
    if args.csv:
        import pandas as pd

        pd.DataFrame(out).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
