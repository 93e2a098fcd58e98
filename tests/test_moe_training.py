"""MoE training as Megatron-Core runs it: dispatch bytes per rank, the permute / chunk-sort /
quantize kernels, and the host time the dropless sync exposes."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline._params.resolve import resolve
from roofline.transformer.config import TransformerConfig
from roofline.transformer.layers import expert_fc2_bias, moe_mlp
from roofline.transformer.moe_sync import _row_kernels, sync_exposed_s
from roofline.transformer.program import Program

TINY = TransformerConfig(name="tiny-moe", hidden_size=64, num_layers=2, num_heads=4,
                         num_kv_heads=4, head_dim=16, intermediate_size=128, vocab_size=0,
                         num_experts=8, experts_per_token=2, moe_intermediate_size=32)


def _layer(t: int, ep: int, *, train: bool = True, lowp: bool = False, skew: float = 0.0,
           cfg: TransformerConfig = TINY) -> Program:
    ops = Program(train=train, recipe="rowwise" if lowp else None)
    moe_mlp(ops, 0, cfg, t, 1, ep, 2.0, lowp, skew)
    return ops


def _comms(ops: Program) -> dict[str, tuple[str, float, float]]:
    return {ops.rows[i][1]: ops.comms[idx] for i, (_, _, _, parts) in enumerate(ops.rows)
            for kind, idx in parts if kind == "comms"}


def test_dispatch_bytes_per_rank_by_hand() -> None:
    # 16 tokens per GPU, 4 EP ranks: 64 tokens x top-2 = 128 assignments over 8 experts =
    # 16 per expert; rank r holds experts r and r+4 -> receives 32 rows; it sends 16·2 = 32.
    # Each row is hidden=64 bf16 elements: 32·64·2 = 4096 bytes each way.
    comms = _comms(_layer(16, 4))
    assert comms["dispatch all_to_all"] == ("all_to_all", 4096.0, 4)
    assert comms["combine all_to_all"] == ("all_to_all", 4096.0, 4)
    assert comms["dispatch all_to_all bwd"] == ("all_to_all", 4096.0, 4)
    # Megatron-Core dispatches bf16 under a low-precision recipe too (TE quantizes after the
    # dispatch); a serving engine's fp8 dispatch halves the dispatch, not the bf16 combine
    comms = _comms(_layer(16, 4, lowp=True))
    assert comms["dispatch all_to_all"][1] == 4096.0
    comms = _comms(_layer(16, 4, lowp=True, train=False))
    assert comms["dispatch all_to_all"][1] == 2048.0
    assert comms["combine all_to_all"][1] == 4096.0


def test_busiest_rank_sets_the_bytes_under_skew() -> None:
    # Zipf-skewed routing: the busiest rank receives more than it sends (t·k rows)
    even = _comms(_layer(64, 4))["dispatch all_to_all"][1]
    skewed = _comms(_layer(64, 4, skew=1.0))["dispatch all_to_all"][1]
    assert skewed > even == 64 * 2 * 64 * 2


def test_permute_sort_and_quantize_kernels() -> None:
    ops = _layer(16, 4, lowp=True)
    rows = {ops.rows[i][1]: ops.elts[idx] for i, (_, _, _, parts) in enumerate(ops.rows)
            for kind, idx in parts if kind == "elts"}
    # permute writes one row per (token, chosen expert): 16·2·64 elements
    assert rows["permute"] == (16 * 2 * 64, 1, 1)
    # the 32 received rows are regrouped by expert and back
    assert rows["sort chunks by expert"] == (32 * 64, 1, 1)
    assert rows["unsort chunks"] == (32 * 64, 1, 1)
    # both grouped linears quantize their inputs, one kernel per expert (TE's split_quantize,
    # priced by the core's cast formulas): 32 rows over the local experts x hidden 64 and
    # width 32
    quant = [ops.quant[idx] for _, name, _, parts in ops.rows if name == "experts quantize"
             for kind, idx in parts if kind == "quant"]
    assert [(sum(c), w) for c, w in quant] == [(32, 64), (32, 32)]
    assert "permute bwd" in rows
    # no expert parallelism: nothing to regroup; bf16: nothing to quantize
    names = {r[1] for r in _layer(16, 1).rows}
    assert "permute" in names and "sort chunks by expert" not in names
    assert "experts quantize" not in names
    # serving keeps the engines' fused MoE program
    assert "permute" not in {r[1] for r in _layer(16, 4, train=False).rows}


def _moe_step(**kw: object) -> rl.transformer.ModelEstimate:
    args: dict = dict(seq_len=1024, hardware="B200", ep=8, dp=8, micro_batch=1)
    args.update(kw)
    return rl.transformer.estimate("Qwen3-30B-A3B", "train", **args)


def test_dispatch_monotone_in_tokens_and_experts() -> None:
    prev = 0.0
    for t in (8, 16, 64, 256):
        b = _comms(_layer(t, 4))["dispatch all_to_all"][1]
        assert b > prev
        prev = b
    # more experts per token (top-k) -> more rows exchanged; more experts in all at a fixed
    # top-k leave the bytes alone (uniform routing) but never lower them
    k2 = _comms(_layer(32, 4))["dispatch all_to_all"][1]
    k4 = _comms(_layer(32, 4, cfg=TINY.replace(experts_per_token=4)))["dispatch all_to_all"][1]
    e16 = _comms(_layer(32, 4, cfg=TINY.replace(num_experts=16)))["dispatch all_to_all"][1]
    assert k4 == 2 * k2 and e16 >= k2
    # the step time grows with the tokens of a micro-batch
    times = [_moe_step(seq_len=s).step.time_s for s in (512, 1024, 2048)]
    assert np.all(np.diff(times) > 0)


def test_host_sync_exposure_is_part_of_the_step() -> None:
    e = _moe_step()
    s = e.step
    assert s.host_s >= 0.0
    assert s.time_s == pytest.approx(s.compute_s + s.bubble_s + s.p2p_s + s.exposed_comm_s
                                     + s.optimizer_s)
    # a dense model has no dropless sync
    d = rl.transformer.estimate("Llama-3-8B", "train", seq_len=1024, hardware="B200")
    assert d.step.host_s == 0.0
    # without launch overhead (peak preset) nothing is exposed
    assert _moe_step(efficiency="peak").step.host_s == 0.0
    # launching per local expert: a tiny micro-batch is launch-bound, its sync exposed
    tiny = _moe_step(seq_len=64)
    assert tiny.step.host_s > 0.0


# --- Transformer Engine's GroupedLinear: one GEMM per local expert -------------------------

def test_looped_grouped_gemm_by_hand() -> None:
    # TE's multi-stream cuBLAS loop: S = the GEMMs one after another, U = one batched GEMM of
    # the same FLOPs (3 groups of the mean rows); 3 non-empty groups on min(4, 3) = 3 streams:
    # time = min(S, max(U, S / 3))
    counts = np.array([2048, 640, 0, 384])
    kw = dict(dtype="bf16", hardware="B200", counts=counts)
    e = rl.grouped_gemm(None, 2048, 1536, layout="looped", **kw)
    serial = float(np.sum(rl.gemm(counts[counts > 0], 2048, 1536, dtype="bf16",
                                  hardware="B200").time_s))
    union = float(rl.gemm(1024, 2048, 1536, dtype="bf16", hardware="B200",
                          batch=3).time_s)
    assert e.time_s == pytest.approx(min(serial, max(union, serial / 3)), rel=1e-9)
    assert serial / 3 <= e.time_s <= serial
    assert e.flops == pytest.approx(2 * 3072 * 2048 * 1536, rel=1e-12)
    # the weight gradient dB_g = A_g^T dC_g: k x m_g by m_g x n, A transposed
    w = rl.grouped_gemm(None, 2048, 1536, layout="looped_wgrad", **kw)
    wserial = float(np.sum(rl.gemm(2048, counts[counts > 0], 1536, dtype="bf16",
                                   hardware="B200", a_transposed=True).time_s))
    wunion = float(rl.gemm(2048, 1024, 1536, dtype="bf16", hardware="B200",
                           batch=3, a_transposed=True).time_s)
    assert w.time_s == pytest.approx(min(wserial, max(wunion, wserial / 3)), rel=1e-9)
    assert w.flops == pytest.approx(e.flops, rel=1e-12)
    # one group: one GEMM, nothing to overlap
    one = rl.grouped_gemm(None, 2048, 1536, dtype="bf16", hardware="B200", counts=[700],
                          layout="looped")
    assert one.time_s == pytest.approx(float(rl.gemm(700, 2048, 1536, dtype="bf16",
                                                     hardware="B200").time_s), rel=1e-12)


def test_looped_costs_more_than_one_batched_kernel_for_small_experts() -> None:
    # 16 experts of 128 rows: 16 under-filled kernels, each with its own latency floor, four at
    # a time, against one batched kernel whose tiles fill the SMs
    counts = np.full(16, 128)
    one = rl.gemm(128, 2048, 768, dtype="bf16", hardware="B200", batch=16)
    loop = rl.grouped_gemm(None, 2048, 768, dtype="bf16", hardware="B200", counts=counts,
                           layout="looped")
    single = rl.gemm(128, 2048, 768, dtype="bf16", hardware="B200")
    assert loop.time_s > one.time_s
    assert loop.time_s == pytest.approx(max(float(one.time_s), 4 * float(single.time_s)))
    # at a fixed number of tokens, splitting them over more experts never gets cheaper
    times = [float(rl.grouped_gemm(None, 2048, 768, dtype="bf16", hardware="B200",
                                   counts=np.full(e, 4096 // e), layout="looped").time_s)
             for e in (1, 2, 4, 8, 16, 32)]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(times, times[1:], strict=False))
    # more tokens per expert never gets cheaper
    more = [float(rl.grouped_gemm(None, 2048, 768, dtype="bf16", hardware="B200",
                                  counts=np.full(8, m), layout="looped").time_s)
            for m in (64, 256, 1024, 4096)]
    assert all(b >= a for a, b in zip(more, more[1:], strict=False))


def test_looped_layout_needs_counts() -> None:
    with pytest.raises(ValueError, match="layout='looped' needs counts"):
        rl.grouped_gemm(128, 2048, 768, groups=8, layout="looped", hardware="B200")
    with pytest.raises(ValueError, match="m_per_group must be None"):
        rl.grouped_gemm(128, 2048, 768, counts=[128, 128], layout="looped_wgrad",
                        hardware="B200")


def test_training_experts_run_as_te_grouped_linear() -> None:
    # training: forward and dgrad looped, wgrad looped with the group's rows as the reduction;
    # serving keeps one grouped kernel
    ops = _layer(64, 1)
    lays = [(k, n, lay) for _, k, n, lay, _ in ops.grouped]
    assert lays == [(64, 64, "looped"), (64, 64, "looped"), (64, 64, "looped_wgrad"),
                    (32, 64, "looped"), (64, 32, "looped"), (32, 64, "looped_wgrad")]
    assert {spec[3] for spec in _layer(64, 1, train=False).grouped} == {"contiguous"}


def test_launches_per_expert_exposed_forward_and_backward_by_hand() -> None:
    # One MoE layer kind (2 layers) of TINY, 16 tokens, no EP: 8 local experts, 4 rows each.
    # With every kernel at zero GPU time the exposure is the launch wall itself.
    ops = _layer(16, 1)
    names = [r[1] for r in ops.rows]
    assert "sort chunks by expert" not in names  # no EP: no regrouping
    zero = np.zeros(len(ops.rows))
    groups = [("moe", [0, 1])]
    # (no EP, no TP: no all-to-all, no all-reduce rows)
    # forward kernels of one layer: permute, gate_up (8 GEMMs), act, down (8), weighted sum,
    # residual, norm, router, top-k = 23
    # backward of one layer: norm (its kernel and the weight gradient's finalize,
    # MCORE_ROW_KERNELS), router (dgrad + wgrad), top-k, permute, gate_up (8 dgrad + 8 wgrad),
    # act, down (16), weighted sum, residual = 41
    kernels = {n: _row_kernels(ops, i, 0, n.endswith(" bwd"))[0] for i, n in enumerate(names)}
    assert sum(v for n, v in kernels.items() if not n.endswith(" bwd")) == 23
    assert sum(v for n, v in kernels.items() if n.endswith(" bwd")) == 41
    # Host calls by class (``HOST_CLASSES``: view, kernel, gemm, attention, module, backward),
    # Forward (from the sync after the permute, the GPU idle: every call charged): 16 expert
    # GEMMs + the router GEMM = 17 gemm calls, act / weighted sum / residual / norm / top-k /
    # the next permute = 6 kernel calls. Backward (its first launch uncharged) of both
    # layers (starting at the residual): per layer 16 + 16
    # expert GEMMs + router dgrad and wgrad = 34 gemm calls, 8 + 8 + 1 weight gradients (each
    # an AccumulateGrad node, Megatron's DDP hook and TE's dummy wgrad: backward + module +
    # view), 6 kernel calls; one (the first residual) uncharged. Before each expert's forward
    # and dgrad GEMM, TE's per-expert Python bookkeeping: 6 view calls each in bf16
    # (TE_GROUPED_PY_CALLS: 16 forward GEMMs per layer, 16 dgrad GEMMs per layer).
    t = resolve("B200", "default")[2].host
    e = t.eager_launch_s
    gemm, kern, view = (t.op_gemm_launches * e, t.op_kernel_launches * e,
                        t.op_view_launches * e)
    wgrad = (t.op_backward_launches + t.module_call_launches + t.op_view_launches) * e
    # Megatron-Core's router and dispatcher launches beyond the GEMM and top-k (moe_host, no
    # EP): forward after each top-k, RandomSTE's clone + normal_ (2 kernel calls, 1 view),
    # the preprocess's sum + long (2 kernel calls), the tokens_per_expert copy to the host
    # (wait_stream, record_event, record_stream: 3 views, 1 copy call) = 5 kernel + 4 view
    # calls; backward per layer, the gating's 4 casts and RandomSTE's node (1 backward call).
    bwd = t.op_backward_launches * e
    extra = 2 * (5 * kern + 4 * view) + 2 * (4 * kern + bwd)
    # Megatron-Core's module calls (MCORE_FORWARD_MODULES): per forward segment TEGroupedMLP
    # + fc1 before gate_up, fc2 before down, pre-MLP norm + MoELayer before mlp_norm, the
    # TopKRouter before the router = 6; per layer backward, the TE Functions of fc2, fc1 and
    # the pre-MLP norm = 3
    module = t.module_call_launches * e
    extra += 2 * 6 * module + 2 * 3 * module
    # the experts' weighted SwiGLU is a torch.compile'd function (MCORE_COMPILED_CALLS): its
    # entry once per layer forward and once per layer backward = 4 module calls; each TE
    # grouped GEMM call's stream / event calls (te_grouped_call_views): 8 GEMMs over 4
    # streams, 1 + 3 x 4 = 13 view calls, 2 calls per layer forward and 4 per layer backward
    extra += 4 * module + (2 * 2 + 2 * 4) * 13 * view
    # after each of the 2 x 16 wgrad GEMMs TE's clear_tensor_data resets the saved bf16
    # split's .data (TE_WGRAD_CLEAR_CALLS): one view each
    extra += 2 * 16 * view
    # the pre-MLP norm is TE's fusible-op RMSNorm (TE_OPS_NORMS): its fuser once per pass and
    # layer = 4 module calls; its backward's finalize kernel, 1 kernel call per layer
    extra += 4 * module + 2 * kern
    # each of the 3 sequences ends with its last kernel's kernel_gap_s (zero-time kernels;
    # the forward's zero-time reference launch adds none: the host is behind)
    want = (2 * (17 * gemm + 6 * kern + 16 * 6 * view)
            + (68 * gemm + 34 * wgrad + 11 * kern + 2 * 16 * 6 * view) + 3 * t.kernel_gap_s
            + extra)
    got = sync_exposed_s(ops, zero, groups, rl.hardware("B200"), "default")
    assert got == pytest.approx(want, rel=1e-12)
    # a low-precision recipe quantizes each expert's rows in its own kernel, per grouped linear
    low = _layer(16, 1, lowp=True)
    i = [r[1] for r in low.rows].index("experts quantize")
    assert _row_kernels(low, i, 0, False) == (16, 1.0)
    assert _row_kernels(low, i + 1, 0, True) == (16, 1.0)


def test_launch_exposure_grows_with_local_experts() -> None:
    # the same tokens over more local experts: more kernels to launch, more host time exposed
    host = []
    for e in (8, 16, 32, 64):
        cfg = TINY.replace(num_experts=e)
        ops = _layer(64, 1, cfg=cfg)  # 128 assignments: every expert used
        t = np.full(len(ops.rows), 1e-6)
        host.append(sync_exposed_s(ops, t, [("moe", [0, 1])], rl.hardware("B200"), "default"))
    assert all(b > a for a, b in zip(host, host[1:], strict=False))


def test_all_to_all_at_nccl_share_of_nvlink_by_hand() -> None:
    # 16 tokens per GPU, EP 4 on B200: 64 tokens x top-2 over 8 experts = 16 rows per
    # expert, 2 experts per rank -> a 32 x 64 x 2 B = 4096 B buffer, 3/4 of it sent to the
    # other 3 ranks = 3072 B. Training goes through NCCL: 900 GB/s per direction x 40.1/50
    # (NCCL's sm100 figure per NVLink 5 link, src/graph/topo.h) = 721.8 GB/s -> 4.2560 ns,
    # plus 3 steps x 1 us of latency.
    # Serving engines keep the line rate: 3072 B / 900 GB/s = 3.4133 ns.
    def a2a(phase: str, **kw: int) -> tuple[float, float, float]:
        df = rl.transformer.estimate(TINY, phase, hardware="B200", seq_len=16, ep=4,
                                     **kw).to_pandas()
        row = df[df.op == "dispatch all_to_all"].iloc[0]
        return float(row["bytes"]), float(row["memory_s"]), float(row["overhead_s"])

    nbytes, mem, lat = a2a("train", micro_batch=1, dp=4)
    assert nbytes == 3072.0
    assert mem == pytest.approx(3072 / 721.8e9, rel=1e-12)
    assert lat == pytest.approx(3e-6, rel=1e-12)
    nbytes, mem, _ = a2a("prefill")
    assert nbytes == 3072.0 and mem == pytest.approx(3072 / 900e9, rel=1e-12)


def test_expert_gemms_at_the_settled_clock_by_hand() -> None:
    # A training step's expert GEMMs (TE GroupedLinear: one cuBLAS GEMM per local expert)
    # run at the power limiter's settled clock like its dense GEMMs. G equal GEMMs of total
    # compute C priced alone take sustained_compute_s(C, f, G·tau) in the step (the formula
    # is homogeneous of degree one in (compute, tau)).
    from roofline import _core
    from roofline.transformer.pricing import evaluate

    _, _, ceff = resolve("GB200", "default")
    f, tau = float(ceff.gemm.throttle_fraction), float(ceff.gemm.throttle_time_s)
    assert 0.0 < f < 1.0
    c = 3e-5
    assert float(_core.sustained_compute_s(8 * c, f, 8 * tau)) == pytest.approx(
        8 * float(_core.sustained_compute_s(c, f, tau)), rel=1e-12)
    ops = Program(train=True, recipe=None, sustained=True)  # a training step
    ops.grouped_linear(0, "experts gate_up", (4096,) * 8, 2048, 1536)
    cols = evaluate(ops, rl.hardware("GB200"), "default", None, None, 0.0)
    alone = rl.grouped_gemm(None, 2048, 1536, dtype="bf16", hardware="GB200",
                            counts=np.full(8, 4096), layout="looped")
    want = float(_core.sustained_compute_s(float(alone.compute_s), f, 8 * tau))
    assert cols["compute_s"][0] == pytest.approx(want, rel=1e-9)
    # short GEMMs run alone near full clock: in the step they take close to 1/f longer
    assert 1.0 < cols["compute_s"][0] / float(alone.compute_s) <= 1.0 / f
    assert cols["time_s"][0] > float(alone.time_s)
    # serving (no training step) keeps the kernels as run alone
    serve = Program(train=False, recipe=None)
    serve.grouped_linear(0, "experts gate_up", (4096,) * 8, 2048, 1536)
    one = evaluate(serve, rl.hardware("GB200"), "default", None, None, 0.0)
    kernel = rl.grouped_gemm(None, 2048, 1536, dtype="bf16", hardware="GB200",
                             counts=np.full(8, 4096), layout="contiguous")
    assert one["time_s"][0] == pytest.approx(float(kernel.time_s), rel=1e-12)


def test_expert_group_wider_than_a_node_splits_its_all_to_all_over_both_links() -> None:
    """EP16 on 8-GPU nodes: 7/16 of each all-to-all crosses NVLink, 8/16 the NIC, at once."""
    from roofline.transformer import config, estimate

    cfg = config("Qwen3-30B-A3B")

    def a2a(**kw: float) -> dict[str, float]:
        e = estimate(cfg, "train", hardware="B200", seq_len=1024, micro_batch=1, dp=16, ep=16,
                     **kw)
        i = [n for _, n, _ in e.rows].index("dispatch all_to_all")
        return {k: float(e.columns[k][i]) for k in ("memory_s", "overhead_s", "bytes")}

    one_node = a2a()
    fast_nic = a2a(gpus_per_node=8, network_bytes_per_s=1e15)
    # NVLink carries (r-1)/p of the buffer instead of (p-1)/p: 7/15 of the one-domain transfer
    assert fast_nic["memory_s"] == pytest.approx(one_node["memory_s"] * 7 / 15)
    assert fast_nic["overhead_s"] == pytest.approx(one_node["overhead_s"])  # p-1 steps each
    assert fast_nic["bytes"] == pytest.approx(one_node["bytes"])  # the same bytes leave
    # a slow NIC sets the time with its 8/16 share: (8/15 of the one-domain bytes) over the
    # 0.96 of its 1 GB/s line rate NCCL carries (training.NCCL_NIC_FRACTION)
    slow_nic = a2a(gpus_per_node=8, network_bytes_per_s=1e9)
    assert slow_nic["memory_s"] == pytest.approx(one_node["bytes"] * 8 / 15 / (0.96 * 1e9))


def test_te_grouped_linear_python_calls_per_expert() -> None:
    """TE 2.9's _GroupedLinear: per local expert, 10 Python calls without a kernel before a
    quantized forward GEMM (two set_usage, get_weight_workspace, the input's and the weight's
    update_usage, four tensors saved, the main_grad lambda), 6 in bf16, 6 before a quantized
    dgrad GEMM (four restored tensors, the lambda, the weight's update_usage); around the
    wgrad GEMM its weight's autograd node, DDP hook and dummy gradient and clear_tensor_data's
    .data resets of the saved input (2 quantized, 1 bf16)."""
    from roofline.transformer.moe_sync import TE_GROUPED_PY_CALLS, _row_calls

    view, gemm = 0, 2  # HOST_CLASSES order: view, kernel, gemm, attention, module, backward
    # each grouped call's first GEMM also carries its stream / event calls: 8 GEMMs over 4
    # streams, 1 + 3 x 4 = 13 views (te_grouped_call_views)
    for lowp, fwd_views, bwd_views, clear in ((True, 10.0, 6.0, 2.0), (False, 6.0, 6.0, 1.0)):
        ops = _layer(16, 1, lowp=lowp)
        names = [r[1] for r in ops.rows]
        f = _row_calls(ops, names.index("experts gate_up"), 8, backward=False)
        assert np.all(f[:, gemm] == 1.0) and np.all(f[1:, view] == fwd_views)
        assert f[0, view] == fwd_views + 13
        b = _row_calls(ops, names.index("experts gate_up bwd"), 16, backward=True)
        assert np.all(b[1:8, view] == bwd_views) and b[0, view] == bwd_views + 13  # dgrad
        # wgrad: the dummy gradient and the cleared input (+ the call's 13 stream / event calls)
        assert np.all(b[9:, view] == 1.0 + clear) and b[8, view] == 14 + clear
    assert TE_GROUPED_PY_CALLS[(False, True)] == 10.0


def test_expert_wgrad_accumulates_into_fp32_main_grad():
    """Megatron-Core's gradient_accumulation_fusion: TE's GroupedLinear adds each expert's
    weight gradient into its fp32 main_grad (read and written: k·n·8 bytes per expert)."""
    est = rl.transformer.estimate("Qwen3-30B-A3B", "train", seq_len=4096, micro_batch=1,
                                  hardware="B200", ep=8, dp=8, optimizer_update=False)
    i = next(j for j, (_, name, _) in enumerate(est.rows) if name == "experts gate_up bwd")
    cfg = est.config
    local = cfg.num_experts // 8
    rows = 4096 * cfg.experts_per_token * 8 // cfg.num_experts  # uniform routing
    counts = [rows] * local
    k, n = cfg.hidden_size, 2 * cfg.moe_intermediate_size
    dgrad = rl.grouped_gemm(None, n, k, hardware="B200", counts=counts, layout="looped")
    wgrad = rl.grouped_gemm(None, k, n, hardware="B200", counts=counts, layout="looped_wgrad",
                            out_dtype="fp32", accumulate=True)
    assert est.columns["bytes"][i] == pytest.approx(dgrad.bytes + wgrad.bytes, rel=1e-12)
    assert wgrad.bytes - local * k * n * 8 == local * (k * rows + rows * n) * 2


def test_expert_fc2_bias_added_outside_the_gemm_in_fp32():
    """Megatron-Core's TEGroupedMLP (skip_bias_add fc2) adds each expert's output bias as
    ``t + b * p`` in fp32, then cat and cast: 28 bytes per output element forward (4 + 10 +
    8 + 6), 20 backward (6 + 6 + 4 + 4); 2 kernels per local expert + 2."""
    gpt = rl.transformer.config("GPT-OSS-120B")
    model = gpt.replace(num_layers=2, layer_types=tuple(gpt.layer_types[:2]))
    est = rl.transformer.estimate(model, "train", seq_len=4096, micro_batch=1,
                                  hardware="B200", ep=8, dp=8, optimizer_update=False)
    names = [name for _, name, _ in est.rows]
    fwd = names.index("experts fc2 bias (unfused)")
    bwd = names.index("experts fc2 bias (unfused) bwd")
    local = model.num_experts // 8
    rows = 4096 * model.experts_per_token * 8 // model.num_experts * local  # uniform routing
    out = rows * model.hidden_size
    assert est.columns["bytes"][fwd] == pytest.approx(28 * out, rel=1e-12)
    assert est.columns["bytes"][bwd] == pytest.approx(20 * out, rel=1e-12)
    # the row launches 2 kernels per local expert plus the cat and the cast
    ops = Program(train=True, recipe=None)
    expert_fc2_bias(ops, 0, (100,) * local, 64)
    assert len(ops.rows[0][3]) == 2 * local + 2 and len(ops.rows[1][3]) == 2 + 2 * local
    # with expert biases Megatron refuses the fused bias-dropout-add: the output projection's
    # bias is one more pass (bf16 read + write per element), its gradient a reduction
    t_hid = 4096 * model.hidden_size
    bda = names.index("attn_proj bias (unfused bda)")
    assert est.columns["bytes"][bda] == pytest.approx(4 * t_hid, rel=1e-12)
    assert est.columns["bytes"][names.index("attn_proj bias (unfused bda) bwd")] == (
        pytest.approx(2 * t_hid, rel=1e-12))
    # a model without expert biases runs neither row
    qwen = rl.transformer.estimate("Qwen3-30B-A3B", "train", seq_len=4096, micro_batch=1,
                                   hardware="B200", ep=8, dp=8, optimizer_update=False)
    assert not any("bias" in name for _, name, _ in qwen.rows)


def test_gpt_oss_unfused_clamp_and_yarn_rope_by_hand() -> None:
    """What Megatron-Core runs unfused for GPT-OSS (hand-derived bytes). The clamped
    quick-GEGLU's eager clamps: forward two half clamps (read + write a half each) and the cat
    (2e read + 2e write): 16 bytes per element e of a half; backward the compare / and
    kernels (bf16 in, bool out: 3 bytes each, four of them), two ``where`` (bool + bf16 in,
    bf16 out: 5 bytes), the chunk's cat (8 bytes) and two one-element fills: 30 bytes + 4.
    YaRN's unfused RoPE per tensor of E elements: forward 24·E bytes (t·cos 4, the negated
    half 2, the rotate cat 4, ·sin 4, the sum 6, the final cat 4) plus six kernels over the
    fp32 cos / sin table of f = seq x head_dim (cos, ·mscale: 8 f each; the cast: 6 f);
    backward 28·E (grad·sin 4, the negation 2, the chunk's cat 4, grad·cos 4, the sum 6, the
    empty slice's zero gradient 2 and its sum 6)."""
    gpt = rl.transformer.config("GPT-OSS-120B")
    model = gpt.replace(num_layers=2, layer_types=tuple(gpt.layer_types[:2]))
    kw = dict(seq_len=4096, micro_batch=1, hardware="B200", ep=8, dp=8,
              optimizer_update=False)
    est = rl.transformer.estimate(model, "train", **kw)
    names = [name for _, name, _ in est.rows]
    by = dict(zip(names, est.columns["bytes"], strict=False))  # the first layer's rows
    rows = 4096 * model.experts_per_token * 8 // model.num_experts * (model.num_experts // 8)
    e = rows * model.moe_intermediate_size
    assert by["experts act clamp (unfused)"] == pytest.approx(16 * e, rel=1e-12)
    assert by["experts act clamp (unfused) bwd"] == pytest.approx(30 * e + 4, rel=1e-12)
    d = model.head_dim
    big = 4096 * (model.num_heads + model.num_kv_heads) * d
    assert by["rope (yarn, unfused)"] == pytest.approx(24 * big + 2 * 44 * 4096 * d,
                                                       rel=1e-12)
    assert by["rope (yarn, unfused) bwd"] == pytest.approx(28 * big, rel=1e-12)
    assert "rope" not in names
    # without the clamp and the YaRN factor: the fused rows (TE's RoPE, one activation)
    plain = rl.transformer.estimate(model.replace(glu_limit=0.0, rope_mscale=1.0), "train",
                                    **kw)
    plain_names = [name for _, name, _ in plain.rows]
    assert "rope" in plain_names and not any("unfused)" in n and ("clamp" in n or "yarn" in n)
                                             for n in plain_names)
    assert plain.step.time_s < est.step.time_s
    # the offset's blocking host-to-device copy: one more synchronised forward segment per
    # MoE layer, so the host time the step exposes grows
    assert est.step.host_s > plain.step.host_s
    # moe_act recompute runs the clamps again with the activation
    rec = rl.transformer.estimate(model, "train", recompute="modules:moe_act", **kw)
    extra = rec.step.recompute_s - rl.transformer.estimate(
        model.replace(glu_limit=0.0), "train", recompute="modules:moe_act", **kw
    ).step.recompute_s
    assert extra > 0


def test_router_and_preprocess_launches_by_hand() -> None:
    """Megatron-Core's extra router / all-to-all preprocess launches per MoE layer, counted
    from router.py / token_dispatcher.py (moe_host's docstring), and what CUDA graphs remove."""
    from roofline.ops.host import HOST_CLASSES
    from roofline.transformer.moe_host import graph_scopes, moe_extra_launches

    view, kern, bwd, module = (HOST_CLASSES.index(k) for k in
                               ("view", "kernel", "backward", "module"))
    none: frozenset[str] = frozenset()
    r = moe_extra_launches("router", 8, none)
    assert r.shape[0] == 2 and r[:, kern].sum() == 2 and r[:, view].sum() == 1
    # EP 8: sum, long, input-split sum, the counts' all-gather, slice copy, three sums = 8
    # kernels; reshape, Function + empty, reshape / transpose / slice, index, view = 8 views
    p = moe_extra_launches("preprocess", 8, none)
    assert p.shape[0] == 8 and p[:, kern].sum() == 8 and p[:, view].sum() == 8
    assert moe_extra_launches("preprocess", 1, none).shape[0] == 2
    # copies: tokens_per_expert + input / output / TP-output splits (each .numpy()),
    # wait_stream + record_event + 4 record_stream
    d = moe_extra_launches("d2h", 8, none)
    assert d[0, kern] == 4 and d[0, view] == 2 + 4 + 3
    b = moe_extra_launches("router bwd", 8, none)
    assert b[:, kern].sum() == 4 and b[:, bwd].sum() == 1 and b[:, module].sum() == 0
    # graphed router / preprocess: their kernels launch without host calls; copies stay eager
    g = graph_scopes("t", ["moe_router", "moe_preprocess"])
    for stage in ("router", "preprocess", "router bwd"):
        assert moe_extra_launches(stage, 8, g).sum() == 0
    assert moe_extra_launches("d2h", 8, g)[0, kern] == 4
    with pytest.raises(ValueError, match="cuda_graph_scope"):
        graph_scopes("t", ["mlp"])
    with pytest.raises(TypeError, match="cuda_graph_scope"):
        graph_scopes("t", "moe_router")
    with pytest.raises(ValueError, match="stage"):
        moe_extra_launches("combine", 8, none)


def test_graphed_router_exposes_less_host_time() -> None:
    ops = _layer(16, 4)
    t = np.full(len(ops.rows), 2e-5)
    hw = rl.hardware("B200")
    eager = sync_exposed_s(ops, t, [("moe", [0, 1])], hw, "default")
    router = sync_exposed_s(ops, t, [("moe", [0, 1])], hw, "default", frozenset({"moe_router"}))
    both = sync_exposed_s(ops, t, [("moe", [0, 1])], hw, "default",
                          frozenset({"moe_router", "moe_preprocess"}))
    assert eager > router > both > 0.0


def test_training_router_is_not_quantized() -> None:
    # Megatron-Core's gating GEMM (router_gating_linear) runs outside fp8_autocast's modules:
    # under a low-precision recipe it stays a bf16 GEMM with its dgrad + wgrad (2 GEMMs, each
    # an AccumulateGrad + DDP hook after the wgrad), no quantize kernels; serving keeps the
    # recipe's router
    names = [r[1] for r in _layer(16, 4, lowp=True).rows]
    assert "router" in names and "router bwd" in names
    assert "router (fwd+bwd)" not in names
    serve = [r[2] for r in _layer(16, 4, lowp=True, train=False).rows if r[1] == "router"]
    assert serve == ["linear"]


@pytest.mark.parametrize(("model", "fwd", "bwd"), [
    # GQA + qk-norm: TransformerLayer, SelfAttention, TELayerNormColumnParallelLinear (3),
    # q / k TENorm (2), core attention and TE's FusedAttention (2), linear_proj, pre-MLP
    # TENorm + MoELayer (2), router, TEGroupedMLP + fc1 (2), fc2 = 14; backward TE Functions:
    # qkv, q / k norms, core attention, proj, pre-MLP norm, fc1, fc2 = 8
    ("Qwen3-30B-A3B", 14, 8),
    # MLA: 3 + q / kv down (2) + q / kv up (2) + core + fused attention (2) + proj + 2 +
    # router + 3 + shared MLP + fc1 (2) + fc2 = 19; backward: input norm + down projections
    # (3), ups (2), core attention, proj, pre-MLP norm, fc1, fc2, shared fc1, fc2 = 12
    ("DeepSeek-V3", 19, 12),
])
def test_megatron_module_calls_per_moe_layer(model: str, fwd: int, bwd: int) -> None:
    from roofline.transformer.moe_host import MCORE_BACKWARD_FUNCTIONS, MCORE_FORWARD_MODULES

    est = rl.transformer.estimate(rl.transformer.config(model), "train", hardware="B200",
                                  seq_len=4096, micro_batch=1, ep=8, zero=1)
    g = [name for name, _ in est.groups].index("moe")
    names = [n for gi, n, _ in est.rows if gi == g]
    assert sum(MCORE_FORWARD_MODULES.get(n, 0) for n in names) == fwd
    assert sum(MCORE_BACKWARD_FUNCTIONS.get(n.removesuffix(" bwd"), 0) for n in names
               if n.endswith(" bwd")) == bwd


def test_graphed_attention_exposes_less_host_time() -> None:
    cfg = rl.transformer.config("Qwen3-30B-A3B")
    kw = dict(hardware="B200", seq_len=4096, micro_batch=1, ep=8, zero=1, gpus_per_node=8)
    host = [rl.transformer.estimate(cfg, "train", cuda_graph_scope=s, **kw).step.host_s
            for s in (None, ["moe_router", "moe_preprocess"],
                      ["attn", "moe_router", "moe_preprocess"])]
    assert host[0] > host[1] > host[2] > 0.0
    with pytest.raises(ValueError, match="cuda_graph_scope"):
        rl.transformer.estimate(cfg, "prefill", seq_len=128, cuda_graph_scope=["attn"],
                                hardware="B200")


def test_probs_all_to_all_by_hand() -> None:
    # Megatron-Core's all-to-all dispatcher sends the permuted routing probabilities in a
    # second all_to_all (fp32): 16 tokens x top-2 = 32 rows sent, 32 received (EP 4) ->
    # 32 x 4 B = 128 B, forward and backward; serving engines have no such call
    comms = _comms(_layer(16, 4))
    assert comms["dispatch probs all_to_all"] == ("all_to_all", 128.0, 4)
    assert comms["dispatch probs all_to_all bwd"] == ("all_to_all", 128.0, 4)
    assert "dispatch probs all_to_all" not in _comms(_layer(16, 4, train=False))
    assert "dispatch probs all_to_all" not in _comms(_layer(16, 1))


def test_load_balancing_and_expert_bias_launches_by_hand() -> None:
    """Megatron-Core's fused aux losses and expert bias (moe_host's docstring): aux_loss 6
    kernels + 5 views forward, 5 kernels after 3 backward nodes; seq_aux_loss one more kernel
    each way (and a node); the expert bias 2 forward kernels; none inside a router graph."""
    from roofline.ops.host import HOST_CLASSES
    from roofline.transformer.moe_host import moe_extra_launches

    view, kern, bwd = (HOST_CLASSES.index(k) for k in ("view", "kernel", "backward"))
    none: frozenset[str] = frozenset()
    base_f = moe_extra_launches("router", 8, none)
    base_b = moe_extra_launches("router bwd", 8, none)
    f = moe_extra_launches("router", 8, none, "aux_loss")
    assert f.shape[0] - base_f.shape[0] == 6
    assert f[:, view].sum() - base_f[:, view].sum() == 5
    b = moe_extra_launches("router bwd", 8, none, "aux_loss")
    assert b.shape[0] - base_b.shape[0] == 5 and b[:, bwd].sum() - base_b[:, bwd].sum() == 3
    s = moe_extra_launches("router", 8, none, "seq_aux_loss", True)
    assert s.shape[0] - base_f.shape[0] == 6 + 1 + 2
    sb = moe_extra_launches("router bwd", 8, none, "seq_aux_loss", True)
    assert sb.shape[0] - base_b.shape[0] == 6 and sb[:, bwd].sum() - base_b[:, bwd].sum() == 4
    assert s[:, kern].sum() == s.shape[0]  # one launch call per extra kernel
    g = frozenset({"moe_router"})
    assert moe_extra_launches("router", 8, g, "seq_aux_loss", True).sum() == 0


def test_load_balancing_arguments_checked() -> None:
    cfg = rl.transformer.config("Qwen3-30B-A3B")
    kw = dict(hardware="B200", seq_len=4096, micro_batch=1, ep=8, zero=1, gpus_per_node=8)
    with pytest.raises(ValueError, match="moe_load_balancing"):
        rl.transformer.estimate(cfg, "train", moe_load_balancing="z_loss", **kw)
    with pytest.raises(TypeError, match="moe_expert_bias"):
        rl.transformer.estimate(cfg, "train", moe_expert_bias="yes", **kw)
    with pytest.raises(ValueError, match="moe_load_balancing"):
        rl.transformer.estimate(cfg, "prefill", seq_len=128, moe_load_balancing="aux_loss",
                                hardware="B200")
    eager = [rl.transformer.estimate(cfg, "train", moe_load_balancing=b, **kw).step.host_s
             for b in ("none", "aux_loss", "seq_aux_loss")]
    assert eager[0] < eager[1] < eager[2]


def test_module_calls_reach_low_precision_linears() -> None:
    """A low-precision linear is one ``X (fwd+bwd)`` row launched in both passes: its
    Megatron-Core module forward and TE Function backward are charged in each pass, as for
    the bf16 ``X`` / ``X bwd`` rows (MCORE_FORWARD_MODULES / MCORE_BACKWARD_FUNCTIONS)."""
    from roofline.transformer.moe_host import (
        MCORE_BACKWARD_FUNCTIONS,
        MCORE_FORWARD_MODULES,
        graphed_calls,
    )

    module = 4  # HOST_CLASSES: view, kernel, gemm, attention, module, backward
    for name in ("o_proj", "q_a+kv_a_proj", "shared gate_up"):
        ops = Program(train=True, recipe="mxfp8_te")
        ops.linear(0, name, 64, 64, 64)
        assert ops.rows[0][1] == f"{name} (fwd+bwd)"
        zero = np.zeros((1, 6))
        fwd = graphed_calls(ops, 0, zero, False, frozenset())
        bwd = graphed_calls(ops, 0, zero, True, frozenset())
        assert fwd[0, module] == MCORE_FORWARD_MODULES[name] > 0
        assert bwd[0, module] == MCORE_BACKWARD_FUNCTIONS[name] > 0


def test_te_grouped_call_streams_and_swizzles_by_hand() -> None:
    """TE 2.9's grouped GEMM call: 1 + 3 min(4, n) stream / event calls around its n GEMMs
    (multi_stream_cublas_gemm) and, under MXFP8 only, one scale swizzle launch for the A
    operands and one for the B operands per 64 tensors (multi_tensor_swizzle_scaling_factors)."""
    from roofline.transformer.moe_sync import _launched, te_grouped_call_views, te_swizzle_kernels

    assert [te_grouped_call_views(n) for n in (1, 2, 4, 16, 32)] == [4, 7, 13, 13, 13]
    assert te_swizzle_kernels(16, "mxfp8_te") == 2
    assert te_swizzle_kernels(64, "mxfp8_te") == 2 and te_swizzle_kernels(65, "mxfp8_te") == 4
    assert te_swizzle_kernels(16, "tensorwise_te") == 0 and te_swizzle_kernels(16, None) == 0
    # one TINY MoE layer, 8 local experts, under each recipe: forward 2 grouped calls, backward
    # 4 (dgrad and wgrad of both linears); the swizzles are zero-time kernel calls
    kernel = 1  # HOST_CLASSES: view, kernel, gemm, attention, module, backward
    for recipe, fwd_sw, bwd_sw in (("mxfp8_te", 4, 8), ("tensorwise_te", 0, 0)):
        ops = Program(train=True, recipe=recipe)
        moe_mlp(ops, 0, TINY, 16, 1, 1, 2.0, True)
        zero = np.zeros(len(ops.rows))
        counts = []
        for backward in (False, True):
            rows = [i for i, r in enumerate(ops.rows) if "experts" in r[1] and "quantize" not in
                    r[1] and "act" not in r[1] and "padding" not in r[1]
                    and r[1].endswith(" bwd") == backward]
            t, c = _launched(ops, rows, zero, 0, backward)
            gemms = 8 * len(rows) * (2 if backward else 1)
            counts.append(len(t) - gemms)
            assert c[:, kernel].sum() == len(t) - gemms  # every extra launch: a kernel call
        assert counts == [fwd_sw, bwd_sw]


def test_fp8_padding_copies_by_hand() -> None:
    """TEGroupedMLP under a recipe pads each expert's rows (TE's Fp8Padding: one copy of the
    hidden states, one of the fp32 probabilities) and unpads the output (Fp8Unpadding); the
    backward runs the opposite copies. TINY, 16 tokens, top-k rows, no expert parallelism:
    every row passes once, read once and written once, in 2-byte elements."""
    for recipe in ("mxfp8_te", "tensorwise_te", None):
        ops = Program(train=True, recipe=recipe)
        moe_mlp(ops, 0, TINY, 16, 1, 1, 2.0, recipe is not None)
        rows = 16 * TINY.experts_per_token
        hid = TINY.hidden_size
        found = {r[1]: [ops.elts[idx] for _, idx in r[3]] for r in ops.rows
                 if "padding" in r[1]}
        if recipe is None:
            assert found == {}
            continue
        pad = [(rows * hid, 1.0, 1.0), (2.0 * rows, 1.0, 1.0)]
        assert found == {"experts fp8 padding": pad, "experts fp8 padding bwd": pad,
                         "experts fp8 unpadding": [(rows * hid, 1.0, 1.0)],
                         "experts fp8 unpadding bwd": [(rows * hid, 1.0, 1.0)]}


def test_experts_quantize_per_expert_widths() -> None:
    """Under a recipe the grouped linears' quantize row holds one per-expert quantize part per
    width: the forward the inputs of fc1 (hidden) and fc2 (expert width), the backward the
    output gradients of fc2 (hidden) and fc1 (2 x width when gated)."""
    ops = Program(train=True, recipe="mxfp8_te")
    moe_mlp(ops, 0, TINY, 16, 1, 1, 2.0, True)
    rows = {r[1]: [ops.quant[idx] for kind, idx in r[3] if kind == "quant"] for r in ops.rows
            if r[1].startswith("experts quantize")}
    counts = rows["experts quantize"][0][0]
    assert sum(counts) == 16 * TINY.experts_per_token
    width, hid = TINY.moe_intermediate_size, TINY.hidden_size
    mats = 2 if TINY.mlp_gated else 1
    assert rows == {"experts quantize": [(counts, hid), (counts, width)],
                    "experts quantize bwd": [(counts, hid), (counts, mats * width)]}


def test_ddp_forward_pre_hook_per_expert_weight_by_hand() -> None:
    """Megatron's distributed optimizer with overlap_param_gather runs a forward pre-hook on
    every module that loops over its parameters: one view call per expert weight of each
    grouped linear, forward only (TINY, 8 local experts, 2 layers: 2 x 2 x 8 = 32 views)."""
    from roofline.transformer.moe_sync import moe_host_terms

    ops = _layer(16, 1)
    zero = np.zeros(len(ops.rows))
    hw = rl.hardware("B200")
    t = resolve("B200", "default")[2].host
    groups = [("moe", [0, 1])]
    off = sync_exposed_s(ops, zero, groups, hw, "default")
    on = sync_exposed_s(ops, zero, groups, hw, "default", param_hooks=True)
    assert on - off == pytest.approx(32 * t.op_view_launches * t.eager_launch_s, rel=1e-9)
    terms = moe_host_terms(ops, zero, groups, hw, "default")
    assert terms["host_s"] == pytest.approx(off, rel=1e-12)
    assert terms["hook_host_s"] == pytest.approx(on - off, rel=1e-12)
    # through estimate: the step adds it only with overlap_param_gather and ZeRO 1 / 2
    cfg = rl.transformer.config("Qwen3-30B-A3B")
    kw = dict(hardware="B200", seq_len=4096, micro_batch=1, ep=8, gpus_per_node=8,
              linear_recipe="mxfp8_te")
    host = {(z, g): rl.transformer.estimate(cfg, "train", zero=z, overlap_param_gather=g,
                                            **kw).step.host_s
            for z, g in ((1, True), (1, False), (0, True))}
    assert host[(1, True)] > host[(1, False)] == pytest.approx(host[(0, True)], rel=1e-12)

def test_compiled_activation_and_padding_calls() -> None:
    """The experts' activation is a torch.compile'd function entered once per pass
    (MCORE_COMPILED_CALLS); under a recipe TEGroupedMLP calls Fp8Padding twice and
    Fp8Unpadding once (TE_PADDING_MODULES), charged before the first grouped GEMM."""
    from roofline.transformer.moe_host import (
        MCORE_COMPILED_CALLS,
        MCORE_FORWARD_MODULES,
        TE_PADDING_MODULES,
        graphed_calls,
    )

    module = 4
    assert TE_PADDING_MODULES == 3 and MCORE_COMPILED_CALLS["experts act"] == 1
    for lowp in (True, False):
        ops = _layer(16, 1, lowp=lowp)
        names = [r[1] for r in ops.rows]
        zero = np.zeros((1, 6))
        up = graphed_calls(ops, names.index("experts gate_up"), zero, False, frozenset())
        assert up[0, module] == MCORE_FORWARD_MODULES["experts gate_up"] + 3 * lowp
        for name, backward in (("experts act", False), ("experts act bwd", True)):
            act = graphed_calls(ops, names.index(name), zero, backward, frozenset())
            assert act[0, module] == 1.0


def test_norm_and_rope_launches_and_fusers_by_hand() -> None:
    """Megatron-Core + TE 2.9: the q and k norms are two TENorm calls and RoPE two fused
    calls per pass; each RMSNorm backward adds its weight gradient's finalize kernel
    (MCORE_ROW_KERNELS). TENorm is TE's fusible-op RMSNorm, whose per-call OperationFuser is
    priced as one more module call per norm and pass (TE_OPS_NORMS); MLA's input norm is a
    TENorm, GQA's is fused into the qkv LayerNormLinear."""
    from roofline.transformer.moe_host import (
        MCORE_BACKWARD_FUNCTIONS,
        MCORE_FORWARD_MODULES,
        TE_OPS_NORMS,
        graphed_calls,
    )

    module = 4
    want = {"qk_norm": (2, 4), "rope": (2, 2), "attn_norm": (1, 2), "mlp_norm": (1, 2),
            "q_a_norm": (1, 2), "router_other": (1, 1)}
    for attention in ("attention", "attention (MLA)"):
        ops = Program(train=True, recipe=None)
        for name in want:
            ops.elementwise(0, name, 1024)
        ops.elementwise(0, attention, 1024, kind="attention")
        names = [r[1] for r in ops.rows]
        for name, (fwd, bwd) in want.items():
            assert _row_kernels(ops, names.index(name), 0, False) == (fwd, 1.0), name
            assert _row_kernels(ops, names.index(name + " bwd"), 0, True) == (bwd, 1.0), name
        zero = np.zeros((1, 6))
        mla = attention == "attention (MLA)"
        for name in ("qk_norm", "mlp_norm", "attn_norm"):
            f = graphed_calls(ops, names.index(name), zero, False, frozenset())
            b = graphed_calls(ops, names.index(name + " bwd"), zero, True, frozenset())
            fuser = {"qk_norm": 2, "mlp_norm": 0, "attn_norm": int(mla)}[name]  # no router
            assert f[0, module] == MCORE_FORWARD_MODULES[name] + fuser, name
            assert b[0, module] == MCORE_BACKWARD_FUNCTIONS.get(name, 0) + fuser, name
    assert TE_OPS_NORMS == {"qk_norm": 2, "mlp_norm": 1, "final_norm": 1, "attn_norm": 1}
    # before an MoE layer (a router row) the pre-MLP norm is a TENorm too
    ops.linear(0, "router", 64, 64, 8)
    f = graphed_calls(ops, [r[1] for r in ops.rows].index("mlp_norm"), zero, False, frozenset())
    assert f[0, module] == MCORE_FORWARD_MODULES["mlp_norm"] + 1
