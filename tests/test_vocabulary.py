"""One vocabulary: train / training / inference everywhere; one error class for unknown names."""

from __future__ import annotations

import pytest

import roofline as rl

HW = "H100 SXM"


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: rl.hardware("H100 SMX"), "H100 SXM"),
        (lambda: rl.gemm(64, 64, 64, dtype="bf61", hardware=HW), "bf16"),
        (lambda: rl.float8.linear(64, 64, 64, recipe="rowwize", hardware=HW), "rowwise"),
        (lambda: rl.float8.linear(64, 64, 64, mode="trainin", hardware=HW), "training"),
        (lambda: rl.rmsnorm(64, 64, backend="fusd", hardware=HW), "fused"),
        (lambda: rl.gemm(64, 64, 64, hardware=HW, efficiency="peek"), "peak"),
        (lambda: rl.set_default_efficiency("constnt"), "constant"),
        (lambda: rl.transformer.config("Llama-3-8"), "llama-3-8b"),
        (lambda: rl.attention(1, 8, 128, 128, 64, backend="flsh", hardware=HW), "flash"),
    ],
)
def test_unknown_names_raise_one_class_with_matches(call, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(rl.UnknownNameError) as info:
        call()
    exc = info.value
    assert isinstance(exc, KeyError) and isinstance(exc, ValueError)
    assert any(match.lower() == m.lower() for m in exc.matches), exc.matches
    assert not str(exc).startswith("'")  # the plain message, not KeyError's quoted repr


def test_unknown_hardware_is_the_same_class() -> None:
    assert issubclass(rl.UnknownHardwareError, rl.UnknownNameError)
    with pytest.raises(ValueError, match="unknown hardware"):
        rl.hardware("TPU v99")


def test_train_training_and_inference_everywhere() -> None:
    for mode in ("train", "training", "Training"):
        assert rl.float8.linear(1024, 1024, 1024, mode=mode, hardware=HW).mode == "training"
    assert rl.float8.linear(1024, 1024, 1024, mode="inference", hardware=HW).mode == "inference"
    cfg = rl.transformer.config("Llama-3-8B")
    a = rl.transformer.estimate(cfg, phase="train", batch=1, seq_len=512, hardware=HW)
    b = rl.transformer.estimate(cfg, phase="training", batch=1, seq_len=512, hardware=HW)
    assert a.time_s == b.time_s and b.phase == "train"
    for bad in ("inference", "trian", 3):
        with pytest.raises(ValueError, match="phase"):
            rl.transformer.estimate(cfg, phase=bad, batch=1, seq_len=512, hardware=HW)
    with pytest.raises(ValueError, match="mode"):
        rl.float8.linear(64, 64, 64, mode="eval-ish", hardware=HW)


def test_torch_modes() -> None:
    torch = pytest.importorskip("torch")
    import roofline.torch as rlt

    layer = torch.nn.Linear(256, 256)
    x = torch.empty(8, 256)
    t = {m: rlt.estimate(layer, x, hardware=HW, mode=m).time_s
         for m in ("train", "training", "inference")}
    assert t["train"] == t["training"] > t["inference"]
    with pytest.raises(ValueError, match="mode"):
        rlt.estimate(layer, x, hardware=HW, mode="trainig")
    with pytest.raises(rl.UnknownNameError):
        rlt.estimate(layer, x, hardware=HW, dtype="bf61")
