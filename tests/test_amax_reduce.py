"""Float8CurrentScaling's amax all-reduces over the TP group under sequence parallelism."""

from __future__ import annotations

from typing import Any

import pytest

import roofline as rl

KW: dict[str, Any] = dict(hardware="GB200", seq_len=8192, micro_batch=1, grad_accum=8, dp=2,
                          tp=4, pp=1, zero=1, gpus_per_node=72)
ROWS = {"attn fp8 amax reduce", "attn fp8 amax reduce bwd", "mlp fp8 amax reduce",
        "mlp fp8 amax reduce bwd"}


def _amax_rows(**kw: Any) -> dict[str, float]:
    est = rl.transformer.estimate("Llama-3-8B", "train", **dict(KW, **kw))
    return {name: float(est.columns["time_s"][i]) for i, (g, name, _) in enumerate(est.rows)
            if "amax reduce" in name}


def test_one_reduce_per_sequence_parallel_quantizer_of_each_block():
    """TE reduces the amax of a column-parallel input (QKV, fc1: forward) and of a
    row-parallel grad_output (output projection, fc2: backward) over the TP group: four
    4-byte all-reduces per layer and micro-batch, latency-bound (microseconds)."""
    rows = _amax_rows(linear_recipe="tensorwise_te")
    assert set(rows) == ROWS
    assert all(1e-6 < t < 1e-4 for t in rows.values())


def test_no_reduce_without_sequence_parallelism_current_scaling_tp_or_training():
    assert not _amax_rows(linear_recipe="tensorwise_te", sequence_parallel=False)
    assert not _amax_rows(linear_recipe="mxfp8_te")  # block scales: no amax
    assert not _amax_rows(linear_recipe="tensorwise_te", tp=1, dp=8)
    est = rl.transformer.estimate("Llama-3-8B", "prefill", hardware="GB200", seq_len=2048,
                                  tp=4, linear_recipe="tensorwise_te")
    assert not any("amax reduce" in name for _, name, _ in est.rows)


def test_the_reduces_add_their_time_to_every_layer_and_micro_batch():
    """Sequence parallelism changes no other kernel time here: the step's compute grows by
    the four reduces x 32 layers x 8 micro-batches."""
    with_sp = rl.transformer.estimate("Llama-3-8B", "train", linear_recipe="tensorwise_te",
                                      **KW)
    without = rl.transformer.estimate("Llama-3-8B", "train", linear_recipe="tensorwise_te",
                                      sequence_parallel=False, **KW)
    per_layer = sum(_amax_rows(linear_recipe="tensorwise_te").values())
    assert with_sp.step.compute_s - without.step.compute_s == pytest.approx(
        per_layer * 32 * 8, rel=1e-6)
