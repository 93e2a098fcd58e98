"""rl.transformer: configs, parameter counts, KV cache, TP/EP memory, per-op tables and totals."""

from __future__ import annotations

import json
import math

import pytest

import roofline as rl

T = rl.transformer


@pytest.mark.parametrize(("name", "total", "active"), [
    ("Llama-3-8B", 8.03e9, 8.03e9),         # Meta: 8.03B
    ("Llama-3-70B", 70.55e9, 70.55e9),      # 70.6B
    ("Llama-3.1-405B", 405.85e9, 405.85e9),  # 405B
    ("Mixtral-8x7B", 46.70e9, 12.88e9),     # Mistral: 46.7B total, 12.9B active
    ("DeepSeek-V3", 671.0e9, 37.5e9),       # DeepSeek: 671B total, 37B activated
    ("Qwen3-8B", 8.19e9, 8.19e9),           # Qwen: 8.2B
    ("Qwen3-30B-A3B", 30.53e9, 3.35e9),     # 30.5B / 3.3B
    ("Qwen3-235B-A22B", 235.09e9, 22.19e9),  # 235B / 22B
])
def test_parameter_counts_match_public_numbers(name: str, total: float, active: float) -> None:
    c = T.config(name).param_counts()
    assert c["total"] == pytest.approx(total, rel=2e-3)
    assert c["active"] == pytest.approx(active, rel=5e-3)


def test_llama_3_8b_by_hand() -> None:
    c = T.config("llama-3-8b").param_counts()
    # attention: 4096·(32+2·8)·128 + 32·128·4096 = 41,943,040 per layer
    assert c["attention"] == 32 * 41_943_040
    # MLP: 3·4096·14336 = 176,160,768 per layer
    assert c["mlp"] == 32 * 176_160_768
    assert c["embedding"] == c["lm_head"] == 128256 * 4096
    assert c["total"] == 8_030_261_248


def test_every_builtin_has_a_source_and_aliases_work() -> None:
    names = T.list_configs()
    assert len(names) >= 8
    for n in names:
        assert T.config(n).source.endswith("(config.json)")
    assert T.config("meta-llama/Meta-Llama-3-8B").name == "Llama-3-8B"
    assert T.config("deepseek-ai/DeepSeek-V3").name == "DeepSeek-V3"
    with pytest.raises(KeyError, match="did you mean"):
        T.config("Llama-3-8C")


def test_from_hf_dict_and_path(tmp_path) -> None:
    hf = {"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
          "vocab_size": 32000, "hidden_act": "silu"}
    a = T.from_hf(hf, name="Mistral-7B")
    assert a.param_counts()["total"] == pytest.approx(7.24e9, rel=2e-3)
    (tmp_path / "config.json").write_text(json.dumps(hf))
    assert T.from_hf(tmp_path).param_counts() == a.param_counts()
    assert T.from_hf(tmp_path / "config.json").num_kv_heads == 8
    gpt2 = T.from_hf({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
                      "vocab_size": 50257, "activation_function": "gelu_new",
                      "tie_word_embeddings": True})
    assert not gpt2.mlp_gated and gpt2.norm == "layernorm" and gpt2.intermediate_size == 3072
    with pytest.raises(FileNotFoundError):
        T.from_hf(tmp_path / "missing.json")
    with pytest.raises(KeyError, match="hidden_size"):
        T.from_hf({"num_hidden_layers": 2})


def test_deepseek_structure() -> None:
    cfg = T.config("DeepSeek-V3")
    assert cfg.is_mla and cfg.is_moe
    assert cfg.dense_layers == (0, 1, 2)
    assert cfg.layer_kinds().count("moe") == 58


def test_kv_cache_bytes() -> None:
    llama = T.config("Llama-3-8B")
    # 2·8·128·2 = 4096 bytes per token per layer; ·32 layers = 128 KiB per token
    assert llama.kv_cache_bytes_per_token() == 4096
    assert llama.kv_cache_bytes(1, 1) == 131072
    ds = T.config("DeepSeek-V3")
    # MLA latent (512 + 64)·2 = 1152 bytes per token per layer
    assert ds.kv_cache_bytes(64, 4096) == 61 * 64 * 4096 * 1152
    r = T.estimate(llama, "decode", batch=8, kv_len=4096, hardware="H100 SXM")
    assert r.memory["kv_cache_bytes"] == llama.kv_cache_bytes(8, 4096)


def test_tp_and_ep_split_memory() -> None:
    llama = T.config("Llama-3-70B")
    one = T.estimate(llama, "decode", batch=8, kv_len=2048, hardware="H100 SXM")
    tp8 = T.estimate(llama, "decode", batch=8, kv_len=2048, hardware="H100 SXM", tp=8)
    # 8 kv heads split 8 ways: the cache per GPU is 1/8; every weight matrix is split
    assert tp8.memory["kv_cache_bytes"] == one.memory["kv_cache_bytes"] / 8
    c = llama.param_counts()  # norms are replicated, everything else split 8 ways
    assert tp8.memory["weights_bytes"] == pytest.approx(
        2 * ((c["total"] - c["norms"]) / 8 + c["norms"]))
    assert one.memory["weights_bytes"] == pytest.approx(2 * llama.param_counts()["total"])
    ds = T.config("DeepSeek-V3")
    ep1 = T.estimate(ds, "decode", batch=1, kv_len=128, hardware="H800")
    ep8 = T.estimate(ds, "decode", batch=1, kv_len=128, hardware="H800", ep=8)
    c = ds.param_counts()
    # only routed experts are split by ep
    assert ep1.memory["weights_bytes"] - ep8.memory["weights_bytes"] == pytest.approx(
        2 * c["experts"] * (1 - 1 / 8))
    with pytest.raises(ValueError, match="ep must divide num_experts"):
        T.estimate(ds, "decode", batch=1, kv_len=128, hardware="H800", ep=3)
    with pytest.raises(ValueError, match="tp must divide num_heads"):
        T.estimate(llama, "decode", batch=1, kv_len=128, hardware="H100 SXM", tp=3)


def test_table_sums_to_totals() -> None:
    r = T.estimate("Mixtral-8x7B", "decode", batch=16, kv_len=2048, hardware="H100 SXM", tp=2)
    table = r.to_pandas()
    assert len(table) == 32 * r.ops().query("block == 'moe'").shape[0] + 3
    assert table["time_s"].sum() == pytest.approx(r.time_s)
    assert table["flops"].sum() == pytest.approx(r.flops)
    assert r.summary()["time_s"].sum() == pytest.approx(r.time_s)
    assert r.total.time_s == pytest.approx(r.time_s)
    assert set(table["layer"]) == set(range(-1, 33))
    assert r.tokens_per_s == pytest.approx(16 / r.time_s)
    assert 0 < r.mfu < 1


def test_decode_flops_close_to_two_n_active_plus_attention() -> None:
    cfg = T.config("Llama-3-8B")
    r = T.estimate(cfg, "decode", batch=1, kv_len=1, hardware="H100 SXM")
    # linear FLOPs per token = 2·(params - embedding); attention over 1 key is negligible
    linear = 2 * (cfg.param_counts()["total"] - cfg.param_counts()["embedding"])
    assert r.flops == pytest.approx(linear, rel=1e-3)


def test_train_has_backward_rows_and_memory() -> None:
    r = T.estimate("Llama-3-8B", "train", batch=1, seq_len=2048, hardware="H100 SXM")
    ops = r.ops()
    assert (ops["op"] == "attention bwd").sum() == 1
    fwd = ops[~ops["op"].str.endswith("bwd")]["flops"].sum()
    bwd = ops[ops["op"].str.endswith("bwd")]["flops"].sum()
    assert 1.9 < bwd / fwd < 2.2  # linears 2x, attention 2.5x
    m = r.memory
    params = m["params_per_gpu"]
    assert m["optimizer_bytes"] == 12 * params and m["gradients_bytes"] == 2 * params
    assert m["activations_bytes"] > 0 and m["kv_cache_bytes"] == 0


def test_linear_recipe_uses_float8() -> None:
    kw = {"batch": 64, "kv_len": 4096, "hardware": "H800", "ep": 128}
    bf16 = T.estimate("DeepSeek-V3", "decode", **kw)
    fp8 = T.estimate("DeepSeek-V3", "decode", linear_recipe="blockwise", **kw)
    assert fp8.time_s < bf16.time_s
    assert fp8.memory["weights_bytes"] < 0.6 * bf16.memory["weights_bytes"]
    with pytest.raises(KeyError, match="unknown linear_recipe"):
        T.estimate("Llama-3-8B", "decode", batch=1, kv_len=8, hardware="H100 SXM",
                   linear_recipe="fp9")


def test_float8_linear_launches_exclude_the_bf16_baseline() -> None:
    """An eager step launches each float8 linear's casts and low-precision GEMM, not the bf16
    GEMM float8.linear reports as its baseline. Llama-3-8B, 32 layers: bf16 = 11 kernels per
    layer (norm, qkv, rope, attention, o, residual, norm, gate_up, act, down, residual) and 3
    in the head = 355; 4 linears per layer plus the LM head = 129 linears, each adding its
    casts: one static quantize (tensorwise_static, 484) or amax + reduce + cast (tensorwise,
    742)."""
    def kernels(recipe: str | None) -> int:
        return rl.transformer.estimate("llama-3-8b", "prefill", 1, seq_len=128,
                                       hardware="H100 SXM", linear_recipe=recipe,
                                       launch="eager").wall.kernels
    assert kernels(None) == 32 * 11 + 3 == 355
    assert kernels("tensorwise_static") == 355 + 129 * 1 == 484
    assert kernels("tensorwise") == 355 + 129 * 3 == 742


def test_seed_000_deepseek_v3_decode_layer_on_h800() -> None:
    """Seed 000: batch 64 per GPU, kv_len 4096, 256 experts over EP=128 (2 per GPU)."""
    r = T.estimate(T.config("DeepSeek-V3"), phase="decode", batch=64, kv_len=4096,
                   hardware="H800", ep=128, efficiency="peak")
    ops = r.ops().set_index(["block", "op"])
    attn = ops.loc[("moe", "attention (MLA absorbed)")]
    # 2·64·128·4096·(576+512) FLOPs; the 576-wide latent cache is read once
    assert attn["flops"] == 73_014_444_032
    assert attn["bytes"] == 64 * 128 * 576 * 2 + 64 * 4096 * 576 * 2 + 64 * 128 * 512 * 2 \
        + 64 * 128 * 4
    up = ops.loc[("moe", "experts gate_up")]
    down = ops.loc[("moe", "experts down")]
    # 2 experts per GPU, 64·8 = 512 token-assignments -> 256 tokens each
    assert up["flops"] == 2 * 2 * 256 * 7168 * 4096
    assert down["flops"] == 2 * 2 * 256 * 2048 * 7168
    # bf16 weights: 2·7168·4096·2 bytes (the seed's fp8 weights are half: linear_recipe)
    assert up["bytes"] == 2 * (256 * 7168 + 7168 * 4096 + 256 * 4096) * 2
    assert {"dispatch all_to_all", "combine all_to_all", "shared gate_up"} <= set(
        ops.loc["moe"].index)
    table = r.to_pandas()
    assert len(table) == 3 * 16 + 58 * 24 + 3
    assert table["time_s"].sum() == pytest.approx(r.time_s)
    assert math.isclose(r.memory["kv_cache_bytes"], 61 * 64 * 4096 * 1152)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="phase must be one of"):
        T.estimate("Llama-3-8B", "serve", batch=1, kv_len=8, hardware="H100 SXM")
    with pytest.raises(ValueError, match="kv_len is needed for phase .decode."):
        T.estimate("Llama-3-8B", "decode", batch=1, hardware="H100 SXM")
    with pytest.raises(ValueError, match="seq_len is needed for phase .prefill."):
        T.estimate("Llama-3-8B", "prefill", batch=1, hardware="H100 SXM")
    with pytest.raises(ValueError, match="batch must be an integer >= 1, got 0"):
        T.estimate("Llama-3-8B", "decode", batch=0, kv_len=8, hardware="H100 SXM")
    with pytest.raises(ValueError, match="kv_len must be >= q_len"):
        T.estimate("Llama-3-8B", "decode", batch=1, q_len=4, kv_len=2, hardware="H100 SXM")
    with pytest.raises(ValueError, match="ep > 1 needs an MoE model"):
        T.estimate("Llama-3-8B", "decode", batch=1, kv_len=8, hardware="H100 SXM", ep=2)
    with pytest.raises(ValueError, match="num_kv_heads must divide num_heads"):
        T.config("Llama-3-8B").replace(num_kv_heads=5)
    with pytest.raises(TypeError, match="hidden_size must be an int"):
        T.config("Llama-3-8B").replace(hidden_size=4096.0)


def test_dtype_and_kv_dtype_change_bytes_and_time() -> None:
    cfg = rl.transformer.config("Llama-3-8B")
    kw = dict(phase="decode", batch=8, kv_len=8192, hardware="H100 SXM")
    bf16 = rl.transformer.estimate(cfg, **kw)
    fp8kv = rl.transformer.estimate(cfg, kv_dtype="fp8", **kw)
    fp32 = rl.transformer.estimate(cfg, dtype="fp32", **kw)
    # KV cache: 32 layers * 2 (K, V) * 8 kv heads * 128 * 8192 tokens * 8 sequences = 4.29e9
    # elements -> 8.59e9 B in bf16, 4.29e9 B in fp8
    assert bf16.memory["kv_cache_bytes"] == 32 * 2 * 8 * 128 * 8192 * 8 * 2
    assert fp8kv.memory["kv_cache_bytes"] == bf16.memory["kv_cache_bytes"] / 2
    assert fp8kv.totals["time_s"] < bf16.totals["time_s"]  # decode reads half the cache
    assert fp32.memory["weights_bytes"] == 2 * bf16.memory["weights_bytes"]
    assert fp32.totals["time_s"] > bf16.totals["time_s"]


@pytest.mark.parametrize("bad, needle", [
    ({"dtype": "int4"}, "dtype must be one of"),
    ({"kv_dtype": "fp9"}, "kv_dtype must be one of"),
    ({"kv_dtype_bytes": 0}, "kv_dtype_bytes must be in"),
])
def test_bad_dtypes_raise(bad: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        rl.transformer.estimate("Llama-3-8B", kv_len=128, hardware="H100 SXM", **bad)


def test_training_gemms_run_at_the_sustained_clock() -> None:
    """A training step's GEMMs run at the clock the power limiter settles at under continuous
    load (GemmTerms.throttle_fraction), not at the clock of each GEMM run alone."""
    from roofline import _core
    from roofline._params.resolve import resolve

    cfg = rl.transformer.config("Llama-3-8B")
    kw = dict(seq_len=4096, micro_batch=1, hardware="B200")
    train = rl.transformer.estimate(cfg, "train", **kw).ops().set_index("op")
    # the bf16 LM head's forward: one GEMM of 4096 tokens x 4096 x vocab
    head = train.loc["lm_head"]
    g = rl.gemm(4096, 4096, cfg.vocab_size, "bf16", hardware="B200")
    _, _, ceff = resolve(rl.hardware("B200"), "default")
    f, tau = ceff.gemm.throttle_fraction, ceff.gemm.throttle_time_s
    # B200: 1 - 0.13 x (2250e12 / 1000 W) / (989.5e12 / 700 W) = 0.793
    assert abs(f - (1 - 0.13 * 2.25e12 / (989.5e12 / 700))) < 1e-12
    assert head["compute_s"] == pytest.approx(_core.sustained_compute_s(g.compute_s, f, tau))
    assert head["compute_s"] > g.compute_s * 1.01  # slower than run alone
    # the clock is the whole GPU's: the attention forward (32 heads, 8 KV heads, causal) too
    a = rl.attention(1, 32, 4096, 4096, 128, kv_heads=8, causal=True, hardware="B200")
    attn = train.loc["attention"]
    assert attn["compute_s"] == pytest.approx(_core.sustained_compute_s(a.compute_s, f, tau))
    # an inference step (prefill) keeps each kernel's own clock
    prefill = rl.transformer.estimate(cfg, "prefill", 1, seq_len=4096, hardware="B200")
    assert prefill.ops().set_index("op").loc["attention"]["compute_s"] == pytest.approx(
        a.compute_s)
    # what an alone GEMM of 1 ms at full clock became: 1 ms / f
    t = 1e-3
    alone = t / (f + (1 - f) * tau / (tau + t))
    assert _core.sustained_compute_s(alone, f, tau) == pytest.approx(t / f)


def test_gated_mlp_separate_gate_and_up_gemms():
    """TensorRT-LLM's GatedMLP: fc and gate as two GEMMs over the same input.

    Llama-3-8B prefill of 128 tokens, bf16 (hidden 4096, intermediate 14336): each GEMM does
    2 * 128 * 4096 * 14336 = 15,032,385,536 FLOPs and moves (128 * 4096 + 4096 * 14336 +
    128 * 14336) * 2 B = 122,159,104 B; the fused gate_up_proj does twice the FLOPs and
    moves 1,048,576 B (the 128 x 4096 bf16 input, read once more) less than the two. One
    more launch per layer (32); under static-scale FP8 two (the second GEMM's input quantize).
    """
    kw = dict(seq_len=128, hardware="H100 SXM")
    fused = rl.transformer.estimate("Llama-3-8B", "prefill", 1, **kw)
    split = rl.transformer.estimate("Llama-3-8B", "prefill", 1, gated_mlp="separate", **kw)
    a, b = fused.to_pandas(), split.to_pandas()
    up, gate = (b[b["op"] == name].iloc[0] for name in ("up_proj", "gate_proj"))
    for row in (up, gate):
        assert row["flops"] == 2 * 128 * 4096 * 14336
        assert row["bytes"] == 122_159_104
    both = a[a["op"] == "gate_up_proj"].iloc[0]
    assert both["flops"] == up["flops"] + gate["flops"]
    assert up["bytes"] + gate["bytes"] - both["bytes"] == 128 * 4096 * 2
    assert split.wall.kernels == fused.wall.kernels + 32
    f8 = dict(kw, linear_recipe="tensorwise_static")
    assert rl.transformer.estimate("Llama-3-8B", "prefill", 1, gated_mlp="separate",
                                   **f8).wall.kernels == \
        rl.transformer.estimate("Llama-3-8B", "prefill", 1, **f8).wall.kernels + 64
    # a non-gated MLP has no gate to split
    gpt = rl.transformer.config("Llama-3-8B").replace(mlp_gated=False)
    assert rl.transformer.estimate(gpt, "prefill", 1, gated_mlp="separate", **kw).time_s == \
        pytest.approx(rl.transformer.estimate(gpt, "prefill", 1, **kw).time_s)
    with pytest.raises(ValueError, match="gated_mlp"):
        rl.transformer.estimate("Llama-3-8B", "prefill", 1, gated_mlp="split", **kw)
    with pytest.raises(ValueError, match="gated_mlp"):
        rl.transformer.estimate("Llama-3-8B", "prefill", 1, gated_mlp="separate",
                                runtime="vllm", **kw)
    df = rl.transformer.serve("Llama-3-8B", "H100 SXM", batches=(1,), prompt_len=128,
                              output_len=1, cuda_graphs=False, gated_mlp="separate")
    base = rl.transformer.serve("Llama-3-8B", "H100 SXM", batches=(1,), prompt_len=128,
                                output_len=1, cuda_graphs=False)
    assert df["ttft_s"].iloc[0] > base["ttft_s"].iloc[0]


def test_allreduce_nccl_at_nccls_share_of_the_line_rate():
    """allreduce="nccl": an inference step's TP all-reduce through NCCL, at its 370/450 of the
    NVLink line rate and its tuning model's protocol latencies. Llama-3-70B prefill of 128
    tokens at TP 4 on H100 SXM (900 GB/s bidirectional, 450 per direction): the all-reduce of
    128 * 8192 * 2 = 2,097,152 B sends 2 * 3/4 of it, 3,145,728 B, in 6 steps: at the line
    rate with 1 us a step, 3,145,728 / 450e9 + 6e-6 s; through NCCL, LL128 (14 + 6 * 1.9 =
    25.4 us, 0.92 * 370 GB/s) beats Simple (28.8 us, 370 GB/s) and LL (10.2 us, 87.7 GB/s):
    3,145,728 / 340.4e9 + 25.4e-6 s."""
    kw = dict(seq_len=128, hardware="H100 SXM", tp=4)
    rows = {}
    for mode in ("custom", "nccl"):
        df = rl.transformer.estimate("Llama-3-70B", "prefill", 1, allreduce=mode,
                                     **kw).to_pandas()
        rows[mode] = df[df["op"] == "attn all_reduce"].iloc[0]
    assert rows["custom"]["bytes"] == rows["nccl"]["bytes"] == 3_145_728
    assert rows["custom"]["time_s"] == pytest.approx(3_145_728 / 450e9 + 6e-6)
    assert rows["nccl"]["time_s"] == pytest.approx(3_145_728 / 340.4e9 + 25.4e-6)
    # the default is the engine's own kernel; tp 1 has nothing to reduce
    assert rl.transformer.estimate("Llama-3-70B", "prefill", 1, **kw).time_s == \
        pytest.approx(rl.transformer.estimate("Llama-3-70B", "prefill", 1, allreduce="custom",
                                              **kw).time_s)
    one = dict(seq_len=128, hardware="H100 SXM")
    assert rl.transformer.estimate("Llama-3-8B", "prefill", 1, allreduce="nccl",
                                   **one).time_s == pytest.approx(
        rl.transformer.estimate("Llama-3-8B", "prefill", 1, **one).time_s)
    with pytest.raises(ValueError, match="allreduce"):
        rl.transformer.estimate("Llama-3-70B", "prefill", 1, allreduce="ring", **kw)


def test_attention_plugin_context_kernels_by_hand():
    """attention_plugin: TensorRT-LLM's GPT attention plugin. Llama-3-8B (32 heads, 8 KV
    heads, head dim 128) prefill of 128 tokens, fp8 KV cache: invokeBuildDecoderInfo reads
    the length (4 B) and writes 128 int32 padding offsets and 2 cu_seqlens: 4 * (128 + 2 + 1)
    = 524 B; invokeApplyBiasRopeUpdateKVCache reads Q, K, V (2 * 48 * 128 B a token), writes
    the rotated Q and K in place (2 * 40 * 128 B) and K, V into the cache (2 * 8 * 128 * 1 B):
    128 * (12,288 + 10,240 + 2,048) = 3,145,728 B. Both are the plugin's own (kind
    "attention"). Decode: the masked MHA kernel rotates and caches K itself (no RoPE row)."""
    kw = dict(hardware="H100 SXM", kv_dtype="fp8")
    pre = rl.transformer.estimate("Llama-3-8B", "prefill", 1, seq_len=128,
                                  attention_plugin=True, **kw).to_pandas().query("layer == 0")
    rows = pre.set_index("op")
    assert rows.loc["build decoder info", "bytes"] == 524
    assert rows.loc["rope + kv cache write", "bytes"] == 3_145_728
    assert set(rows.loc[["build decoder info", "rope + kv cache write"], "kind"]) == {"attention"}
    assert "rope" not in rows.index
    plain = rl.transformer.estimate("Llama-3-8B", "prefill", 1, seq_len=128, **kw)
    assert len(pre) == len(plain.to_pandas().query("layer == 0")) + 1
    dec = rl.transformer.estimate("Llama-3-8B", "decode", 4, kv_len=512,
                                  attention_plugin=True, **kw).to_pandas()
    assert not dec["op"].str.contains("rope|decoder info").any()
    with pytest.raises(ValueError, match="attention_plugin"):
        rl.transformer.estimate("Llama-3-8B", "prefill", 1, seq_len=128, runtime="vllm",
                                attention_plugin=True, **kw)


def test_attention_backend_prices_every_layers_attention_with_that_kernel():
    """attention_backend: the fused kernel a model calls (llm-foundry's MPT calls
    FlashAttention-2 itself). Each layer's attention row (forward, backward) is
    rl.ops.attention with that backend; on H100 FA2 is slower than the cuDNN kernel SDPA
    dispatches to, on A100 SDPA already runs FA2 (the same price); the GEMMs do not move.
    (At the boost clock: sustained=False, so the rows equal the kernel's own price. MPT's torch
    modules: with TE's, "flash" adds TE's layout copies, tests/test_te_flash_layout.py.)"""
    kw = dict(seq_len=4096, micro_batch=2, sustained=False, modules="torch")
    for hw, slower in (("H100 SXM", True), ("A100 SXM 80GB", False)):
        auto = T.estimate("Llama-3-8B", "train", hardware=hw, **kw).to_pandas()
        fa2 = T.estimate("Llama-3-8B", "train", hardware=hw, attention_backend="flash",
                         **kw).to_pandas()
        att = fa2.query("layer == 0 and kind == 'attention'").set_index("op")["time_s"]
        for op, bwd in (("attention", False), ("attention bwd", True)):
            ref = rl.ops.attention(2, 32, 4096, 4096, 128, kv_heads=8, causal=True,
                                   backward=bwd, hardware=hw, backend="flash").time_s
            assert att[op] == pytest.approx(ref, rel=1e-9), (hw, op)
        a_att = auto.query("kind == 'attention'")["time_s"].sum()
        f_att = fa2.query("kind == 'attention'")["time_s"].sum()
        assert (f_att > 1.3 * a_att) if slower else f_att == pytest.approx(a_att), hw
        assert fa2.query("kind == 'gemm'")["time_s"].sum() == pytest.approx(
            auto.query("kind == 'gemm'")["time_s"].sum())
    with pytest.raises(ValueError, match="attention_backend"):
        T.estimate("Llama-3-8B", "train", hardware="H100 SXM", attention_backend="triton", **kw)
    kw.pop("modules")
    with pytest.raises(ValueError, match="attention_backend.*runtime='hf'"):
        T.estimate("Llama-3-8B", "train", hardware="H100 SXM", attention_backend="fa3",
                   runtime="hf", **kw)
    # SDPA's kernels pick the ring SDPA's kernel of PyTorch's context parallelism only
    with pytest.raises(NotImplementedError, match="SDPA kernel choice outside context"):
        T.estimate("Llama-3-8B", "train", hardware="H100 SXM", attention_backend="flash",
                   runtime="hf", **kw)


def test_decode_kv_reads_per_query_head():
    """TensorRT-LLM's masked MHA kernel reads a GQA model's KV once per query head.

    Llama-3-70B at tp 8: 8 query heads and 1 KV head per GPU. A decode step of 16 sequences
    at 1024 keys reads K and V of 16 * 1024 * 128 * 2 * 2 B = 8,388,608 B per KV head read;
    per query head that is 8 reads: 7 * 8,388,608 B more, the same FLOPs.
    """
    kw = dict(kv_len=1024, hardware="H100 SXM", tp=8)
    base = rl.transformer.estimate("Llama-3-70B", "decode", 16, **kw).to_pandas()
    per_q = rl.transformer.estimate("Llama-3-70B", "decode", 16,
                                    decode_kv_reads="per_query_head", **kw).to_pandas()
    a, b = (df[df["op"] == "attention"].iloc[0] for df in (base, per_q))
    assert b["bytes"] - a["bytes"] == 7 * 16 * 1024 * 128 * 2 * 2
    assert b["flops"] == a["flops"]
    assert b["time_s"] > a["time_s"]
    rest = base["op"] != "attention"
    assert per_q[rest]["time_s"].sum() == pytest.approx(base[rest]["time_s"].sum())
    # MHA (kv_heads == heads) and prefill are unchanged
    mha = rl.transformer.config("Llama-3-8B").replace(num_kv_heads=32)
    assert rl.transformer.estimate(mha, "decode", 8, decode_kv_reads="per_query_head",
                                   kv_len=512, hardware="H100 SXM").time_s == pytest.approx(
        rl.transformer.estimate(mha, "decode", 8, kv_len=512, hardware="H100 SXM").time_s)
    pre = dict(seq_len=256, hardware="H100 SXM", tp=8)
    assert rl.transformer.estimate("Llama-3-70B", "prefill", 1,
                                   decode_kv_reads="per_query_head", **pre).time_s == \
        pytest.approx(rl.transformer.estimate("Llama-3-70B", "prefill", 1, **pre).time_s)
    with pytest.raises(ValueError, match="decode_kv_reads"):
        rl.transformer.estimate("Llama-3-70B", "decode", 1, decode_kv_reads="per_group", **kw)
    with pytest.raises(ValueError, match="decode_kv_reads"):
        rl.transformer.estimate("Llama-3-70B", "decode", 1, decode_kv_reads="per_query_head",
                                runtime="vllm", **kw)
