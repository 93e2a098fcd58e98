"""Data-parallel and context-parallel communication as the runtimes schedule it: per-unit
FSDP / ZeRO collectives with one unit prefetched, ring context parallelism; hand-derived
schedules, properties and argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline import _core

T = rl.transformer
P8B = 8_030_261_248  # Llama-3-8B parameters
EMB = 128_256 * 4096  # its embedding (and, untied, its output layer)


def _pass(gather: list[float], compute: list[float], reduce: list[float]) -> float:
    return float(_core.overlapped_pass_s(np.array(gather, float), np.array(compute, float),
                                         np.array(reduce, float)))


def test_overlapped_pass_by_hand() -> None:
    # gathers 2, 1, 1; computes 0, 3, 3: AG0 ends at 2, unit 0 (no compute) done at 2; AG1
    # (issued when unit 0 starts) 2..3; unit 1 3..6; AG2 3..4 hidden; unit 2 6..9
    assert _pass([2, 1, 1], [0, 3, 3], [0, 0, 0]) == pytest.approx(9.0)
    # link-bound: gathers 2 each, computes 1: every unit waits for its gather: 3·2 + 1
    assert _pass([2, 2, 2], [1, 1, 1], [0, 0, 0]) == pytest.approx(7.0)
    # at most two units gathered: AG2 waits until unit 0 is done (6), not for the link (2)
    # AG0 0..1, unit 0 1..6, AG1 1..2, unit 1 6..11, AG2 6..7, unit 2 11..16
    assert _pass([1, 1, 1], [5, 5, 5], [0, 0, 0]) == pytest.approx(16.0)
    # reductions after each compute: unit 0 0..2 then its reduction 2..3 (hidden behind
    # unit 1, 2..4); the last reduction 4..5 is exposed
    assert _pass([0, 0], [2, 2], [1, 1]) == pytest.approx(5.0)
    # a reduction holds the link: the next gather waits for it (FIFO in issue order)
    # unit 0 0..1, its reduction 1..4; AG2 issued at 1, waits to 4, ends 5; unit 1 1..2;
    # unit 2 5..6
    assert _pass([0, 0, 1], [1, 1, 1], [3, 0, 0]) == pytest.approx(6.0)
    assert _pass([], [], []) == 0.0
    with pytest.raises(ValueError, match="one length"):
        _core.overlapped_pass_s(np.ones(2), np.ones(3), np.ones(2))


def test_overlapped_pass_properties() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 12))
        g, c, r = (rng.exponential(1.0, n) * (rng.random(n) < 0.8) for _ in range(3))
        wall = _pass(list(g), list(c), list(r))
        # never shorter than the compute or the link, never longer than running them in turn
        assert wall >= c.sum() - 1e-12
        assert wall >= g.sum() + r.sum() - 1e-12
        assert wall <= c.sum() + g.sum() + r.sum() + 1e-12
        # more link time never shortens the pass
        assert _pass(list(2 * g), list(c), list(r)) >= wall - 1e-12


def test_ring_exposed_by_hand() -> None:
    # cp = 4: three sends of 3 s, each behind a block of 4/4 = 1 s: 3·(3 - 1) = 6
    assert float(_core.ring_exposed_s(3.0, 4.0, 4.0)) == pytest.approx(6.0)
    # a block longer than the send hides it; one rank exchanges nothing
    assert float(_core.ring_exposed_s(1.0, 8.0, 2.0)) == 0.0
    assert float(_core.ring_exposed_s(5.0, 1.0, 1.0)) == 0.0



def _p2p(send: float, p: float, m: float, v: float, chunk: float, overlapped: bool) -> float:
    return float(_core.pipeline_p2p_s(send, p, m, v, chunk, overlapped))


def test_pipeline_p2p_by_hand() -> None:
    # blocking sends (1F1B, batch_p2p_comm): every send of the 2(v·m + p - 1) on the path
    assert _p2p(1.0, 4, 8, 1, 0.5, True) == pytest.approx(2 * (8 + 3))
    assert _p2p(1.0, 4, 8, 2, 0.5, False) == pytest.approx(2 * (16 + 3))
    # interleaved with overlap_p2p_comm: the fill and drain chains, 2(p-1) sends, plus what a
    # send takes beyond one chunk's forward, 2·v·m·(1 - 0.5)
    assert _p2p(1.0, 4, 8, 2, 0.5, True) == pytest.approx(6 + 16)
    # a chunk longer than its send hides the steady state entirely
    assert _p2p(1.0, 4, 8, 2, 3.0, True) == pytest.approx(6.0)
    # one stage sends nothing
    assert _p2p(1.0, 1, 8, 2, 0.5, True) == 0.0


def test_pipeline_p2p_properties() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        send, chunk = rng.exponential(1.0, 2)
        p, m, v = (float(rng.integers(2, 9)) for _ in range(3))
        over, block = _p2p(send, p, m, v, chunk, True), _p2p(send, p, m, v, chunk, False)
        # overlapping never exposes more than blocking; the fill/drain chain always stays
        assert 2 * (p - 1) * send - 1e-12 <= over <= block + 1e-12
        # a longer send never exposes less
        assert _p2p(2 * send, p, m, v, chunk, True) >= over - 1e-12


def test_interleaved_pipeline_hides_steady_state_sends() -> None:
    # Llama-3-8B on 16 H100s, PP4 across two nodes: the sends cross the network; with
    # interleaving (v = 4, NeMo's overlap_p2p_comm) only the fill / drain chains are exposed
    kw: dict[str, object] = dict(batch=1, seq_len=4096, hardware="H100 SXM", dp=4, pp=4,
                                 grad_accum=32, gpus_per_node=8)
    inter = T.estimate("Llama-3-8B", "train", virtual_stages=4, **kw).step
    plain = T.estimate("Llama-3-8B", "train", virtual_stages=1, **kw).step
    assert inter is not None and plain is not None
    send = plain.p2p_s / (2 * (32 + 3))  # one send, 1F1B
    assert inter.p2p_s == pytest.approx(2 * 3 * send, rel=1e-9)
    assert inter.p2p_s < plain.p2p_s

def _fsdp(**kw: object) -> rl.transformer.ModelEstimate:
    args: dict[str, object] = dict(batch=1, seq_len=2048, hardware="H100 SXM", dp=8, zero=3,
                                   latency_s=0.0, link_bytes_per_s=450e9)
    args.update(kw)
    return T.estimate("Llama-3-8B", "train", **args)


def test_fsdp_bytes_by_hand() -> None:
    share, bw = 7 / 8, 450e9  # ring all-gather / reduce-scatter over 8 ranks, no latency
    layer = (P8B - 2 * EMB) / 32
    # forward gathers every unit in bf16 (2P); the backward gathers again all but the last
    # layer and the head (torchtitan's policy); gradients reduce-scattered in fp32 (4P)
    regather = 2 * (P8B - layer - EMB)
    s = _fsdp().step
    assert s.comm_s == pytest.approx(share / bw * (2 * P8B + regather + 4 * P8B), rel=1e-6)
    bf16 = _fsdp(reduce_dtype="bf16").step
    assert bf16.comm_s == pytest.approx(share / bw * (2 * P8B + regather + 2 * P8B), rel=1e-6)
    kept = _fsdp(reshard_after_forward=False)
    assert kept.step.comm_s == pytest.approx(share / bw * (2 * P8B + 4 * P8B), rel=1e-6)
    # keeping the gathered weights costs memory: the whole unsharded model next to the shard
    assert kept.memory["weights_bytes"] == pytest.approx(2 * P8B / 8 + 2 * P8B)
    # grad_accum micro-batches each gather and reduce again
    assert _fsdp(grad_accum=3).step.comm_s == pytest.approx(3 * s.comm_s, rel=1e-9)


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_step_parts_sum_and_exposed_nonnegative(zero: int) -> None:
    for kw in ({}, {"network_bytes_per_s": 5e9, "gpus_per_node": 4},
               {"overlap": False}, {"pp": 2, "grad_accum": 4}):
        s = _fsdp(zero=zero, **kw).step
        assert s.exposed_comm_s >= 0 and s.exposed_comm_s <= s.comm_s + 1e-12
        assert s.time_s == pytest.approx(
            s.compute_s + s.bubble_s + s.p2p_s + s.exposed_comm_s + s.optimizer_s, rel=1e-12)
        assert s.time_s >= s.compute_s
    off = _fsdp(zero=zero, overlap=False).step
    assert off.exposed_comm_s == pytest.approx(off.comm_s, rel=1e-12)


def test_fsdp_exposure_grows_as_the_network_slows() -> None:
    prev = 0.0
    for bw in (400e9, 50e9, 10e9, 2e9):
        s = _fsdp(gpus_per_node=4, network_bytes_per_s=bw).step
        assert s.exposed_comm_s >= prev
        prev = s.exposed_comm_s
    # link-bound: at 2 GB/s the step is longer than its communication alone
    assert s.time_s >= s.comm_s


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_more_gpus_never_slower_per_token_when_comm_is_free(zero: int) -> None:
    free = dict(link_bytes_per_s=1e30, network_bytes_per_s=1e30, latency_s=0.0)
    one = T.estimate("Llama-3-8B", "train", batch=1, seq_len=2048, hardware="H100 SXM", **free)
    for dp in (2, 8, 64):
        many = T.estimate("Llama-3-8B", "train", batch=1, seq_len=2048, hardware="H100 SXM",
                          dp=dp, zero=zero, **free)
        assert many.step.tokens_per_s / many.step.gpus >= one.step.tokens_per_s * (1 - 1e-9)


def test_first_gather_and_last_reduction_stay_exposed() -> None:
    # compute-rich (8k tokens): every layer's collectives hide behind its neighbour's compute
    # but the ends of each pass: the forward waits for the embedding's gather and, the
    # embedding computing next to nothing, for layer 0's; the backward ends with layer 0's
    # reduce-scatter and the embedding's after it
    s = _fsdp(seq_len=8192).step
    layer = (P8B - 2 * EMB) / 32
    ends = 7 / 8 / 450e9 * (2 * EMB + 2 * layer + 4 * layer + 4 * EMB)
    # every other collective runs under a compute that outlasts it and holds 16 of the 132
    # SMs meanwhile (NCCL_COMM_CTAS): that compute loses 16/132 of the collective's length
    f = 16 / 132
    assert s.exposed_comm_s == pytest.approx(ends + f * (s.comm_s - ends), rel=1e-6)
    assert s.exposed_comm_s < 0.2 * s.comm_s


def test_cp_ring_hides_what_its_blocks_cover() -> None:
    kw = dict(batch=1, seq_len=16384, hardware="H100 SXM", cp=4, latency_s=0.0)
    ring = T.estimate("Llama-3-8B", "train", **kw)
    gather = T.estimate("Llama-3-8B", "train", cp_comm="all_gather", **kw)
    r, g = ring.to_pandas(), gather.to_pandas()
    rr = r[r["op"] == "cp ring kv"]
    gg = g[g["op"] == "cp all_gather kv"]
    # ring: cp-1 chunks of 1/cp of the sequence's K/V (2 heads·8 kv heads·128·2 B); torch's
    # all-gather moves as many chunks, each with one K/V head per query head (torchtitan's
    # repeat_kv before SDPA: 32 / 8 times wider; tests/test_torch_cp.py)
    kv = 16384 * 2 * 8 * 128 * 2
    assert float(rr["bytes"].iloc[0]) == pytest.approx(3 * kv / 4)
    assert float(gg["bytes"].iloc[0]) == pytest.approx(3 * kv / 4 * 32 / 8)
    assert ring.time_s < gather.time_s
    # a slow link: exposed = (cp-1)·(send - attention/cp) per call, forward and backward
    slow = T.estimate("Llama-3-8B", "train", link_bytes_per_s=1e9, **kw).to_pandas()
    att = slow[slow["op"] == "attention"]
    row = slow[slow["op"] == "cp ring kv"]
    a = float(att["time_s"].iloc[0])
    send = kv / 4 / 1e9
    assert float(row["time_s"].iloc[0]) == pytest.approx(3 * (send - a / 4), rel=1e-9)
    back = slow[slow["op"] == "cp ring kv bwd"]
    ab = float(slow[slow["op"] == "attention bwd"]["time_s"].iloc[0])
    assert float(back["time_s"].iloc[0]) == pytest.approx(3 * max(2 * send - ab / 4, 0.0),
                                                         rel=1e-9)


def test_new_arguments_are_checked() -> None:
    kw = dict(batch=1, seq_len=2048, hardware="H100 SXM", dp=8)
    with pytest.raises(ValueError, match="reduce_dtype must be one of .* got 'fp16'"):
        T.estimate("Llama-3-8B", "train", zero=3, reduce_dtype="fp16", **kw)
    with pytest.raises(ValueError, match="reduce_dtype applies to zero=3 .* zero=1"):
        T.estimate("Llama-3-8B", "train", zero=1, reduce_dtype="fp32", **kw)
    with pytest.raises(TypeError, match="reshard_after_forward must be a bool or None, got 1"):
        T.estimate("Llama-3-8B", "train", zero=3, reshard_after_forward=1, **kw)
    with pytest.raises(ValueError, match="reshard_after_forward applies to zero=3"):
        T.estimate("Llama-3-8B", "train", zero=0, reshard_after_forward=False, **kw)
    with pytest.raises(ValueError, match="cp_comm must be one of .* got 'ulysses'"):
        T.estimate("Llama-3-8B", "train", cp=2, cp_comm="ulysses", **kw)
    with pytest.raises(ValueError, match="cp_comm applies to phase='train' only"):
        T.estimate("Llama-3-8B", "prefill", seq_len=128, hardware="H100 SXM",
                   cp_comm="all_gather")
