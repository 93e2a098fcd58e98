"""Optimizer implementations of a training step (transformer.estimate(optimizer=...)): the
bytes each one moves, derived by hand, and torch's foreach AdamW against the H200 trace."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
LLAMA2L = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 128256, "max_position_embeddings": 8192, "rope_theta": 500000.0}


def _train(optimizer: str, **kw: object) -> rl.transformer.ModelEstimate:
    cfg = rl.transformer.from_hf(LLAMA2L)
    return rl.transformer.estimate(cfg, "train", 1, seq_len=4096, hardware="H200",
                                   runtime="hf", optimizer=optimizer, **kw)


@pytest.mark.parametrize("name,reads,writes,kernels", [
    ("adamw_foreach", 12, 8, 8), ("adamw_fused", 4, 3, 1)])
def test_torch_adamw_update_is_its_passes_in_bf16(name: str, reads: int, writes: int,
                                                   kernels: int) -> None:
    e = _train(name)
    params = e.memory["optimizer_bytes"] / 4  # bf16 m and v: 4 bytes per parameter
    want = rl.elementwise(int(params), reads, writes, 0.0, "bf16", "H200", kernels=kernels)
    assert e.step.optimizer_s == pytest.approx(float(want.time_s), rel=1e-9)


def test_mixed_precision_adam_moves_fp32_state() -> None:
    e = _train("adam")
    params = e.memory["optimizer_bytes"] / 12
    want = rl.elementwise(int(params), 4, 4, 0.0, "fp32", "H200")
    assert e.step.optimizer_s == pytest.approx(float(want.time_s), rel=1e-9)


def test_foreach_is_slower_than_fused_and_counts_in_the_step() -> None:
    fused, foreach = _train("adamw_fused"), _train("adamw_foreach")
    assert foreach.step.optimizer_s > 2.5 * fused.step.optimizer_s
    assert foreach.time_s - fused.time_s == pytest.approx(
        foreach.step.optimizer_s - fused.step.optimizer_s, rel=1e-6)


def test_foreach_adamw_against_the_h200_trace() -> None:
    """The H200 train step (2 layers, AdamW(foreach=True) on bf16 parameters) spent its
    multi_tensor_apply kernels' time in the update; the model prices the same passes at the
    streaming rate, so it is a lower bound, within 35 % (multi_tensor_apply streams at ~0.6
    of HBM there)."""
    with gzip.open(ROOT / "data/programs/h200/traces/llama_train_eager_b1.json.gz", "rt") as f:
        events = json.load(f)["traceEvents"]
    measured = sum(e["dur"] for e in events if e.get("cat") == "kernel"
                   and "multi_tensor_apply_kernel" in e["name"]) * 1e-6
    predicted = _train("adamw_foreach").step.optimizer_s
    assert 0.65 * measured < predicted < measured


def test_unknown_optimizer_is_named() -> None:
    with pytest.raises(ValueError, match="optimizer"):
        _train("adamw")
