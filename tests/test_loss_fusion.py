"""Megatron-Core's unfused cross-entropy (``estimate(cross_entropy_fusion=False)``)."""
import pytest

import roofline as rl

LOGITS = 4096 * 128256  # Llama-3-8B, one 4096-token sequence, TP 1: rows x vocabulary


def _train(**kw):
    return rl.transformer.estimate("Llama-3-8B", "train", hardware="H100 SXM", seq_len=4096,
                                   micro_batch=1, **kw)


def _loss_rows(est):
    df = est.to_pandas()
    return df[df["op"].str.startswith("cross_entropy")].set_index("op")["bytes"]


def test_unfused_loss_moves_the_fp32_passes_by_hand():
    """float() 2+4, max 4, subtract 4+4, exp 4+4, sum 4, divide 4+4 bytes per logit forward
    (38); mul_ 4+4 and the cast back 4+2 backward (14); fused: 2+2 and 4+2 (4, 6)."""
    fused, unfused = _loss_rows(_train()), _loss_rows(_train(cross_entropy_fusion=False))
    assert fused["cross_entropy"] == pytest.approx(4 * LOGITS)
    assert fused["cross_entropy bwd"] == pytest.approx(6 * LOGITS)
    assert unfused["cross_entropy (unfused, fp32)"] == pytest.approx(38 * LOGITS)
    assert unfused["cross_entropy (unfused, fp32) bwd"] == pytest.approx(14 * LOGITS)


def test_unfused_loss_keeps_the_fp32_softmax_and_is_slower():
    fused, unfused = _train(), _train(cross_entropy_fusion=False)
    extra = unfused.memory["activations_bytes"] - fused.memory["activations_bytes"]
    assert extra == pytest.approx(2 * LOGITS)  # 4-byte softmax saved, not the 2-byte logits
    assert unfused.time_s > fused.time_s
    # the head's extra passes only: the layers are priced the same
    df_f, df_u = fused.to_pandas(), unfused.to_pandas()
    body = df_f["block"] != "head"
    assert df_u[df_u["block"] != "head"]["time_s"].sum() == pytest.approx(
        df_f[body]["time_s"].sum())


def test_unfused_loss_is_split_by_tensor_parallelism():
    one = _loss_rows(_train(cross_entropy_fusion=False, tp=1))
    two = _loss_rows(_train(cross_entropy_fusion=False, tp=2))
    assert two.sum() == pytest.approx(one.sum() / 2)


@pytest.mark.parametrize(("kw", "match"), [
    ({"cross_entropy_fusion": 0}, "cross_entropy_fusion must be a bool"),
    ({"cross_entropy_fusion": False, "runtime": "hf"}, "runtime='megatron' only"),
])
def test_bad_cross_entropy_fusion_raises(kw, match):
    with pytest.raises((TypeError, ValueError), match=match):
        _train(**kw)


def test_cross_entropy_fusion_is_training_only():
    with pytest.raises(ValueError, match="cross_entropy_fusion applies to phase='train'"):
        rl.transformer.estimate("Llama-3-8B", "prefill", hardware="H100 SXM", seq_len=128,
                                cross_entropy_fusion=False)
