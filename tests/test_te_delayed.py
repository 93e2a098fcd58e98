"""Transformer Engine's DelayedScaling on Hopper (delayed_te, delayed_te_uncached).

Hand-derived byte counts of the kernels TE 1.x / 0.10 launch per linear on sm90, whose fp8
GEMMs are TN-only: fp8_cast_transpose_fused reads the bf16 activation (grad_output) once and
writes the row-major and the transposed fp8 copies, recording the amax in the same kernel (the
scale comes from the amax history: no amax pass); Megatron-Core passes is_first_microbatch, so
the weight's cast-transpose runs once per step (delayed_te), while TE modules called without
it cast the weight in every call (delayed_te_uncached: llm-foundry's fc_type te).
"""

from __future__ import annotations

import pytest

import roofline as rl

M, K, N = 8192, 4096, 6144


def _casts(recipe: str, mode: str = "training", fuse: bool = False):
    r = rl.float8.linear(M, K, N, recipe=recipe, hardware="H100 SXM", mode=mode,
                         fuse_with_prev=fuse)
    df = r.kernels()
    return r, df[df["role"] == "cast"].set_index("kernel")


def test_delayed_te_training_kernels_hand_derived():
    _, casts = _casts("delayed_te")
    x = casts.loc["input cast + transpose (fp8_cast_transpose_fused)"]
    assert x["bytes_read"] == 2 * M * K  # one bf16 read
    assert x["bytes_written"] == 2 * M * K  # fp8 row-major + fp8 transposed
    g = casts.loc["grad_output cast + transpose (fp8_cast_transpose_fused)"]
    assert g["bytes_read"] == 2 * M * N
    assert g["bytes_written"] == 2 * M * N
    # no amax pass, no weight cast per call (cached for the step by is_first_microbatch)
    assert len(casts) == 2
    assert not any("amax" in name for name in casts.index)


def test_delayed_te_uncached_casts_the_weight_every_call():
    _, casts = _casts("delayed_te_uncached")
    w = casts.loc["weight cast + transpose (fp8_cast_transpose_fused)"]
    assert w["bytes_read"] == 2 * K * N
    assert w["bytes_written"] == 2 * K * N
    assert len(casts) == 3


def test_delayed_te_fused_read_and_inference():
    _, fused = _casts("delayed_te", fuse=True)
    assert (fused["bytes_read"] == 0).all()
    assert fused["bytes_written"].sum() == 2 * M * K + 2 * M * N
    _, inf = _casts("delayed_te", mode="inference")
    q = inf.loc["input cast (fp8, amax in the kernel)"]
    assert (q["bytes_read"], q["bytes_written"]) == (2 * M * K, M * K)
    assert len(inf) == 1


def test_delayed_te_gemms_as_tensorwise_and_casts_cheaper():
    te, _ = _casts("delayed_te")
    unc, _ = _casts("delayed_te_uncached")
    tw, _ = _casts("tensorwise")
    gemms = [r.kernels().query("role == 'lowp_gemm'")["time_s"].to_numpy() for r in (te, tw)]
    assert gemms[0] == pytest.approx(gemms[1])  # the same tensorwise-scaled fp8 GEMMs
    # fewer bytes than torchao's compiled casts (amax passes, per-call weight casts)
    assert te.fp8_s < unc.fp8_s < tw.fp8_s


def test_delayed_te_refused_under_torchao_conventions():
    with pytest.raises(ValueError, match="delayed_te"):
        rl.float8.linear(M, K, N, recipe="delayed_te", hardware="H100 SXM",
                         efficiency="torchao")
