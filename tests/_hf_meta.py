"""Hugging Face models on the meta device and the inputs of one step, shared by the runtime
parity tests (test_hf_runtime.py, test_compiled_runtime.py): a 2-layer LlamaForCausalLM with
Llama-3-8B dims and a 2-layer MixtralForCausalLM, and decode / prefill / train inputs with a
``cache_len``-token DynamicCache or StaticCache. Import after ``pytest.importorskip`` of torch
and transformers."""

from __future__ import annotations

from typing import Any

import torch
import transformers


def meta_model(kind: str) -> tuple[Any, Any]:
    """(config, bf16 model on the meta device) of ``kind`` ``"llama"`` or ``"mixtral"``."""
    if kind == "llama":
        hc = transformers.LlamaConfig(
            hidden_size=4096, intermediate_size=14336, num_hidden_layers=2,
            num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
            max_position_embeddings=8192, rope_theta=500000.0)
        cls = transformers.LlamaForCausalLM
    else:
        hc = transformers.MixtralConfig(
            hidden_size=4096, intermediate_size=14336, num_hidden_layers=2,
            num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
            num_local_experts=8, num_experts_per_tok=2)
        cls = transformers.MixtralForCausalLM
    hc._attn_implementation = "sdpa"
    with torch.device("meta"):
        return hc, cls(hc).to(torch.bfloat16)


def step_inputs(hc: Any, phase: str, batch: int, cache_len: int,
                cache: str = "dynamic", cropped: bool = False) -> tuple[Any, dict[str, Any], str]:
    """(input ids, forward kwargs, ``roofline.torch.estimate`` mode) of one step: decode of one
    token per sequence against a filled cache of ``cache_len`` tokens (``cache`` ``"dynamic"``
    or ``"static"``, the latter with ``cache_len + 1`` slots), else a ``cache_len``-token
    prefill (last token's logits) or train step (labels = ids). ``cropped``: the cached K/V
    are views of ``cache_len + 1``-token buffers, as after ``DynamicCache.crop(-1)`` (the H200
    decode programs rewound their cache so: the step's ``cat`` sees a non-contiguous past);
    otherwise contiguous, as a generation loop leaves them (the previous step's ``cat``)."""
    if phase != "decode":
        ids = torch.zeros(batch, cache_len, dtype=torch.long, device="meta")
        kw: dict[str, Any] = {"labels": ids} if phase == "train" else {"logits_to_keep": 1}
        return ids, kw, "train" if phase == "train" else "inference"
    ids = torch.zeros(batch, 1, dtype=torch.long, device="meta")
    c = (transformers.StaticCache(config=hc, max_cache_len=cache_len + 1) if cache == "static"
         else transformers.DynamicCache(config=hc))
    for i in range(hc.num_hidden_layers):
        k = torch.empty(batch, hc.num_key_value_heads, cache_len + int(cropped), 128,
                        dtype=torch.bfloat16, device="meta")
        c.update(k, k.clone(), i)
    if cropped:
        c.crop(-1)
    kw = {"cache": c, "use_cache": True}
    if cache == "static":
        kw["position_ids"] = torch.zeros(batch, 1, dtype=torch.long, device="meta")
    return ids, kw, "inference"
