"""The same Megatron-Bridge 25.11 job on B200, GB200 and GB300
(``benchmarks/blackwell_job_pairs.py``, hardware-notes §19): which pairs are like-for-like, and
the model's GPU-to-GPU ratios on them."""

from __future__ import annotations

import pytest
from _benchmarks import load_benchmark

pairs_mod = load_benchmark("blackwell_job_pairs")


def test_pair_key_reads_megatron_bridge_2511_blackwell_ids() -> None:
    assert pairs_mod.pair_key("mbridge2511_gb300_llama3_8b_fp8-cs") == ("llama3_8b_fp8-cs", "GB300")
    assert pairs_mod.pair_key("mbridge2511_b200_qwen3_30b_a3b_fp8-mx") == (
        "qwen3_30b_a3b_fp8-mx", "B200")
    assert pairs_mod.pair_key("mbridge2606_gb300_llama31_405b_nvfp4") is None
    assert pairs_mod.pair_key("nemo2504_gb200_llama3_8b_fp8-cs") is None
    assert pairs_mod.pair_key("mbridge2511_h100_llama3_8b_fp8-cs") is None


def test_config_diff_ignores_row_notes_and_the_nvlink_domain() -> None:
    a = {"micro_batch": 2, "gpus_per_node": 8, "assumptions": ["x"]}
    b = {"micro_batch": 2, "gpus_per_node": 72, "assumptions": ["y"]}
    assert pairs_mod.config_diff(a, b) == []
    assert pairs_mod.config_diff({**a, "micro_batch": 4}, b) == ["micro_batch"]
    assert pairs_mod.config_diff({**a, "offload_layers": 20}, b) == ["offload_layers"]


def test_like_for_like_pairs_and_their_ratios() -> None:
    entries = pairs_mod.pairs()
    like = {(e["name"], e["gpu"]): e for e in entries if e["diff"] == []}
    # Only the 8B rows (B200 and GB300 against GB200) and Qwen3-30B on GB300 share every
    # config key with their GB200 twin (the 70B rows differ in CPU offloading: 20 vs 40 layers).
    assert set(like) == {("llama3_8b_fp8-cs", "B200"), ("llama3_8b_fp8-cs", "GB300"),
                         ("llama3_8b_fp8-mx", "B200"), ("llama3_8b_fp8-mx", "GB300"),
                         ("qwen3_30b_a3b_fp8-mx", "GB300")}
    # B200 against GB200 (published 0.972 / 0.991). The model's ratio was 0.980 (within 2 %,
    # hardware-notes §14) while GB200's GEMM ceilings were still those fitted with no SM
    # count; refitted to its 152 SMs (hardware-notes §42) the model meets both GPUs' MAMF
    # ceilings (GB200 1822 against B200's ~1745 TFLOP/s bf16) and prices GB200 4-6 % faster
    # relative to B200 than the jobs ran: an open gap (GB200 under its ceiling in training),
    # pinned so that it shows.
    for name, pred in (("llama3_8b_fp8-cs", 0.936), ("llama3_8b_fp8-mx", 0.936)):
        e = like[(name, "B200")]
        assert e["pred_ratio"] == pytest.approx(pred, abs=0.005)
        assert e["meas_ratio"] > e["pred_ratio"] + 0.03
    # GB300 against GB200: the open gap of issue #24 (published 1.192 / 1.212 / 1.217). The
    # model's ratios, pinned so that a change to either entry's physics shows here (1.066 /
    # 1.065 / 1.027 before GB200's ceilings were refitted).
    for name, pred in (("llama3_8b_fp8-cs", 1.024), ("llama3_8b_fp8-mx", 1.023),
                       ("qwen3_30b_a3b_fp8-mx", 1.018)):
        e = like[(name, "GB300")]
        assert e["pred_ratio"] == pytest.approx(pred, abs=0.005)
        assert e["meas_ratio"] > e["pred_ratio"] + 0.1
