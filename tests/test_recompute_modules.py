"""Megatron-Core's module recomputation (``recompute="modules:<m>,..."``: selective
granularity with ``recompute_modules``)."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline._errors import ArgumentValueError
from roofline.transformer.recompute import RECOMPUTE_MODULES, module_recompute_share

T = rl.transformer
KW = {"seq_len": 4096, "micro_batch": 1, "hardware": "B200", "optimizer_update": False}


def _forward_s(est: object, names: tuple[str, ...]) -> float:
    """Hand sum: forward time of the rows named, times their group's layer count."""
    total = 0.0
    for (g, name, _), t in zip(est.rows, est.columns["time_s"], strict=True):  # type: ignore[attr-defined]
        kind, layers = est.groups[g]  # type: ignore[attr-defined]
        if kind != "head" and name in names:
            total += float(t) * len(layers)
    return total


def test_layernorm_and_moe_act_add_their_forward_per_micro_batch() -> None:
    kw = dict(KW, ep=8, dp=8, grad_accum=3)
    none = T.estimate("Qwen3-30B-A3B", "train", **kw)
    mods = T.estimate("Qwen3-30B-A3B", "train", recompute="modules:layernorm,moe_act", **kw)
    # the same op table; the recomputed forward: both norms and the routed experts'
    # activation of every layer, once per micro-batch (pp = 1: no bubble)
    want = 3 * _forward_s(none, ("attn_norm", "mlp_norm", "experts act"))
    assert want > 0
    assert mods.step.recompute_s == pytest.approx(want, rel=1e-12)
    assert mods.step.compute_s - none.step.compute_s == pytest.approx(want, rel=1e-9)
    assert mods.step.time_s > none.step.time_s
    assert mods.step.layout["recompute"] == "modules:layernorm,moe_act"
    # the checkpoints free what the next modules saved of their outputs (the bytes:
    # tests/test_saved_activations.py)
    assert mods.memory["activations_bytes"] < none.memory["activations_bytes"]
    assert mods.wall_s >= mods.step.time_s


def test_mla_up_proj_is_the_up_projections_and_their_rope() -> None:
    kw = dict(KW, ep=8, dp=8, pp=1, grad_accum=2)
    model = T.config("DeepSeek-V3").replace(num_layers=5, mtp_layers=0)  # 3 dense, 2 MoE
    none = T.estimate(model, "train", **kw)
    mla = T.estimate(model, "train", recompute="modules:mla_up_proj", **kw)
    names = ("q_b_proj", "kv_b_proj", "rope")
    assert {n for _, n, _ in none.rows} >= set(names)
    assert mla.step.recompute_s == pytest.approx(2 * _forward_s(none, names), rel=1e-12)
    # a model without MLA has no up-projection: nothing recomputed (its RoPE is not MLA's)
    llama = T.estimate("Llama-3-8B", "train", recompute="modules:mla_up_proj", **KW)
    assert llama.step.recompute_s == 0.0


def test_mlp_module_is_the_dense_layers_mlp_only() -> None:
    # Megatron-Core's "mlp" recompute module reruns self.mlp only where the layer is not an
    # MoE layer (TransformerLayer.recompute_mlp): DeepSeek-V3's dense layers, as Megatron-
    # Bridge's H100 presets list it (recompute_modules=["mla_up_proj", "mlp"])
    kw = dict(KW, ep=8, dp=8, pp=1, grad_accum=2)
    model = T.config("DeepSeek-V3").replace(num_layers=5, mtp_layers=0)  # 3 dense, 2 MoE
    none = T.estimate(model, "train", **kw)
    mlp = T.estimate(model, "train", recompute="modules:mlp", **kw)
    names = ("gate_up_proj", "act (silu*up)", "down_proj")
    assert {n for _, n, _ in none.rows} >= set(names) | {"shared gate_up"}
    # 2 micro-batches x the dense layers' MLP forward (fc1, activation, fc2; tp = 1)
    want = 2 * _forward_s(none, names)
    assert want > 0
    assert mlp.step.recompute_s == pytest.approx(want, rel=1e-12)
    both = T.estimate(model, "train", recompute="modules:mla_up_proj,mlp", **kw)
    mla = T.estimate(model, "train", recompute="modules:mla_up_proj", **kw)
    assert both.step.recompute_s == pytest.approx(
        mla.step.recompute_s + mlp.step.recompute_s, rel=1e-12)
    # a model whose every layer is an MoE layer recomputes nothing under "mlp"
    q = T.estimate("Qwen3-30B-A3B", "train", recompute="modules:mlp", **dict(KW, ep=8, dp=8))
    assert q.step.recompute_s == 0.0


def test_core_attn_module_is_selective_recomputation() -> None:
    a = T.estimate("Llama-3-8B", "train", recompute="modules:core_attn", **KW)
    b = T.estimate("Llama-3-8B", "train", recompute="selective", **KW)
    assert a.step.recompute_s == pytest.approx(b.step.recompute_s, rel=1e-12)
    assert a.step.time_s == pytest.approx(b.step.time_s, rel=1e-12)
    # and frees what it frees (the attention's logsumexp; its output is the projection's),
    # plus one layer's logsumexp again while that layer's backward recomputes it
    # (32 heads x 4096 tokens x fp32; "selective" adds no such transient)
    assert a.memory["activations_bytes"] - b.memory["activations_bytes"] == pytest.approx(
        32 * 4096 * 4, rel=1e-9)


def test_module_share_marks_forward_rows_only() -> None:
    rows = [(0, "attn_norm", "elementwise"), (0, "attn_norm bwd", "elementwise"),
            (0, "rope", "elementwise"), (0, "experts act", "elementwise"),
            (0, "attention", "attention"), (1, "final_norm", "elementwise")]
    groups = [("moe", [0, 1]), ("head", [])]
    share = module_recompute_share(rows, groups, ("layernorm", "moe_act", "mla_up_proj"))
    assert share.tolist() == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    assert module_recompute_share(rows, groups, ("core_attn",)).tolist() == [
        0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert set(RECOMPUTE_MODULES) == {"layernorm", "moe_act", "mla_up_proj", "core_attn", "mlp"}


@pytest.mark.parametrize(("value", "match"), [
    ("modules:", "recompute_modules"), ("modules", "recompute_modules"),
    ("modules:layernorm,foo", "unknown module 'foo'"),
    ("modules:layernorm;moe_act", "unknown module"),
])
def test_bad_modules_name_the_argument(value: str, match: str) -> None:
    with pytest.raises(ArgumentValueError, match=match) as info:
        T.estimate("Llama-3-8B", "train", recompute=value, **KW)
    assert "recompute" in str(info.value)


def test_param_gather_in_the_optimizer_step_is_exposed_whole() -> None:
    """``overlap_param_gather=False``: ZeRO-1's weight all-gather runs in the optimizer step,
    every unit (embedding, each layer, head) one all-gather over the dp ranks, none hidden."""
    from roofline.ops.collectives import NCCL_NVLINK_FRACTION, link_bytes_per_s

    kw = dict(seq_len=2048, micro_batch=1, hardware="H100 SXM", dp=8, zero=1, grad_accum=4)
    on = T.estimate("Llama-3-8B", "train", **kw)
    off = T.estimate("Llama-3-8B", "train", overlap_param_gather=False, **kw)
    cfg = T.config("Llama-3-8B")
    counts = cfg.param_counts()
    emb, head = counts["embedding"], counts["lm_head"]
    layer = (off.memory["params_per_gpu"] - emb - head) / cfg.num_layers
    bw = link_bytes_per_s(rl.hardware("H100 SXM"), NCCL_NVLINK_FRACTION)

    def ag(params: float) -> float:  # bf16 weights gathered over the 8 dp ranks
        return float(rl.all_gather(int(round(2 * params)), 8, link_bytes_per_s=bw).time_s)

    serial = cfg.num_layers * ag(layer) + ag(emb) + ag(head)
    assert off.step.comm_s == pytest.approx(on.step.comm_s, rel=1e-9)  # same traffic
    assert off.step.exposed_comm_s >= serial * (1 - 1e-9)
    # what stays overlapped (the gradient reduce-scatter) exposes no more than before
    assert off.step.exposed_comm_s - serial <= on.step.exposed_comm_s * (1 + 1e-9)
    assert off.step.exposed_comm_s > on.step.exposed_comm_s
    assert off.step.time_s - on.step.time_s == pytest.approx(
        off.step.exposed_comm_s - on.step.exposed_comm_s, rel=1e-9)
    # the default follows overlap; ZeRO-3 gathers per layer in every forward regardless
    assert T.estimate("Llama-3-8B", "train", overlap=False, **kw).step.time_s == pytest.approx(
        T.estimate("Llama-3-8B", "train", overlap=False, overlap_param_gather=False,
                   **kw).step.time_s)
    with pytest.raises(TypeError, match="overlap_param_gather"):
        T.estimate("Llama-3-8B", "train", overlap_param_gather="no", **kw)
