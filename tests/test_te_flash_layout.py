"""Transformer Engine's flash-attn path on Megatron-Core's sbhd tensors (te_flash_layout)."""
import pytest

import roofline as rl

LLAMA2_7B = rl.transformer.TransformerConfig(
    name="Llama-2-7B", hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=32,
    head_dim=128, intermediate_size=11008, vocab_size=32000)


def _copies(model, **kw):
    est = rl.transformer.estimate(model, "train", hardware="H100 SXM", seq_len=4096, **kw)
    df = est.to_pandas()
    rows = df[(df["op"].str.startswith("te flash-attn layout copies")) & (df["layer"] == 0)]
    return rows.set_index("op")["bytes"].to_dict()


def test_mha_copies_qkv_both_ways_by_hand():
    """Llama-2-7B (MHA, 32 x 128): fa_prepare_fwd / _bwd each read and write 3 t h d bf16
    elements; micro-batch 1: the output needs no copy."""
    t, hd = 4096, 32 * 128
    got = _copies(LLAMA2_7B, micro_batch=1, attention_backend="flash")
    assert got["te flash-attn layout copies"] == pytest.approx(2 * 2 * 3 * t * hd)
    assert got["te flash-attn layout copies bwd"] == pytest.approx(2 * 2 * 3 * t * hd)


def test_gqa_copies_k_and_v_and_batch_adds_q_and_the_output():
    """Llama-3-8B (32 query, 8 KV heads of 128): K and V copied forward only; micro-batch 2
    adds Q's copy and the output's transpose forward and its gradient's backward."""
    d, hq, hkv = 128, 32, 8
    one = _copies("Llama-3-8B", micro_batch=1, attention_backend="flash")
    t = 4096
    assert one["te flash-attn layout copies"] == pytest.approx(2 * 2 * 2 * t * hkv * d)
    assert "te flash-attn layout copies bwd" not in one
    two = _copies("Llama-3-8B", micro_batch=2, attention_backend="flash")
    t = 8192
    assert two["te flash-attn layout copies"] == pytest.approx(
        2 * 2 * (2 * t * hkv * d + t * hq * d) + 2 * 2 * t * hq * d)
    assert two["te flash-attn layout copies bwd"] == pytest.approx(2 * 2 * t * hq * d)


def test_tensor_parallel_heads_and_context_parallel_tokens():
    full = _copies(LLAMA2_7B, micro_batch=1, attention_backend="flash")
    split = _copies(LLAMA2_7B, micro_batch=1, attention_backend="flash", tp=2, cp=2)
    assert split["te flash-attn layout copies"] == pytest.approx(
        full["te flash-attn layout copies"] / 4)


@pytest.mark.parametrize("kw", [{"attention_backend": "auto"}, {"attention_backend": "cudnn"},
                                {"attention_backend": "flash", "modules": "torch"}])
def test_no_copies_for_cudnn_or_torch_modules(kw):
    """cuDNN reads the strided layouts in place; MPT's torch modules call flash-attn on bshd."""
    assert _copies(LLAMA2_7B, micro_batch=1, **kw) == {}


def test_copies_in_training_only_and_the_layers_pay_them():
    kw = dict(hardware="H100 SXM", seq_len=4096, attention_backend="flash")
    prefill = rl.transformer.estimate(LLAMA2_7B, "prefill", **kw).to_pandas()
    assert not prefill["op"].str.startswith("te flash-attn").any()
    df = rl.transformer.estimate(LLAMA2_7B, "train", **kw).to_pandas()
    copies = df[df["op"].str.startswith("te flash-attn")]
    assert len(copies) == 2 * LLAMA2_7B.num_layers and (copies["time_s"] > 0).all()
