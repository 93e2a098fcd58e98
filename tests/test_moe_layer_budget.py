"""benchmarks/moe_layer_budget.py (#24): one MoE layer of a pipelined Megatron-Bridge row, op by
op; its parts sum to the layer, and the busiest GPU's MoE layers follow the pipeline layout."""

from __future__ import annotations

import pytest

from tests._benchmarks import load_benchmark


def test_deepseek_v3_gb200_layer() -> None:
    mod = load_benchmark("moe_layer_budget", keep_path=True)
    b = mod.budget("mbridge2511_gb200_deepseekv3_bf16")
    total = sum(f + bk for _, f, bk, _ in b["ops"])
    assert total == pytest.approx(b["layer_s"], rel=1e-9)
    assert sum(b["parts"].values()) == pytest.approx(b["layer_s"], rel=1e-12)
    # PP4 x VP4 over 61 layers: ceil(61 / 4) = 16 layers on the busiest GPU, all MoE
    # (Megatron-Bridge's (4, 4) layout puts the 3 dense layers on the first virtual stage)
    assert b["busiest_moe_layers"] == 16
    names = [n for n, *_ in b["ops"]]
    for op in ("routing map all_gather", "hybridep metadata", "dispatch all_to_all",
               "combine all_to_all", "attention (MLA)", "experts gate_up"):
        assert op in names
    assert "permute" not in names  # HybridEP: no permute before the dispatch
    # HybridEP's dispatch backward is the combine kernel (and vice versa)
    ops = {n: (f, bk) for n, f, bk, _ in b["ops"]}
    assert ops["dispatch all_to_all"][1] == pytest.approx(ops["combine all_to_all"][0], rel=0.01)


def test_qwen3_235b_gb200_and_bad_rows() -> None:
    mod = load_benchmark("moe_layer_budget", keep_path=True)
    b = mod.budget("mbridge2511_gb200_qwen3_235b_a22b_bf16")
    assert b["busiest_moe_layers"] == 12  # 94 layers over PP8: ceil(94 / 8)
    with pytest.raises(ValueError, match="no job row 'nope'"):
        mod.budget("nope")
    with pytest.raises(ValueError, match="no MoE layer"):
        mod.budget("mbridge2511_gb200_llama3_8b_fp8-cs")
