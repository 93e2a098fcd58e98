"""NCCL's own price of a communicator spanning nodes (``algorithm="nccl"`` with
``ranks_per_node``: NCCL 2.18.3's ``src/graph/tuning.cc``), and Composer's per-batch training
metric syncs over every rank (:func:`roofline.transformer.composer.metric_sync_s`)."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline._params.resolve import resolve_hardware
from roofline.transformer.composer import METRIC_STATES, idle_calls_s, metric_sync_s, passes_s

GB = 1e9
NVLINK = 370 * GB
NIC = 48 * GB
US = 1e-6


def nccl(fn, nbytes, ranks, g=8, net=NIC):  # type: ignore[no-untyped-def]
    return fn(nbytes, ranks, "nccl", link_bytes_per_s=NVLINK, ranks_per_node=g,
              network_bytes_per_s=net)


def test_small_all_gather_is_ll_ring_latency() -> None:
    # 512 ranks on 64 nodes of 8: 511 steps, 63 of them through the NIC. LL: base 6.6 us,
    # each intra-node step max(NVLink 0.6, net overhead 1.0) = 1.0 us, each inter-node step
    # hwLat[NET] 2.7 us
    for fn in (rl.all_gather, rl.reduce_scatter):
        e = nccl(fn, 4, 512)
        assert e.overhead_s == pytest.approx((6.6 + 448 * 1.0 + 63 * 2.7) * US)
    # 2 nodes: 15 steps, 1 inter-node
    assert nccl(rl.all_gather, 4, 16).overhead_s == pytest.approx((6.6 + 14 + 2.7) * US)


def test_large_all_gather_is_ll128_or_simple() -> None:
    # 1 GiB over 512 ranks: bus min(370, 8 x 48 = 384) = 370 GB/s. LL128: 14 + 448 x 1.9 +
    # 63 x 4.0 us and 0.92 of the bus; Simple: 8.4 + 448 x max(NVLink 3.4, 3 x 1.0 net
    # overhead) + 63 x 14 us at the full bus. NCCL takes the faster.
    b = 2**30
    sent = 511 / 512 * b
    ll128 = (14 + 448 * 1.9 + 63 * 4.0) * US + sent / (0.92 * NVLINK)
    simple = (8.4 + 448 * 3.4 + 63 * 14.0) * US + sent / NVLINK
    e = nccl(rl.all_gather, b, 512)
    assert e.time_s == pytest.approx(min(ll128, simple))
    assert e.bytes == pytest.approx(sent)


def test_small_all_reduce_takes_the_tree() -> None:
    # 4 bytes over 512 ranks: tree LL 6.8 + 2 x ((8-1) x 0.6 + log2(64) x 5.0) us, far below
    # the LL ring's 6.6 + (1022 - 128) x 1.0 + 128 x 2.7 us; its bytes at half the tree's LL
    # bus, min(0.92 x 370 / 3.8, llMaxBw 20.4) GB/s
    e = nccl(rl.all_reduce, 4, 512)
    assert e.overhead_s == pytest.approx((6.8 + 2 * (7 * 0.6 + 6 * 5.0)) * US)
    assert e.memory_s == pytest.approx(4 / (0.5 * 20.4 * GB))


def test_fsdp_layer_gather_grows_with_ranks_only_by_latency() -> None:
    # MPT-70B's layer all-gather (12 x 8192^2 bf16 weights) over 16 and 64 nodes of 8 H100s
    # (notes §38): the bytes over the bus are (n-1)/n of the buffer at either size, so the
    # growth from 128 to 512 ranks is the ring's steps' latency (and NCCL's protocol switch),
    # not bandwidth.
    b = 2 * 12 * 8192**2

    def by_hand(n: int) -> tuple[float, float]:
        steps, inter = n - 1, n // 8 - 1
        sent = (n - 1) / n * b
        ll128 = (14 + (steps - inter) * 1.9 + inter * 4.0) * US + sent / (0.92 * NVLINK)
        simple = (8.4 + (steps - inter) * 3.4 + inter * 14.0) * US + sent / NVLINK
        return ll128, simple

    ll128, simple = by_hand(128)  # 286.8 us + 4.69 ms against 599.2 us + 4.32 ms: Simple
    assert simple < ll128
    assert nccl(rl.all_gather, b, 128).time_s == pytest.approx(simple)
    ll128, simple = by_hand(512)  # 1118 us + 4.72 ms against 2413.6 us + 4.34 ms: LL128
    assert ll128 < simple
    assert nccl(rl.all_gather, b, 512).time_s == pytest.approx(ll128)
    t = nccl(rl.all_gather, b, np.array([128, 512]))
    assert np.ptp(np.asarray(t.bytes)) / b < 0.01  # the bytes barely move
    assert float(np.diff(t.time_s)[0]) == pytest.approx(ll128 - min(by_hand(128)))


def test_ll128_per_channel_cap_on_the_gpu_architecture() -> None:
    # NCCL 2.18's perChMaxRingLL128Bws: LL128's ring bus is at most nChannels x 36.7 GB/s
    # (Hopper) / 20 GB/s (Ampere), the ring's channels one per NIC of the node (g). 1.5 GiB
    # over 512 H100s: LL128 at min(0.92 x 370, 8 x 36.7 = 293.6) GB/s, still faster than
    # Simple (2413.6 us of latency at 370 GB/s).
    b = 2 * 12 * 8192**2
    sent = 511 / 512 * b

    def on(hw: str | None, n: int = 512, g: int = 8, net: float = NIC):  # type: ignore[no-untyped-def]
        return rl.all_gather(b, n, "nccl", hw, link_bytes_per_s=NVLINK, ranks_per_node=g,
                             network_bytes_per_s=net)

    lat_ll128, lat_simple = (14 + 448 * 1.9 + 63 * 4.0) * US, (8.4 + 448 * 3.4 + 63 * 14.0) * US
    assert on("H100 SXM").time_s == pytest.approx(lat_ll128 + sent / (8 * 36.7 * GB))
    assert rl.ops.collectives.nccl_ll128_channel_bytes_per_s(
        resolve_hardware("H100 SXM")) == pytest.approx(36.7 * GB)
    # Ampere: 8 x 20 = 160 GB/s makes LL128 slower than Simple, which NCCL then runs
    assert on("A100 SXM").time_s == pytest.approx(lat_simple + sent / NVLINK)
    # without hardware: no cap (0.92 of the bus), as before
    assert on(None).time_s == pytest.approx(lat_ll128 + sent / (0.92 * NVLINK))
    # a last node of 4 ranks (20 = 2 x 8 + 4): 4 channels, 4 x 36.7 = 146.8 GB/s, below
    # 0.92 x min(370, 4 x 48) = 176.6 GB/s
    e = on("H100 SXM", n=20)
    ll128 = (14 + (19 - 2) * 1.9 + 2 * 4.0) * US + 19 / 20 * b / (4 * 36.7 * GB)
    simple = (8.4 + 17 * 3.4 + 2 * 14.0) * US + 19 / 20 * b / (4 * 48 * GB)
    assert e.time_s == pytest.approx(min(ll128, simple))
    # one node keeps the plain NCCL ring (no per-channel cap there)
    one = rl.all_gather(b, 8, "nccl", "H100 SXM", link_bytes_per_s=NVLINK, ranks_per_node=8,
                        network_bytes_per_s=NIC)
    assert one.time_s == pytest.approx(
        rl.all_gather(b, 8, "nccl", link_bytes_per_s=NVLINK).time_s)


def test_one_node_is_the_plain_nccl_ring() -> None:
    for fn in (rl.all_reduce, rl.all_gather, rl.reduce_scatter):
        for b in (4, 2**20, 2**30):
            got = nccl(fn, b, 8, g=8)
            want = fn(b, 8, "nccl", link_bytes_per_s=NVLINK)
            assert got.time_s == pytest.approx(want.time_s)


def test_monotone_in_ranks_and_bytes() -> None:
    ranks = np.array([16, 32, 64, 128, 256, 512])
    for fn in (rl.all_reduce, rl.all_gather, rl.reduce_scatter):
        t = np.asarray(nccl(fn, 2**26, ranks).time_s)
        assert np.all(np.diff(t) > 0)
        sizes = np.array([4, 2**10, 2**16, 2**20, 2**26, 2**30])
        t = np.asarray(nccl(fn, sizes, 128).time_s)
        assert np.all(np.diff(t) >= 0)
    # a slower NIC never helps
    assert nccl(rl.all_gather, 2**30, 64, g=4, net=25 * GB).time_s > nccl(
        rl.all_gather, 2**30, 64, g=4).time_s


def test_nccl_spanning_refuses_other_collectives() -> None:
    with pytest.raises(ValueError, match="algorithm"):
        rl.all_reduce(1024, 16, "custom", link_bytes_per_s=NVLINK, ranks_per_node=8,
                      network_bytes_per_s=NIC)


def test_metric_sync_by_hand() -> None:
    hw = resolve_hardware("H100 SXM")
    tiny = float(passes_s([(1.0, 1.0, 1.0)], hw))
    bar, gat = 30 * US, 50 * US
    got = metric_sync_s(2, 16, bar, gat, hw)
    one = bar + idle_calls_s([0.0] + [tiny] * 16 + [gat] + [tiny] * 18, hw)
    assert METRIC_STATES == 2
    assert float(got) == pytest.approx(2 * 2 * one)
    # nothing to sync: no metrics, or one rank
    assert float(metric_sync_s(0, 512, bar, gat, hw)) == 0.0
    assert float(metric_sync_s(2, 1, bar, gat, hw)) == 0.0
    # host bound: 2 x world calls per state, so it grows with the world
    t = metric_sync_s(2, np.array([8, 64, 128, 512]), bar, gat, hw)
    assert np.all(np.diff(t) > 0)
    # ~linear in the world: 384 more ranks cost ~6x what 64 more do
    assert (t[3] - t[2]) == pytest.approx(6.0 * (t[2] - t[1]), rel=0.05)


def test_training_step_pays_the_metric_syncs() -> None:
    cfg = rl.transformer.TransformerConfig(
        name="t", hidden_size=2048, num_layers=4, num_heads=16, num_kv_heads=16,
        head_dim=128, intermediate_size=8192, vocab_size=32000)

    def opt(metrics: int, dp: int) -> float:
        est = rl.transformer.estimate(
            cfg, seq_len=2048, phase="train", hardware="H100 SXM", dp=dp, zero=3,
            gpus_per_node=8, train_metrics=metrics)
        assert est.step is not None
        return est.step.optimizer_s

    for dp in (8, 128):
        assert opt(2, dp) > opt(0, dp)
    assert opt(2, 128) - opt(0, 128) > opt(2, 8) - opt(0, 8)
