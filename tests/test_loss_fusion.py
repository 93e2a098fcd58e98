"""Megatron-Core's cross-entropy kernels (``estimate(cross_entropy=...)``)."""
import pytest

import roofline as rl

LOGITS = 4096 * 128256  # Llama-3-8B, one 4096-token sequence, TP 1: rows x vocabulary


def _train(**kw):
    return rl.transformer.estimate("Llama-3-8B", "train", hardware="H100 SXM", seq_len=4096,
                                   micro_batch=1, **kw)


def _loss_rows(est):
    df = est.to_pandas()
    return df[df["op"].str.startswith("cross_entropy")].set_index("op")["bytes"]


def test_loss_passes_by_hand():
    """Bytes per logit. Fused: read 2 + write 2, backward 4 + 2. Unfused: float() 2+4, max 4,
    subtract 4+4, exp 4+4, sum 4, divide 4+4 (38); mul_ 4+4 and the cast back 4+2 (14).
    Native (three compiled regions): cast + max 2+4, subtract + exp + sum 4+4, divide 4+4
    (22); the update written back into the softmax and the bf16 gradient 4+4+2 (10)."""
    fused = _loss_rows(_train())
    assert fused["cross_entropy"] == pytest.approx(4 * LOGITS)
    assert fused["cross_entropy bwd"] == pytest.approx(6 * LOGITS)
    unfused = _loss_rows(_train(cross_entropy="unfused"))
    assert unfused["cross_entropy (unfused, fp32)"] == pytest.approx(38 * LOGITS)
    assert unfused["cross_entropy (unfused, fp32) bwd"] == pytest.approx(14 * LOGITS)
    native = _loss_rows(_train(cross_entropy="native"))
    assert native["cross_entropy (native, fp32)"] == pytest.approx(22 * LOGITS)
    assert native["cross_entropy (native, fp32) bwd"] == pytest.approx(10 * LOGITS)


@pytest.mark.parametrize("impl", ["native", "unfused"])
def test_fp32_losses_keep_the_softmax_and_cost_more(impl):
    fused, other = _train(), _train(cross_entropy=impl)
    extra = other.memory["activations_bytes"] - fused.memory["activations_bytes"]
    assert extra == pytest.approx(2 * LOGITS)  # 4-byte softmax saved, not the 2-byte logits
    assert other.time_s > fused.time_s
    # the head's passes only: the layers are priced the same
    df_f, df_o = fused.to_pandas(), other.to_pandas()
    assert df_o[df_o["block"] != "head"]["time_s"].sum() == pytest.approx(
        df_f[df_f["block"] != "head"]["time_s"].sum())


def test_loss_implementations_order_and_tp_split():
    times = [_train(cross_entropy=i).time_s for i in ("fused", "native", "unfused")]
    assert times == sorted(times)
    one = _loss_rows(_train(cross_entropy="unfused", tp=1))
    two = _loss_rows(_train(cross_entropy="unfused", tp=2))
    assert two.sum() == pytest.approx(one.sum() / 2)


@pytest.mark.parametrize(("kw", "match"), [
    ({"cross_entropy": "te"}, "cross_entropy must be one of"),
    ({"cross_entropy": False}, "cross_entropy must be one of"),
    ({"cross_entropy": "unfused", "runtime": "hf"}, "runtime='megatron' only"),
])
def test_bad_cross_entropy_raises(kw, match):
    with pytest.raises(ValueError, match=match):
        _train(**kw)


def test_cross_entropy_is_training_only():
    with pytest.raises(ValueError, match="cross_entropy applies to phase='train'"):
        rl.transformer.estimate("Llama-3-8B", "prefill", hardware="H100 SXM", seq_len=128,
                                cross_entropy="unfused")
