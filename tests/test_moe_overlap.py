"""Megatron-Core's EP all-to-all overlap (``overlap_moe_expert_parallel_comm``, Megatron-Bridge's
``moe_a2a_overlap``): the combined 1F1B schedule's exposed all-to-all per layer pair, the pairs
it overlaps per step, the step it composes, and the argument's checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.ops.host import HOST_CLASSES
from roofline.transformer import moe_overlap
from roofline.transformer.config import TransformerConfig
from roofline.transformer.layers import moe_mlp
from roofline.transformer.moe_overlap import (
    A2A_COMM_SMS,
    HYBRIDEP_COMM_SMS,
    SCHEDULE_CALLS,
    a2a_overlap_terms,
    layer_pair_parts,
    schedule_calls,
)
from roofline.transformer.moe_sync import layer_issue_terms
from roofline.transformer.program import Program
from roofline.validation.jobs import JOBS_FILE, price_job, read_jobs

TINY = TransformerConfig(name="tiny-moe", hidden_size=256, num_layers=4, num_heads=4,
                         num_kv_heads=4, head_dim=64, intermediate_size=512, vocab_size=1024,
                         num_experts=8, experts_per_token=2, moe_intermediate_size=256)
TRAIN = dict(seq_len=1024, hardware="H100 SXM", ep=4, dp=4, grad_accum=4, zero=1)


def test_exposed_a2a_by_hand() -> None:
    # every phase shorter than its compute: only the SM share the exchanges hold shows,
    # f·a = 0.1 x (0.1 + 0.2 + 0.1)
    args = (0.1, 0.5, 0.2, 1.0, 0.1, 0.8)
    assert _core.a2a_overlap_exposed_s(*args, 0.1) == pytest.approx(0.04, rel=1e-12)
    assert _core.a2a_overlap_exposed_s(*args, 0.0) == 0.0
    # every phase longer: a - c each (combine_bwd 1.0 beside attn_fwd 0.4, the dispatches
    # 2.0 beside the experts 1.5, combine_fwd 0.5 beside attn_bwd 0.2): 0.6 + 0.5 + 0.3
    longer = (1.0, 0.4, 2.0, 1.5, 0.5, 0.2)
    assert _core.a2a_overlap_exposed_s(*longer, 0.1) == pytest.approx(1.4, rel=1e-12)
    # mixed: phase 1 longer (0.6), phase 2 shorter (0.1 x 0.5), phase 3 without exchange
    mixed = (1.0, 0.4, 0.5, 3.0, 0.0, 0.2)
    assert _core.a2a_overlap_exposed_s(*mixed, 0.1) == pytest.approx(0.65, rel=1e-12)
    # no exchange, nothing exposed; never more than the exchanges themselves
    assert _core.a2a_overlap_exposed_s(0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.5) == 0.0
    assert _core.a2a_overlap_exposed_s(1.0, 0.0, 2.0, 0.0, 0.5, 0.0, 0.5) == 3.5


def test_combined_1f1b_pairs_by_hand() -> None:
    # no pipelining: the first forward and the last backward alone, m - 1 pairs
    assert _core.combined_1f1b_pairs(1, 5, 1) == 4.0
    assert _core.combined_1f1b_pairs(1, 1, 1) == 0.0
    # PP 8, VP 4, 256 micro-batches: 1024 chunk passes, warmup 2 x 7 + 3 x 8 + 1 = 39
    assert _core.combined_1f1b_pairs(8, 256, 4) == 985.0
    # PP 4, VP 2, 2 micro-batches: everything in the warmup (min(4, 6 + 4 + 1))
    assert _core.combined_1f1b_pairs(4, 2, 2) == 0.0
    # vectorised: PP 2 VP 2 over 8 micro-batches, 16 - (2 + 2 + 1)
    np.testing.assert_array_equal(_core.combined_1f1b_pairs(np.array([1, 2]), 8, [1, 2]),
                                  [7.0, 11.0])


def _program() -> tuple[Program, np.ndarray]:
    ops = Program(train=True, recipe=None)
    moe_mlp(ops, 0, TINY, 64, 1, 4, 2.0, False, 0.0)
    return ops, np.arange(1.0, len(ops.rows) + 1.0)  # row i takes i + 1 seconds


def test_layer_pair_parts_split_the_rows() -> None:
    ops, t = _program()
    names = [r[1] for r in ops.rows]
    cb, af, d, m, cf, ab = layer_pair_parts(ops, t, 0) or (0.0,) * 6
    at = {n: t[i] for i, n in enumerate(names)}
    assert cb == at["combine all_to_all bwd"] and cf == at["combine all_to_all"]
    assert d == sum(at[n] for n in ("dispatch all_to_all", "dispatch all_to_all bwd",
                                    "dispatch probs all_to_all",
                                    "dispatch probs all_to_all bwd"))
    first = names.index("dispatch all_to_all")
    comb = names.index("combine all_to_all")
    before = [i for i, n in enumerate(names) if i < first]
    assert af == sum(t[i] for i in before if not names[i].endswith(" bwd"))
    assert ab == sum(t[i] for i in before if names[i].endswith(" bwd"))
    between = [i for i in range(first, comb) if "all_to_all" not in names[i]]
    assert m == sum(t[i] for i in between)
    after = [i for i in range(len(names)) if i > comb and names[i] != "combine all_to_all bwd"]
    assert cb + af + d + m + cf + ab + sum(t[i] for i in after) == pytest.approx(t.sum())
    assert layer_pair_parts(Program(train=True, recipe=None), np.zeros(0), 0) is None


def test_hybridep_holds_its_script_sms() -> None:
    # the exchange's SM share: NCCL's 16 channels, HybridEP's 32 (Megatron-Bridge's perf
    # scripts); without host terms a pair hides A - sum max(a - c, f a)
    ops, t = _program()
    hw = rl.hardware("H100 SXM")
    cb, af, d, m, cf, ab = layer_pair_parts(ops, t, 0) or (0.0,) * 6
    for dispatcher, sms in (("alltoall", 16), ("hybridep", 32), ("hybridep_2511", 32)):
        ops.dispatcher = dispatcher
        f = sms / 132
        exposed = max(cb - af, f * cb) + max(d - m, f * d) + max(cf - ab, f * cf)
        got = a2a_overlap_terms(ops, t, [("moe", [0, 1, 2])], 0, hw)
        assert got["a2a_hidden_heavy_layer_s"] == pytest.approx(cb + d + cf - exposed, rel=1e-12)
        assert got["a2a_hidden_layers_s"] == pytest.approx(3 * (cb + d + cf - exposed), rel=1e-12)
    assert (A2A_COMM_SMS, HYBRIDEP_COMM_SMS) == (16, 32)


def test_false_is_the_default_step() -> None:
    plain = rl.transformer.estimate(TINY, "train", 1, **TRAIN)
    off = rl.transformer.estimate(TINY, "train", 1, moe_a2a_overlap=False, **TRAIN)
    assert plain.step is not None and off.step is not None
    assert off.step.time_s == plain.step.time_s
    assert "a2a_hidden_layers_s" not in off._cache["train_base"]


def test_overlap_hides_each_pair_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict] = []

    def issue(*args: object, **kw: object) -> dict:
        seen.append(layer_issue_terms(*args, **kw))  # type: ignore[arg-type]
        return seen[-1]

    monkeypatch.setattr(moe_overlap, "layer_issue_terms", issue)
    off = rl.transformer.estimate(TINY, "train", 1, **TRAIN)
    on = rl.transformer.estimate(TINY, "train", 1, moe_a2a_overlap=True, **TRAIN)
    assert off.step is not None and on.step is not None
    t = on.columns["time_s"]
    # one MoE layer split by hand as the schedule's nodes: attn (rows before the dispatch),
    # mlp (between dispatch and combine), the exchanges (TINY: bf16, no shared experts)
    g = next(g for g, (kind, _) in enumerate(on.groups) if kind == "moe")
    rows = [(n, t[i]) for i, (gg, n, _) in enumerate(on.rows) if gg == g]
    names = [n for n, _ in rows]
    first, comb = names.index("dispatch all_to_all"), names.index("combine all_to_all")
    comm = {n: x for n, x in rows if "all_to_all" in n}
    af = sum(x for n, x in rows[:first] if not n.endswith(" bwd"))
    ab = sum(x for n, x in rows[:first] if n.endswith(" bwd"))
    m = sum(x for n, x in rows[first:comb] if "all_to_all" not in n)
    cb, cf = comm["combine all_to_all bwd"], comm["combine all_to_all"]
    d = sum(x for n, x in comm.items() if n.startswith("dispatch"))
    f = A2A_COMM_SMS / rl.hardware("H100 SXM").sms  # 16 of 132 SMs
    exposed = max(cb - af, f * cb) + max(d - m, f * d) + max(cf - ab, f * cf)
    hidden_a2a = cb + d + cf - exposed
    assert 0 < hidden_a2a < cb + d + cf
    # the eager MoE host terms are on: the pair saves g + e - max(g - a, h), the layer's GPU
    # time g, the host time the plain schedule exposes for it e, the host's issue time h
    (terms,) = seen  # layer_issue_terms with schedule_calls(False) (bf16): see the next tests
    gpu, h, e = terms[g]
    assert gpu == pytest.approx(sum(x for _, x in rows), rel=1e-12)
    base = on._cache["train_base"]
    saving = gpu + e - max(gpu - hidden_a2a, h)
    assert base["a2a_hidden_heavy_layer_s"] == pytest.approx(saving, rel=1e-12)
    assert base["host_heavy_layer_s"] == pytest.approx(e, rel=1e-12)
    # TINY's layer is host-bound (h > g): the combined schedule costs what issuing both
    # micro-batches' launches from one thread costs over the plain layer, nothing is hidden
    assert h > gpu and saving == pytest.approx(gpu + e - h, rel=1e-12) and saving < 0
    # pp = 1, 4 micro-batches: 3 overlapped pairs of every layer; nothing else moves
    hidden = 3 * base["a2a_hidden_layers_s"]
    assert base["a2a_hidden_layers_s"] == pytest.approx(
        TINY.num_layers * base["a2a_hidden_heavy_layer_s"], rel=1e-12)
    assert on.step.time_s == pytest.approx(off.step.time_s - hidden, rel=1e-12)
    assert on.step.compute_s == pytest.approx(off.step.compute_s - hidden, rel=1e-12)
    assert on.step.bubble_s == off.step.bubble_s and on.step.host_s == off.step.host_s


def test_combined_saving_by_hand() -> None:
    # GPU-bound pair: g 10, plain exposure 1, a2a hidden 2, issue 6 -> wall 8, saves 3
    assert _core.combined_1f1b_saving_s(10.0, 1.0, 2.0, 6.0) == pytest.approx(3.0)
    # host-bound pair: issue 12 > g - a = 8 -> wall 12; g + e = 11 -> costs 1
    assert _core.combined_1f1b_saving_s(10.0, 1.0, 2.0, 12.0) == pytest.approx(-1.0)
    # the a2a hidden is at most the GPU time; negative inputs count as 0
    assert _core.combined_1f1b_saving_s(1.0, 0.0, 5.0, 0.0) == pytest.approx(1.0)
    assert _core.combined_1f1b_saving_s(1.0, -1.0, -1.0, -1.0) == pytest.approx(0.0)
    np.testing.assert_allclose(_core.combined_1f1b_saving_s([10.0, 10.0], 1.0, 2.0, [6.0, 12.0]),
                               [3.0, -1.0])


def test_schedule_calls_priced_by_hand() -> None:
    # 8 node passes x 6 stream / event / NVTX calls + the mlp's delayed wgrad context (4) +
    # 25 tensor wraps = 77 views; 4 engine runs (+3 quantization contexts under a recipe)
    views, module = HOST_CLASSES.index("view"), HOST_CLASSES.index("module")
    bf16, lowp = schedule_calls(False), schedule_calls(True)
    assert bf16[views] == lowp[views] == 8 * 6 + 4 + 25 == 77
    assert bf16[module] == SCHEDULE_CALLS["engine_runs"] == 4 and lowp[module] == 7
    assert bf16.sum() == 81 and lowp.sum() == 84
    # priced as the host terms price them: 77 x 0.1685 + 4 x 2.6392 bare eager ops of
    # 11.8329 us each (data/terms/host.json)
    ops, t = _program()
    hw = rl.hardware("H100 SXM")
    groups = [("moe", [0, 1])]
    with_calls = layer_issue_terms(ops, t, groups, hw, "default", extra_calls=bf16)[0]
    without = layer_issue_terms(ops, t, groups, hw, "default")[0]
    assert with_calls[1] - without[1] == pytest.approx(
        (77 * 0.1685 + 4 * 2.6392) * 11.8329e-6, rel=1e-4)
    assert with_calls[0] == without[0] == pytest.approx(t.sum(), rel=1e-12)
    assert with_calls[2] == without[2]


def test_pipelined_overlap_counts_the_first_stage_pairs() -> None:
    kw = dict(TRAIN, dp=2, pp=2, virtual_stages=2, grad_accum=8)
    off = rl.transformer.estimate(TINY, "train", 1, **kw)
    on = rl.transformer.estimate(TINY, "train", 1, moe_a2a_overlap=True, **kw)
    assert off.step is not None and on.step is not None
    base = on._cache["train_base"]
    # 16 chunk passes, warmup 2 + 2 + 1 = 5: 11 pairs of a chunk's 1 layer (2 layers / 2 chunks)
    hidden = 11 / 2 * 2 * base["a2a_hidden_heavy_layer_s"]
    assert on.step.time_s == pytest.approx(off.step.time_s - hidden, rel=1e-12)


@pytest.mark.parametrize("kw, match", [
    (dict(ep=1, dp=16), "ep > 1"),
    (dict(pp=2, dp=2), "virtual_stages > 1"),
    (dict(recompute="full"), "recomputation"),
    (dict(recompute="layer:2"), "recomputation"),
    (dict(dtype="fp32"), "bf16"),
])
def test_bad_layouts_name_the_argument(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=f"moe_a2a_overlap.*{match}"):
        rl.transformer.estimate(TINY, "train", 1, moe_a2a_overlap=True, **dict(TRAIN, **kw))


def test_bad_values_and_phases() -> None:
    with pytest.raises(TypeError, match="moe_a2a_overlap must be a bool"):
        rl.transformer.estimate(TINY, "train", 1, moe_a2a_overlap=1, **TRAIN)  # type: ignore
    with pytest.raises(ValueError, match="moe_a2a_overlap.*phase='train'"):
        rl.transformer.estimate(TINY, "decode", 1, kv_len=128, ep=4, hardware="H100 SXM",
                                moe_a2a_overlap=True)
    dense = TransformerConfig(name="tiny-dense", hidden_size=256, num_layers=2, num_heads=4,
                              num_kv_heads=4, head_dim=64, intermediate_size=512,
                              vocab_size=1024)
    with pytest.raises(ValueError, match="moe_a2a_overlap.*MoE"):
        rl.transformer.estimate(dense, "train", 1, seq_len=1024, hardware="H100 SXM", dp=4,
                                moe_a2a_overlap=True)


def test_published_rows_that_ran_it() -> None:
    """The two published runs whose presets set ``moe_a2a_overlap`` (hardware-notes: the
    combined 1F1B sections): their layouts pass Megatron-Core's checks; the GPU-bound GPT-OSS
    run is faster with it, the host-bound Qwen3-235B MBS-1 run is not (its host issues both
    micro-batches' launches from one thread; 26.04 dropped the overlap for it)."""
    rows = {r["id"]: r for r in read_jobs(JOBS_FILE)}
    ran = {rid for rid, r in rows.items() if r["config"].get("moe_a2a_overlap")}
    assert ran == {"mbridge2602_b300_qwen3_235b_a22b_fp8-mx", "mbridge2604_gb200_gptoss120b_bf16"}
    faster = {}
    for rid in sorted(ran):
        c = rows[rid]["config"]
        assert c["ep"] > 1 and (c["pp"] == 1 or c["virtual_stages"] > 1), rid
        assert not c["recompute"].startswith(("full", "layer")), rid
        plain = json.loads(json.dumps(rows[rid]))
        plain["config"]["moe_a2a_overlap"] = False
        faster[rid] = price_job(rows[rid]) > price_job(plain)  # tokens/s
    assert faster == {"mbridge2602_b300_qwen3_235b_a22b_fp8-mx": False,
                      "mbridge2604_gb200_gptoss120b_bf16": True}
