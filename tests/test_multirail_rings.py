"""Ring collectives across nodes leave each node through the NICs of the group's ranks there
(NCCL's multi-rail rings: ``rl.all_reduce(..., ranks_per_node=g, network_bytes_per_s=nic)``
runs at ``min(link, g·nic)`` per rank), and training prices its data-parallel groups so."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline import _core

GB = 1e9
NVLINK = 370 * GB  # NCCL's share of H100's NVLink per direction
NIC = 48 * GB  # NCCL over a 400 Gb/s ConnectX-7 (NCCL_NIC_FRACTION x 50 GB/s)


def ring(fn, nbytes, ranks, g, link=NVLINK, net=NIC, **kw):  # type: ignore[no-untyped-def]
    return fn(nbytes, ranks, link_bytes_per_s=link, ranks_per_node=g,
              network_bytes_per_s=net, **kw)


def test_one_rank_per_node_is_todays_per_nic_ring() -> None:
    # g = 1: every ring edge crosses a NIC, the ring at the NIC's rate (the old pricing)
    for fn in (rl.all_reduce, rl.all_gather, rl.reduce_scatter):
        got = ring(fn, 2**30, 16, 1)
        want = fn(2**30, 16, link_bytes_per_s=NIC)
        assert got.time_s == pytest.approx(want.time_s)
        assert got.bytes == want.bytes


def test_by_hand() -> None:
    # 1 GiB all-reduce over 64 ranks: each rank sends 2·63/64 GiB = 2,113,929,216 B in 126
    # steps of 1 us. g = 4 (a DP group of TP 2 on an 8-GPU node): 4 x 48 = 192 GB/s.
    e = ring(rl.all_reduce, 2**30, 64, 4)
    assert e.bytes == 2 * 63 / 64 * 2**30 == 2_113_929_216
    assert e.memory_s == pytest.approx(2_113_929_216 / 192e9)
    assert e.overhead_s == pytest.approx(126e-6)
    # g = 8 on a DGX H100: 8 x 48 = 384 GB/s > 370 GB/s, NVLink-bound: as one NVLink domain
    full = ring(rl.all_reduce, 2**30, 64, 8)
    assert full.memory_s == pytest.approx(2_113_929_216 / 370e9)
    assert full.time_s == pytest.approx(rl.all_reduce(2**30, 64, link_bytes_per_s=NVLINK).time_s)
    # DGX A100, 8 x HDR 200 Gb/s at 24 GB/s: 192 GB/s < 246 GB/s of NVLink (NVIDIA/nccl #812)
    a100 = ring(rl.reduce_scatter, 2**30, 32, 8, link=300 * GB * 370 / 450, net=24 * GB)
    assert a100.memory_s == pytest.approx(31 / 32 * 2**30 / 192e9)


def test_partial_last_node_sets_the_rate() -> None:
    # 12 ranks at 8 per node: the second node holds 4, whose 4 NICs carry every ring
    e = ring(rl.all_gather, 2**28, 12, 8)
    assert e.memory_s == pytest.approx(11 / 12 * 2**28 / (4 * NIC))
    # one node: the scale-up link whatever the NICs
    one = ring(rl.all_gather, 2**28, 8, 8, net=1.0)
    assert one.time_s == pytest.approx(rl.all_gather(2**28, 8, link_bytes_per_s=NVLINK).time_s)


def test_core_rate_is_min_of_link_and_nics() -> None:
    assert _core.spanning_collective_sweep(
        _core.Collective.all_reduce, _core.CollectiveAlgo.ring, np.array([1e9]),
        np.array([16.0]), np.array([2.0]), 370e9, 48e9, 0.0)[0][0] == pytest.approx(
        2 * 15 / 16 * 1e9 / 96e9)


def test_more_ranks_per_node_never_slower() -> None:
    g = np.array([1, 2, 4, 8, 16])
    t = ring(rl.all_reduce, 2**27, 128, g).time_s
    assert np.all(np.diff(t) <= 0)
    assert t[-1] == t[-2]  # NVLink-bound from g = 8 on
    # and a faster NIC never slows it
    nets = [ring(rl.reduce_scatter, 2**27, 64, 2, net=n).time_s for n in (12e9, 25e9, 50e9)]
    assert nets[0] >= nets[1] >= nets[2]


def test_tree_spans_at_the_same_rate() -> None:
    e = ring(rl.all_reduce, 2**30, 64, 2, algorithm="tree")
    assert e.memory_s == pytest.approx(2 * 63 / 64 * 2**30 / (2 * NIC))
    assert e.overhead_s == pytest.approx(12e-6)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="ranks_per_node"):
        ring(rl.all_reduce, 1024, 16, 0)
    with pytest.raises(ValueError, match="ranks_per_node"):
        ring(rl.all_gather, 1024, 16, 2.5)
    with pytest.raises(ValueError, match="network_bytes_per_s"):
        rl.all_reduce(1024, 16, link_bytes_per_s=NVLINK, ranks_per_node=8)
    with pytest.raises(ValueError, match="ranks_per_node"):
        rl.reduce_scatter(1024, 16, link_bytes_per_s=NVLINK, network_bytes_per_s=NIC)
    with pytest.raises(ValueError, match="network_bytes_per_s"):
        ring(rl.all_reduce, 1024, 16, 8, net=0.0)
    with pytest.raises(ValueError, match="algorithm='custom'"):
        ring(rl.all_reduce, 1024, 16, 8, algorithm="custom")


def _dp_comm(gpus_per_node: int, tp: int, dp: int, net: float = 50e9) -> float:
    """Data-parallel communication of a small ZeRO-3 step (no overlap: comm_s adds up)."""
    cfg = rl.transformer.TransformerConfig(
        name="t", hidden_size=2048, num_layers=4, num_heads=16, num_kv_heads=16,
        head_dim=128, intermediate_size=8192, vocab_size=32000)
    est = rl.transformer.estimate(
        cfg, seq_len=2048, phase="train", hardware="H100 SXM", tp=tp, dp=dp, zero=3,
        gpus_per_node=gpus_per_node, overlap=False, network_bytes_per_s=net)
    assert est.step is not None
    return est.step.comm_s


def test_training_dp_group_uses_its_ranks_nics() -> None:
    # A DP group spanning nodes is priced by NCCL's tuning model (algorithm="nccl": its
    # protocols' and inter-node steps' latencies), one node by the 1 us-per-step ring, so
    # compare spanning layouts with each other. TP 1: 8 DP ranks per node, 8 NICs (8 x 48 >
    # 370 GB/s): NVLink-bound, a faster NIC changes nothing; NCCL's latencies make it slower
    # than one 16-GPU domain, by less than 15 % here
    span, one = _dp_comm(8, 1, 16), _dp_comm(16, 1, 16)
    assert span == pytest.approx(_dp_comm(8, 1, 16, net=100e9), rel=1e-9)
    assert one < span < 1.15 * one
    # TP 2: 4 DP ranks per node, NIC-bound at 4 x 48 GB/s, unless each NIC carries 96 GB/s
    # (4 x 96 > 370); slower again on 25 GB/s NICs
    assert _dp_comm(8, 2, 8) > _dp_comm(8, 2, 8, net=100e9)
    assert _dp_comm(8, 2, 8, net=100e9) == pytest.approx(_dp_comm(8, 2, 8, net=200e9), rel=1e-9)
    assert _dp_comm(8, 2, 8, net=25e9) > _dp_comm(8, 2, 8)
    # TP 8: one DP rank per node, one NIC: NVLink's rate only from a 384 GB/s NIC on
    assert _dp_comm(8, 8, 2, net=400e9) == pytest.approx(_dp_comm(8, 8, 2, net=800e9), rel=1e-9)
    assert _dp_comm(8, 8, 2, net=200e9) > _dp_comm(8, 8, 2, net=400e9)
