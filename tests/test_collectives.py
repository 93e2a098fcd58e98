"""Alpha-beta collectives over the database's interconnect (per direction = half of it)."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline.ops.collectives import DEFAULT_LATENCY_S, link_bytes_per_s

MB = 2**20


def test_link_is_half_the_bidirectional_aggregate() -> None:
    hw = rl.hardware("H100 SXM")
    assert hw.interconnect_bytes_per_s == 900e9
    assert link_bytes_per_s(hw) == 450e9
    assert link_bytes_per_s(hw, bandwidth_fraction=0.8) == pytest.approx(360e9)


def test_ring_all_reduce_by_hand() -> None:
    # 64 MiB over 8 GPUs: sends 2·7/8·64 MiB = 117,440,512 bytes at 450 GB/s, 14 steps of 1 us
    e = rl.all_reduce(64 * MB, 8, hardware="H100 SXM")
    assert e.bytes == 2 * 7 / 8 * 64 * MB == 117_440_512
    assert e.memory_s == pytest.approx(117_440_512 / 450e9)
    assert e.overhead_s == pytest.approx(14 * DEFAULT_LATENCY_S)
    assert e.time_s == pytest.approx(e.memory_s + e.overhead_s)
    assert e.flops == 0


def test_tree_same_bytes_log_latency() -> None:
    ring = rl.all_reduce(4096, 64, hardware="H100 SXM")
    tree = rl.all_reduce(4096, 64, "tree", hardware="H100 SXM")
    assert tree.bytes == ring.bytes
    assert ring.overhead_s == pytest.approx(2 * 63 * 1e-6)
    assert tree.overhead_s == pytest.approx(2 * 6 * 1e-6)  # 2·log2(64)
    assert tree.time_s < ring.time_s


def test_nccl_ring_protocol_by_hand() -> None:
    """NCCL 2.18's tuning model (src/graph/tuning.cc @ v2.18.3-1): a 4-rank ring all-reduce
    over NVLink takes 2·3 = 6 steps; latency LL 6.6 + 6·0.6 = 10.2 us, LL128 14 + 6·1.9 =
    25.4 us, Simple 8.4 + 6·3.4 = 28.8 us; H100 at 370/450 of 450 GB/s: Simple's bus 370 GB/s,
    LL128 0.92·370 = 340.4 GB/s, LL min(370/4, 87.7) = 87.7 GB/s. NCCL runs the fastest."""
    kw = {"hardware": "H100 SXM", "bandwidth_fraction": 370 / 450, "algorithm": "nccl"}
    small = rl.all_reduce(16384, 4, **kw)  # sends 24,576 B: LL, 10.2 + 0.28 us
    assert small.bytes == 24_576
    assert small.overhead_s == pytest.approx(10.2e-6)
    assert small.time_s == pytest.approx(10.2e-6 + 24_576 / 87.7e9)
    mid = rl.all_reduce(2 * MB, 4, **kw)  # 3,145,728 B: LL128 34.6 < Simple 37.3 < LL 46.1 us
    assert mid.time_s == pytest.approx(25.4e-6 + 3_145_728 / 340.4e9)
    big = rl.all_reduce(32 * MB, 4, **kw)  # 50,331,648 B: Simple 164.8 < LL128 173.3 us
    assert big.time_s == pytest.approx(28.8e-6 + 50_331_648 / 370e9)
    assert big.memory_s == pytest.approx(50_331_648 / 370e9)
    # latency_s is NCCL's own: the argument is not used
    assert rl.all_reduce(2 * MB, 4, latency_s=0.0, **kw).time_s == pytest.approx(mid.time_s)
    # reduce-scatter: 3 steps; A100 (300 GB/s) at 370/450: LL at 246.7 / 3 = 82.2 GB/s
    rs = rl.reduce_scatter(8192, 4, hardware="A100 SXM 80GB", bandwidth_fraction=370 / 450,
                           algorithm="nccl")
    assert rs.time_s == pytest.approx(6.6e-6 + 3 * 0.6e-6 + 6144 / (300e9 * 370 / 450 / 3))
    # never faster than the plain ring at 1 us a step, nothing for one rank, monotone in bytes
    sizes = np.array([2**k for k in range(10, 31)])
    nccl = rl.all_reduce(sizes, 8, **kw).time_s
    assert np.all(nccl >= rl.all_reduce(sizes, 8, hardware="H100 SXM",
                                        bandwidth_fraction=370 / 450).time_s)
    assert np.all(np.diff(nccl) > 0)
    assert rl.all_reduce(MB, 1, **kw).time_s == 0
    with pytest.raises(ValueError, match="algorithm"):
        rl.all_reduce(MB, 4, algorithm="nvls", hardware="H100 SXM")


def test_custom_all_reduce_kernels_by_hand() -> None:
    """vLLM's custom all-reduce (v0.6.2 - v0.6.4): the one-stage kernel below 512 KiB at
    <= 4 ranks, below 256 KiB at <= 8, always at 2; each rank loads (p-1) copies of the
    buffer (one-stage) or 2(p-1)/p of it (two-stage), at 0.887 / 0.468 of the link after
    a 6.57 / 12.56 us fixed time. H200: 450 GB/s per direction."""
    link = 450e9
    one = rl.all_reduce(256 * 1024, 4, "custom", hardware="H200")
    assert one.bytes == 3 * 262_144
    assert one.overhead_s == pytest.approx(6.57e-6)
    assert one.time_s == pytest.approx(6.57e-6 + 3 * 262_144 / (0.887 * link))
    two = rl.all_reduce(512 * 1024, 4, "custom", hardware="H200")  # 512 KiB: not below
    assert two.bytes == 2 * 3 / 4 * 524_288
    assert two.time_s == pytest.approx(12.56e-6 + 786_432 / (0.468 * link))
    # the 405B at TP 8: 32 KiB a token, two-stage from 8 tokens (256 KiB)
    below = rl.all_reduce(7 * 32 * 1024, 8, "custom", hardware="H200")
    at = rl.all_reduce(8 * 32 * 1024, 8, "custom", hardware="H200")
    assert below.time_s == pytest.approx(6.57e-6 + 7 * 229_376 / (0.887 * link))
    assert at.time_s == pytest.approx(12.56e-6 + 2 * 7 / 8 * 262_144 / (0.468 * link))
    assert at.time_s > below.time_s  # the switch costs a barrier and a slower gather
    pair = rl.all_reduce(4 * MB, 2, "custom", hardware="H200")  # 2 ranks: always one-stage
    assert pair.time_s == pytest.approx(6.57e-6 + 4 * MB / (0.887 * link))
    assert rl.all_reduce(4 * MB, 1, "custom", hardware="H200").time_s == 0.0
    # the link rate scales the transfer, not the fixed time; latency_s is not used
    half = rl.all_reduce(512 * 1024, 4, "custom", link_bytes_per_s=225e9, latency_s=5e-6)
    assert half.time_s == pytest.approx(12.56e-6 + 786_432 / (0.468 * 225e9))


def test_custom_all_reduce_rises_with_bytes_within_each_kernel() -> None:
    for ranks, limit in ((4, 512 * 1024), (8, 256 * 1024)):
        small = np.arange(16, limit, 16 * 1024)
        large = np.arange(limit, 8 * MB, 64 * 1024)
        for sizes in (small, large):
            t = rl.all_reduce(sizes, ranks, "custom", hardware="H200").time_s
            assert np.all(np.diff(t) > 0)


def test_custom_algorithm_reduces_only() -> None:
    for fn in (rl.all_gather, rl.reduce_scatter):
        with pytest.raises(ValueError, match="algorithm.*custom"):
            fn(1024, 4, "custom", hardware="H200")


def test_gather_scatter_all_to_all_send() -> None:
    kw = {"hardware": "H100 SXM", "latency_s": 0.0}
    for fn in (rl.all_gather, rl.reduce_scatter, rl.all_to_all):
        e = fn(8 * MB, 4, **kw)
        assert e.bytes == 3 / 4 * 8 * MB  # (p-1)/p of the buffer
        assert e.time_s == pytest.approx(e.bytes / 450e9)
    s = rl.send_recv(8 * MB, **kw)
    assert s.bytes == 8 * MB
    assert rl.all_to_all(8 * MB, 4, hardware="H100 SXM").overhead_s == pytest.approx(3e-6)


def test_one_rank_is_free_and_arrays_broadcast() -> None:
    assert rl.all_reduce(MB, 1, hardware="H100 SXM").time_s == 0
    e = rl.all_reduce(np.array([MB, 16 * MB, 256 * MB]), np.array([[2], [8]]),
                      hardware="H100 SXM")
    assert e.shape == (2, 3)
    assert np.all(np.diff(e.time_s, axis=1) > 0)


def test_overrides() -> None:
    e = rl.all_reduce(MB, 2, link_bytes_per_s=100e9, latency_s=5e-6)
    assert e.time_s == pytest.approx(MB / 100e9 + 2 * 5e-6)  # 2·1/2·MB bytes, 2 steps


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="ranks must be a positive integer, got 0"):
        rl.all_reduce(MB, 0, hardware="H100 SXM")
    with pytest.raises(ValueError, match="nbytes must be a positive integer, got -5"):
        rl.all_gather(-5, 2, hardware="H100 SXM")
    with pytest.raises(KeyError, match="unknown algorithm 'rng'"):
        rl.all_reduce(MB, 2, "rng", hardware="H100 SXM")
    with pytest.raises(ValueError, match="latency_s must be a non-negative"):
        rl.all_reduce(MB, 2, hardware="H100 SXM", latency_s=-1.0)
    with pytest.raises(ValueError, match="bandwidth_fraction must be in"):
        rl.all_reduce(MB, 2, hardware="H100 SXM", bandwidth_fraction=1.5)
    no_link = rl.hardware("H100 SXM").replace(interconnect_bytes_per_s=None)
    with pytest.raises(ValueError, match="no interconnect_bytes_per_s"):
        rl.all_reduce(MB, 2, hardware=no_link)


def test_all_to_all_spanning_nodes_by_hand() -> None:
    # 64 MB over 16 ranks, 8 per node: 7/16 of it (28 MB) to the node's other GPUs at 400 GB/s
    # (70 us) while 8/16 (32 MB) leave through the GPU's NIC at 50 GB/s (640 us), at once;
    # 15 steps of 1 us
    e = rl.all_to_all(64_000_000, 16, hardware="B200", link_bytes_per_s=400e9,
                      ranks_per_node=8, network_bytes_per_s=50e9)
    assert e.bytes == pytest.approx(28e6 + 32e6)
    assert e.memory_s == pytest.approx(640e-6)
    assert e.time_s == pytest.approx(640e-6 + 15e-6)
    # all 15/16 at the NIC rate (the group priced as one off-node link) is slower
    assert e.time_s < rl.all_to_all(64_000_000, 16, link_bytes_per_s=50e9).time_s
    # a group within one node is the plain all-to-all over the scale-up link
    inside = rl.all_to_all(64_000_000, 8, link_bytes_per_s=400e9, ranks_per_node=8,
                           network_bytes_per_s=50e9)
    assert inside.time_s == pytest.approx(rl.all_to_all(64_000_000, 8,
                                                        link_bytes_per_s=400e9).time_s)
    # the NVLink share sets the time when the NIC is fast enough: 7/16 at 100 GB/s = 280 us
    fast_nic = rl.all_to_all(64_000_000, 16, link_bytes_per_s=100e9, ranks_per_node=8,
                             network_bytes_per_s=400e9, latency_s=0.0)
    assert fast_nic.time_s == pytest.approx(280e-6)


def test_all_to_all_spanning_a_partial_domain_by_hand() -> None:
    # 64 MB over 12 ranks, 8 per node: the last node holds 4, whose GPUs send 8/12 of the
    # buffer (42.7 MB) through their NICs at 50 GB/s (853 us); a full node's GPUs send 4/12
    # off-node and 7/12 (37.3 MB) over the 400 GB/s link (93 us): the 4-GPU node sets the time
    e = rl.all_to_all(64_000_000, 12, hardware="B200", link_bytes_per_s=400e9,
                      ranks_per_node=8, network_bytes_per_s=50e9, latency_s=0.0)
    assert e.memory_s == pytest.approx(8 / 12 * 64e6 / 50e9)
    assert e.bytes == pytest.approx(11 / 12 * 64e6)
    # priced as the 4-GPU node's ranks: the same as 12 ranks laid out 4 to a node
    fours = rl.all_to_all(64_000_000, 12, hardware="B200", link_bytes_per_s=400e9,
                          ranks_per_node=4, network_bytes_per_s=50e9, latency_s=0.0)
    assert e.memory_s == pytest.approx(fours.memory_s)


def test_all_to_all_spanning_bad_input() -> None:
    with pytest.raises(ValueError, match="all_to_all: ranks_per_node=8 needs network_bytes_per_s"):
        rl.all_to_all(MB, 16, hardware="B200", ranks_per_node=8)
    with pytest.raises(ValueError, match="network_bytes_per_s=50000000000.0 needs ranks_per_node"):
        rl.all_to_all(MB, 16, hardware="B200", network_bytes_per_s=50e9)
    with pytest.raises(ValueError, match="ranks_per_node must be a positive integer, got 0"):
        rl.all_to_all(MB, 16, hardware="B200", ranks_per_node=0, network_bytes_per_s=50e9)
