"""Hostile arguments of the transformer, planner, attention and fusion APIs (issue #25,
section 2): each raises a clear error naming the user's argument, never an internal op's."""

from __future__ import annotations

import pytest

import roofline as rl

H100 = "H100 SXM"
est = rl.transformer.estimate


@pytest.mark.parametrize("kw,words", [
    (dict(phase="prefill", batch=1, seq_len=10**12), ["seq_len", "1000000000000"]),
    (dict(phase="prefill", batch=10**9, seq_len=4096), ["batch", "1000000000"]),
    (dict(phase="prefill", batch=10**6, seq_len=10**6), ["batch x seq_len", "lower batch"]),
    (dict(phase="decode", batch=1, kv_len=10**12), ["kv_len"]),
    (dict(phase="decode", batch=2**20, kv_len=2**20), ["batch x kv_len"]),
    (dict(phase="decode", batch=1, kv_len=64, q_len=2**30), ["q_len"]),
    (dict(phase="train", batch=1, seq_len=4096, dp=2**53 + 1), ["dp", "9007199254740993"]),
    (dict(phase="train", batch=1, seq_len=4096, dp=2**20, pp=32), ["dp x pp x cp x tp"]),
    (dict(phase="train", batch=1, seq_len=4096, grad_accum=2**40), ["grad_accum"]),
    (dict(phase="train", batch=1, seq_len=4096, latency_s=-1), ["latency_s", "-1"]),
    (dict(phase="train", batch=1, seq_len=4096, latency_s=float("nan")), ["latency_s"]),
    (dict(phase="decode", batch=1, kv_len=8, tp=2, link_bytes_per_s=0),
     ["link_bytes_per_s", "0"]),
    (dict(phase="decode", batch=1, kv_len=8, tp=2, link_bytes_per_s=float("inf")),
     ["link_bytes_per_s"]),
    (dict(phase="train", batch=1, seq_len=64, dp=2, network_bytes_per_s=float("nan")),
     ["network_bytes_per_s"]),
])
def test_estimate_blames_the_argument(kw, words):
    with pytest.raises((ValueError, TypeError)) as info:
        est("Llama-3-8B", hardware=H100, **kw)
    msg = str(info.value)
    assert msg.startswith("transformer.estimate:"), msg
    for w in words:
        assert w in msg, msg
    for internal in ("elementwise:", "gemm:", "all_reduce:", "numel"):
        assert internal not in msg


def test_latency_link_types():
    with pytest.raises(TypeError, match="latency_s must be a number"):
        est("Llama-3-8B", "decode", 1, kv_len=8, hardware=H100, latency_s="1")
    with pytest.raises(TypeError, match="link_bytes_per_s must be a number"):
        est("Llama-3-8B", "decode", 1, kv_len=8, hardware=H100, tp=2, link_bytes_per_s=True)


def test_sizes_at_the_bounds_price():
    e = est("Llama-3-8B", "decode", 2**12, kv_len=2**24, hardware=H100)
    assert e.time_s > 0
    e = est("Llama-3-8B", "prefill", 1, seq_len=2**24, hardware=H100)
    assert e.time_s > 0


def test_mlp_only_layers_outside_the_layers():
    cfg = dict(model_type="qwen3_moe", hidden_size=512, num_hidden_layers=4,
               num_attention_heads=8, num_key_value_heads=2, head_dim=64,
               intermediate_size=1024, moe_intermediate_size=256, num_experts=8,
               num_experts_per_tok=2, vocab_size=1000, mlp_only_layers=[999])
    with pytest.raises(ValueError, match="mlp_only_layers.*999.*4 layers"):
        rl.transformer.from_hf(cfg)
    with pytest.raises(ValueError, match="mlp_only_layers"):
        rl.transformer.from_hf(dict(cfg, mlp_only_layers=[-1]))
    ok = rl.transformer.from_hf(dict(cfg, mlp_only_layers=[1, 3]))
    assert ok.num_layers == 4


@pytest.mark.parametrize("batches,exc,words", [
    ([1.5], TypeError, ["batches[0]", "1.5"]),
    ([True], TypeError, ["batches[0]", "True"]),
    ([4, 2.0], TypeError, ["batches[1]"]),
    ([0], ValueError, ["batches[0]"]),
    ([10**9], ValueError, ["batches[0]", "1000000000"]),
    ([], ValueError, ["batches"]),
    ("16", TypeError, ["batches"]),
])
def test_serve_batches(batches, exc, words):
    with pytest.raises(exc) as info:
        rl.transformer.serve("Llama-3-8B", H100, batches=batches)
    for w in words:
        assert w in str(info.value)


def test_serve_accepts_numpy_integers():
    import numpy as np

    df = rl.transformer.serve("Llama-3-8B", H100, batches=np.array([1, 8]))
    assert df["batch"].tolist() == [1, 8]


@pytest.mark.parametrize("mb,exc", [((0,), ValueError), ((1.5,), TypeError),
                                    ((True,), TypeError), ((), ValueError)])
def test_plan_micro_batches(mb, exc):
    with pytest.raises(exc, match="micro_batches"):
        rl.transformer.plan("Llama-3-8B", 8, H100, micro_batches=mb)


def test_plan_bounds():
    with pytest.raises(ValueError, match="gpus"):
        rl.transformer.plan("Llama-3-8B", 2**30, H100)
    with pytest.raises(ValueError, match="seq_len"):
        rl.transformer.plan("Llama-3-8B", 8, H100, seq_len=10**12)
    with pytest.raises(TypeError, match=r"batches\[0\]"):
        rl.transformer.plan("Llama-3-8B", 8, H100, phase="decode", batches=(1.5,))


@pytest.mark.parametrize("hw,backend", [("MI300X", "cudnn"), ("MI325X", "cudnn"),
                                        ("Gaudi 3", "cudnn"), ("Gaudi 3", "flash"),
                                        ("Gaudi 3", "efficient")])
def test_impossible_attention_backends(hw, backend):
    with pytest.raises(ValueError, match=f"backend='{backend}' does not exist on {hw}"):
        rl.attention(1, 8, 128, 128, 128, backend=backend, hardware=hw)
    with pytest.raises(ValueError, match="does not exist"):
        rl.attention(1, 8, 128, 128, 128, backend=backend, hardware=hw, backward=True)


def test_possible_attention_backends_still_price():
    for hw, backend in (("MI300X", "flash"), ("MI300X", "efficient"), ("MI300X", "math"),
                        ("H100 SXM", "cudnn"), ("Gaudi 3", "math"), ("Gaudi 3", "auto")):
        assert rl.attention(1, 8, 128, 128, 128, backend=backend, hardware=hw).time_s > 0


def test_batch_gemms_bounded_and_same_numbers():
    from roofline.fusion.graph import Graph

    c = rl.fusion.batch_gemms(64, 64, 64, 5, hardware=H100)
    g = Graph("separate")
    for i in range(5):
        g.input(f"x{i}", (64, 64), "bf16")
        g.input(f"W{i}", (64, 64), "bf16")
        g.gemm(f"y{i}", f"x{i}", f"W{i}")
    ref = g.estimate(hardware=H100)
    assert c.baseline.time_s == pytest.approx(ref.time_s, rel=1e-12)
    assert c.baseline.launches == 5 and c.candidate.launches == 1
    assert c.baseline.bytes == pytest.approx(ref.bytes)
    big = rl.fusion.batch_gemms(64, 64, 64, 20_000, hardware=H100)
    assert big.baseline.time_s == pytest.approx(20_000 * c.baseline.time_s / 5, rel=1e-9)
    with pytest.raises(ValueError, match="count must be <= 65536"):
        rl.fusion.batch_gemms(64, 64, 64, 10**6)


def test_fusion_lists_bounded():
    with pytest.raises(ValueError, match="ns holds 5000 values"):
        rl.fusion.horizontal_fusion(64, 64, [64] * 5000)
    with pytest.raises(ValueError, match="extra_inputs"):
        rl.fusion.epilogue_fusion(64, 64, 64, extra_inputs=10**5)


def test_graph_consumers_index_follows_new_ops():
    from roofline.fusion.graph import Graph

    g = Graph()
    g.input("x", (8, 8))
    g.input("w", (8, 8))
    g.gemm("y", "x", "w")
    assert g.consumers("x") == ["y"] and g.outputs() == ["y"]
    g.elementwise("z", ["y", "x"], op="add")
    assert g.consumers("x") == ["y", "z"] and g.outputs() == ["z"]
