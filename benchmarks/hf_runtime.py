"""transformer.estimate(runtime="hf" / "megatron") against roofline.torch.estimate of the real
Hugging Face module (built on the meta device), per phase and batch.

Run: PYTHONPATH=python python benchmarks/hf_runtime.py [--layers 2] [--hardware "H100 SXM"]
     [--runtime compiled]
Prints one row per (model, phase, batch): the torch path's step time, runtime="hf",
runtime="megatron" and the hf error relative to the torch path. ``--runtime compiled``
compares runtime="compiled" with the torch path's ``launch="compiled"`` instead.
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch
from transformers import (
    DynamicCache,
    LlamaConfig,
    LlamaForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
)

import roofline as rl
import roofline.torch  # noqa: F401

CACHE = 4096


def models(layers: int) -> dict[str, tuple[object, object]]:
    llama = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=layers,
                        num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                        max_position_embeddings=8192, rope_theta=500000.0)
    mixtral = MixtralConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=layers,
                            num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
                            num_local_experts=8, num_experts_per_tok=2)
    out = {}
    for name, hc, cls in (("llama-3-8b", llama, LlamaForCausalLM),
                          ("mixtral-8x7b", mixtral, MixtralForCausalLM)):
        hc._attn_implementation = "sdpa"
        with torch.device("meta"):
            out[name] = (hc, cls(hc).to(torch.bfloat16))
    return out


def torch_step(hc: object, model: object, phase: str, batch: int, hw: str,
               launch: str = "eager") -> float:
    if phase == "decode":
        ids = torch.zeros(batch, 1, dtype=torch.long, device="meta")
        cache = DynamicCache(config=hc)
        for i in range(hc.num_hidden_layers):  # type: ignore[attr-defined]
            k = torch.empty(batch, hc.num_key_value_heads, CACHE, 128,  # type: ignore
                            dtype=torch.bfloat16, device="meta")
            cache.update(k, k.clone(), i)
        kw = {"cache": cache}
        mode = "inference"
    else:
        ids = torch.zeros(batch, CACHE, dtype=torch.long, device="meta")
        kw = {"labels": ids} if phase == "train" else {"logits_to_keep": 1}
        mode = "train" if phase == "train" else "inference"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(rl.torch.estimate(model, ids, hw, mode=mode, kwargs=kw,
                                       launch=launch).time_s)


def config_step(hc: object, phase: str, batch: int, hw: str, runtime: str) -> float:
    cfg = rl.transformer.from_hf(hc.to_dict())  # type: ignore[attr-defined]
    kw: dict[str, object] = {"kv_len": CACHE + 1} if phase == "decode" else {"seq_len": CACHE}
    if phase == "train":  # the module's step is forward + backward: torch.estimate runs no
        kw["optimizer_update"] = False  # optimizer
    return float(rl.transformer.estimate(cfg, phase, batch, hardware=hw, runtime=runtime,
                                         **kw).time_s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hardware", default="H100 SXM")
    ap.add_argument("--runtime", default="hf", choices=("hf", "compiled"))
    args = ap.parse_args()
    rt = args.runtime
    launch = "compiled" if rt == "compiled" else "eager"
    print(f"{'case':34s} {'torch.estimate':>15s} {rt:>11s} {'megatron':>11s} "
          f"{rt + ' err':>8s} {'megatron err':>13s}")
    t0 = time.time()
    for name, (hc, model) in models(args.layers).items():
        for phase in ("train", "prefill", "decode"):
            if name.startswith("mixtral") and phase == "train":
                continue
            for batch in (1, 16, 64):
                ref = torch_step(hc, model, phase, batch, args.hardware, launch)
                hf = config_step(hc, phase, batch, args.hardware, rt)
                mg = config_step(hc, phase, batch, args.hardware, "megatron")
                print(f"{name + ' ' + phase + ' b=' + str(batch):34s} {ref * 1e3:12.3f} ms "
                      f"{hf * 1e3:8.3f} ms {mg * 1e3:8.3f} ms {hf / ref - 1:+8.1%} "
                      f"{mg / ref - 1:+13.1%}")
    print(f"({time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
