"""New built-in models (GPT-OSS, Qwen3 dense, Llama 4, DeepSeek-V3 MTP): parameter counts
against published totals and against the Hugging Face model built on the meta device, and
the pricing of sliding-window / chunked attention and of the MTP module."""

from __future__ import annotations

import json
import math

import pytest

import roofline as rl
from roofline.transformer.config import from_hf
from roofline.transformer.layers import local_attention

B = 1e9


@pytest.mark.parametrize(("name", "total", "active", "rel"), [
    ("GPT-OSS-120B", 116.83e9, 5.13e9, 2e-3),   # model card: 116.8 B total, 5.1 B active
    ("GPT-OSS-20B", 20.91e9, 3.61e9, 2e-3),     # 20.9 B / 3.6 B
    ("Llama-4-Scout", 107.8e9, 17.2e9, 1e-2),   # 109 B incl. vision / 17 B active
    ("Llama-4-Maverick", 400.7e9, 17.2e9, 1e-2),  # 400 B / 17 B active
    ("Qwen3-32B", 32.8e9, 32.8e9, 3e-3),
    ("Qwen3-14B", 14.8e9, 14.8e9, 3e-3),
    ("Qwen3-4B", 4.02e9, 4.02e9, 3e-3),
    ("DeepSeek-V3", 671e9, 37.5e9, 3e-3),
])
def test_published_totals(name, total, active, rel):
    c = rl.transformer.config(name).param_counts()
    assert c["total"] == pytest.approx(total, rel=rel)
    # GPT-OSS's published active count leaves the input embedding out
    got = c["active"] - (c["embedding"] if name.startswith("GPT-OSS") else 0)
    assert got == pytest.approx(active, rel=max(rel, 1e-2))


def test_deepseek_mtp_params():
    cfg = rl.transformer.config("DeepSeek-V3")
    c = cfg.param_counts()
    assert cfg.mtp_layers == 1
    assert c["total"] == pytest.approx(671.0e9, rel=1e-3)  # MTP outside the total
    # the checkpoint's 685 B = 671 B + the MTP module with copies of embedding and head
    stored = c["mtp"] + 2 * cfg.vocab_size * cfg.hidden_size
    assert (c["total"] + stored) / B == pytest.approx(684.5, rel=2e-3)
    # hand count: one MoE block (attention + 256 experts + shared + router + norms),
    # eh_proj 2h·h and enorm, hnorm, head norm
    h = cfg.hidden_size
    block = (cfg.attention_params() + 257 * 3 * h * 2048 + 256 * h + cfg.norm_params())
    assert c["mtp"] == block + 2 * h * h + 3 * h


def _hf_numel(cls_name, config_cls, kwargs):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = getattr(transformers, config_cls)(**kwargs)
    with torch.device("meta"):
        model = getattr(transformers, cls_name)(cfg)
    return sum(p.numel() for p in model.parameters())


def _fields(path_name):
    doc = json.loads(next(p for p in rl.transformer.config.__globals__["_CONFIG_DIR"].glob(
        f"{path_name}.json")).read_text())
    doc = doc.get("text_config", doc)
    return {k: v for k, v in doc.items() if not k.startswith("_") and k != "model_type"}


@pytest.mark.parametrize(("name", "file", "cls", "config_cls", "tol"), [
    ("GPT-OSS-20B", "gpt-oss-20b", "GptOssForCausalLM", "GptOssConfig", 0),
    ("Qwen3-4B", "qwen3-4b", "Qwen3ForCausalLM", "Qwen3Config", 0),
    ("Qwen3-30B-A3B", "qwen3-30b-a3b", "Qwen3MoeForCausalLM", "Qwen3MoeConfig", 0),
    # Llama 4's qk-norm is a weightless L2 norm: 0 parameters in HF, 2·head_dim per layer
    # would be counted by an RMSNorm; we price it as no parameters either (qk_norm=False)
    ("Llama-4-Scout", "llama-4-scout", "Llama4ForCausalLM", "Llama4TextConfig", 0),
])
def test_hf_meta_parity(name, file, cls, config_cls, tol):
    ours = rl.transformer.config(name).param_counts()["total"]
    theirs = _hf_numel(cls, config_cls, _fields(file))
    assert abs(ours - theirs) <= tol, (ours, theirs)


def test_from_hf_gpt_oss_fields():
    cfg = from_hf({"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 4,
                   "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
                   "intermediate_size": 2880, "num_local_experts": 8, "experts_per_token": 2,
                   "sliding_window": 128, "attention_bias": True, "vocab_size": 1000,
                   "layer_types": ["sliding_attention", "full_attention"] * 2})
    assert cfg.layer_attention() == ["sliding", "full", "sliding", "full"]
    assert cfg.sliding_window == 128 and cfg.attention_sinks and cfg.mlp_bias
    assert cfg.experts_per_token == 2
    # attention: q,k,v,o weights + biases + one sink per head
    h, d = 2880, 64
    assert cfg.attention_params() == h * 80 * d + 64 * d * h + 80 * d + h + 64
    # KV cache at 4096 tokens: two full layers of 4096, two sliding of 128 tokens
    per_token = 2 * 8 * 64 * 2
    assert cfg.kv_cache_bytes(1, 4096) == per_token * (2 * 4096 + 2 * 128)


def test_from_hf_glu_limit_and_yarn_attention_factor():
    """GPT-OSS's swiglu_limit and YaRN's attention factor (0.1·ln(factor) + 1, or the ratio
    of the two mscales, or an explicit attention_factor); other RoPE types give 1."""
    base = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "vocab_size": 100}
    gpt = rl.transformer.config("GPT-OSS-120B")
    assert gpt.glu_limit == 7.0
    assert gpt.rope_mscale == pytest.approx(0.1 * math.log(32.0) + 1.0, rel=1e-12)
    assert from_hf(base).rope_mscale == 1.0 and from_hf(base).glu_limit == 0.0
    ds = {**base, "rope_scaling": {"type": "yarn", "factor": 40, "mscale": 1.0,
                                   "mscale_all_dim": 1.0}}
    assert from_hf(ds).rope_mscale == 1.0  # DeepSeek-V3: the two mscales cancel
    ratio = {**base, "rope_scaling": {"rope_type": "yarn", "factor": 40, "mscale": 1.0,
                                      "mscale_all_dim": 0.5}}
    m = 0.1 * math.log(40.0)
    assert from_hf(ratio).rope_mscale == pytest.approx((m + 1) / (0.5 * m + 1), rel=1e-12)
    given = {**base, "rope_scaling": {"rope_type": "yarn", "factor": 4,
                                      "attention_factor": 1.25}}
    assert from_hf(given).rope_mscale == 1.25
    llama = {**base, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}
    assert from_hf(llama).rope_mscale == 1.0
    with pytest.raises(TypeError, match="rope_scaling"):
        from_hf({**base, "rope_scaling": "yarn"})
    with pytest.raises(ValueError, match="swiglu_limit"):
        from_hf({**base, "swiglu_limit": -1.0})
    with pytest.raises(ValueError, match="rope_mscale"):
        gpt.replace(rope_mscale=0.0)
    with pytest.raises(TypeError, match="glu_limit"):
        gpt.replace(glu_limit="7")


def test_from_hf_llama4_nested_and_interleaved():
    text = {"model_type": "llama4_text", "hidden_size": 512, "intermediate_size": 256,
            "intermediate_size_mlp": 1024, "num_hidden_layers": 8, "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 64, "num_local_experts": 4,
            "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
            "attention_chunk_size": 8192, "vocab_size": 1000}
    cfg = from_hf({"model_type": "llama4", "text_config": text})
    assert cfg.layer_kinds() == ["dense", "moe"] * 4
    assert cfg.layer_attention() == ["chunked"] * 3 + ["full"] + ["chunked"] * 3 + ["full"]
    assert cfg.intermediate_size == 1024 and cfg.moe_intermediate_size == 256
    assert cfg.num_shared_experts == 1 and cfg.attention_chunk == 8192


def test_from_hf_qwen_sliding_window_ignored_and_bad_types():
    base = {"model_type": "qwen3", "hidden_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 10}
    assert from_hf({**base, "use_sliding_window": False, "sliding_window": 4096}
                   ).layer_types == ()
    with pytest.raises(ValueError, match="layer_types entries"):
        from_hf({**base, "layer_types": ["full_attention", "local"]})
    with pytest.raises(ValueError, match="sliding_window >= 1"):
        rl.transformer.config("Qwen3-4B").replace(layer_types=("sliding",) * 36)
    with pytest.raises(ValueError, match="one entry per layer"):
        rl.transformer.config("Qwen3-4B").replace(layer_types=("full",))


def test_local_attention_shapes():
    # decode: a sliding query sees min(kv, window) keys, a chunked one its chunk's keys
    assert local_attention("sliding", 128, 1, 5000) == (1, 1, 128, True, 1.0)
    assert local_attention("chunked", 8192, 1, 8192 + 100) == (1, 1, 100, True, 1.0)
    assert local_attention("full", 0, 1, 5000) == (1, 1, 5000, True, 1.0)
    # training over 4096 tokens: 32 blocks of 128 queries, each query scoring the window plus
    # the kernel's 128-row query tile (the band's two KV blocks): 128 + 128 = 256 keys
    assert local_attention("sliding", 128, 4096, 4096) == (32, 128, 256, False, 1.0)
    assert local_attention("chunked", 8192, 32768, 32768) == (4, 8192, 8192, True, 1.0)
    assert local_attention("sliding", 128, 100, 100) == (1, 100, 100, True, 1.0)
    # a window of 4096 over 32768 tokens: 8 blocks, 4096 + 128 keys per query
    assert local_attention("sliding", 4096, 32768, 32768) == (8, 4096, 4224, False, 1.0)
    # just past the window: the keys stop at the sequence (200 < 256), remainder scaled
    assert local_attention("sliding", 128, 200, 200) == (1, 128, 200, False, 200 / 128)


def test_sliding_window_visited_keys():
    # a tile of 128 queries [a, a + 128) needs keys [a - w, a + 128): w + 128
    assert rl._core.sliding_window_visited_keys(128) == 256.0
    assert rl._core.sliding_window_visited_keys(4096) == 4224.0


def test_sliding_and_chunked_attention_priced_by_keys_seen():
    gpt = rl.transformer.config("GPT-OSS-120B")
    full = gpt.replace(layer_types=(), sliding_window=0)
    a = rl.transformer.estimate(gpt, "train", seq_len=8192, hardware="H100 SXM")
    b = rl.transformer.estimate(full, "train", seq_len=8192, hardware="H100 SXM")
    sa = a.summary()
    sb = b.summary()
    attn_a = sa[sa["op"].str.startswith("attention")]["flops"].sum()
    attn_b = sb[sb["op"].str.startswith("attention")]["flops"].sum()
    # half the layers score 128 + 128 keys (window plus the kernel's query tile, the masked
    # half of the diagonal block computed) instead of ~4096 on average: FLOPs about halve
    assert attn_a / attn_b == pytest.approx(0.5 + 0.5 * 256 / 4096, rel=0.02)
    assert a.time_s < b.time_s
    # Llama 4 Scout prefill of 32 k: 36 chunked layers do a quarter of a full layer's work
    scout = rl.transformer.config("Llama-4-Scout")
    r = rl.transformer.estimate(scout, "prefill", seq_len=32768, hardware="H100 SXM")
    s = r.summary()
    chunk = s[s["op"] == "attention (chunked 8192)"]["flops"].sum()
    full_attn = s[s["op"] == "attention"]["flops"].sum()
    assert chunk / full_attn == pytest.approx(36 / 12 / 4, rel=0.02)
    # the KV cache of a decode step keeps 8192 tokens for chunked layers
    d = rl.transformer.estimate(scout, "decode", batch=1, kv_len=65536, hardware="H100 SXM")
    per_token = scout.kv_cache_bytes_per_token()
    assert d.memory["kv_cache_bytes"] == per_token * (12 * 65536 + 36 * 8192)


def test_mtp_priced_in_training_only():
    ds = rl.transformer.config("DeepSeek-V3")
    kw = dict(seq_len=4096, hardware="H100 SXM", ep=8)
    with_mtp = rl.transformer.estimate(ds, "train", **kw)
    without = rl.transformer.estimate(ds.replace(mtp_layers=0), "train", **kw)
    assert [g[0] for g in with_mtp.groups] == ["dense", "moe", "mtp", "head"]
    extra = with_mtp.time_s / without.time_s - 1
    # one more MoE block of 58 and a second LM head: a few percent more
    assert 0.01 < extra < 0.06
    dec = rl.transformer.estimate(ds, "decode", batch=4, kv_len=1024, hardware="H100 SXM")
    dec0 = rl.transformer.estimate(ds.replace(mtp_layers=0), "decode", batch=4, kv_len=1024,
                                   hardware="H100 SXM")
    assert dec.time_s == dec0.time_s
    assert with_mtp.memory["weights_bytes"] > without.memory["weights_bytes"]


def test_sliding_window_training_attention_linear_in_sequence():
    # GPT-OSS-120B: 18 sliding layers of 64 query heads of 64; each query scores 128 + 128
    # keys, so the forward's FLOPs are 18 · 4 · 64 heads · S · 256 · 64 (batch 1), and the
    # time grows with the sequence, not its square (masked tiles skipped)
    gpt = rl.transformer.config("GPT-OSS-120B")
    times = []
    for seq in (4096, 8192):
        s = rl.transformer.estimate(gpt, "train", seq_len=seq, hardware="B200").summary()
        fwd = s[s["op"] == "attention (sliding 128)"]
        assert fwd["flops"].sum() == pytest.approx(18 * 4 * 64 * seq * 256 * 64, rel=1e-9)
        times.append(s[s["op"].str.startswith("attention (sliding")]["time_s"].sum())
    assert 1.8 < times[1] / times[0] < 2.2
