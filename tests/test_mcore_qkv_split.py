"""Megatron-Core's Q / K / V split with grouped-query attention (framework_ops.mcore_qkv_split):
the query reshape copy forward and the gradients' cat backward, hand-derived."""
import pytest

import roofline as rl

LLAMA2_7B = rl.transformer.TransformerConfig(
    name="Llama-2-7B", hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=32,
    head_dim=128, intermediate_size=11008, vocab_size=32000)
NAME = "mcore qkv split (q reshape; grads cat)"


def _split(model, phase="train", **kw):
    est = rl.transformer.estimate(model, phase, hardware="H100 SXM", seq_len=4096, **kw)
    df = est.to_pandas()
    rows = df[df["op"].str.startswith("mcore qkv split") & (df["layer"] == 0)]
    return rows.set_index("op")["bytes"].to_dict()


def test_gqa_query_copy_forward_and_cat_backward_by_hand():
    """Llama-3-8B (32 query, 8 KV heads of 128), 4096 tokens: the query copy reads and writes
    t·32·128 bf16 elements; the backward cat t·(32 + 16)·128."""
    t, d = 4096, 128
    got = _split("Llama-3-8B")
    assert got[NAME] == pytest.approx(2 * 2 * t * 32 * d)
    assert got[NAME + " bwd"] == pytest.approx(2 * 2 * t * (32 + 2 * 8) * d)


def test_tensor_parallel_splits_the_heads():
    full, half = _split("Llama-3-8B"), _split("Llama-3-8B", tp=2)
    assert half[NAME] == pytest.approx(full[NAME] / 2)
    assert half[NAME + " bwd"] == pytest.approx(full[NAME + " bwd"] / 2)


@pytest.mark.parametrize("model,kw", [(LLAMA2_7B, {}), ("Llama-3-8B", {"modules": "torch"}),
                                      ("DeepSeek-V3", {"ep": 8})])
def test_nothing_for_mha_torch_modules_or_mla(model, kw):
    """MHA's query reshape is a view and its gradients one buffer; MPT-style torch modules and
    MLA do not run Megatron's GQA split."""
    if model == "DeepSeek-V3":
        model = rl.transformer.config(model).replace(num_layers=4, dense_layers=(0,))
    assert _split(model, **kw) == {}


def test_training_only_and_priced_as_memory_passes():
    assert _split("Llama-3-8B", phase="prefill") == {}
    rows = rl.transformer.estimate("Llama-3-8B", "train", hardware="H100 SXM", seq_len=4096,
                                   micro_batch=1).to_pandas()
    split = rows[rows["op"].str.startswith("mcore qkv split") & (rows["layer"] == 0)]
    assert len(split) == 2 and (split["time_s"] > 0).all()
    # memory-bound copies: no FLOPs, at least the bytes over HBM's rate
    assert (split["flops"] == 0).all()
    assert (split["time_s"] >= split["bytes"] / 3.35e12).all()
