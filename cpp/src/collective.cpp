#include "roofline/ops/collective.hpp"

#include <algorithm>
#include <cmath>

namespace roofline {

CollectiveCost collective_cost(Collective op, CollectiveAlgo algo, double bytes,
                               double ranks) noexcept {
  CollectiveCost c;
  if (ranks <= 1) return c;  // nothing leaves the GPU
  const double share = (ranks - 1.0) / ranks;
  const double log_steps = std::ceil(std::log2(ranks));
  const bool tree = algo == CollectiveAlgo::tree;
  switch (op) {
    case Collective::all_reduce:  // reduce_scatter then all_gather
      c.bytes_sent = 2.0 * share * bytes;
      c.steps = tree ? 2.0 * log_steps : 2.0 * (ranks - 1.0);
      break;
    case Collective::all_gather:
    case Collective::reduce_scatter:
      c.bytes_sent = share * bytes;
      c.steps = tree ? log_steps : ranks - 1.0;
      break;
    case Collective::all_to_all:  // pairwise exchange: p-1 distinct peers
      c.bytes_sent = share * bytes;
      c.steps = ranks - 1.0;
      break;
    case Collective::send_recv:
      c.bytes_sent = bytes;
      c.steps = 1.0;
      break;
  }
  return c;
}

namespace {

/// NCCL 2.18.3's tuning model (NVIDIA/nccl src/graph/tuning.cc @ ea38312273e5b9a19a224c9ff4c10b7fcf441eaf),
/// ring over NVLink, protocols LL, LL128, Simple: base latency (baseLat) and per-step NVLink
/// latency (hwLat) in seconds, and the bus-bandwidth factors of its model refinements.
constexpr double kNcclBaseS[3] = {6.6e-6, 14.0e-6, 8.4e-6};
constexpr double kNcclHopS[3] = {0.6e-6, 1.9e-6, 3.4e-6};
constexpr double kNcclLl128Share = 0.92;      ///< LL128's 120 of 128 bytes (ppn >= 2)
constexpr double kNcclLlMaxBytesPerS = 87.7e9;  ///< llMaxBws, Ampere / Hopper, one node

/// vLLM's custom all-reduce (csrc/custom_all_reduce.cuh after vllm-project/vllm PR #8558, in
/// v0.6.2 - v0.6.4, which SGLang v0.4.0 called through vllm.distributed; 36 blocks of 512
/// threads, 16-byte loads). Kernel selection (CustomAllreduce::allreduce, full NVLink):
constexpr double kCarOneStageMaxBytes4 = 512.0 * 1024.0;  ///< one-stage below this at <= 4 ranks
constexpr double kCarOneStageMaxBytes8 = 256.0 * 1024.0;  ///< one-stage below this at <= 8 ranks
/// Fixed time of each kernel and the share of the NVLink line rate its remote loads reach,
/// least squares over vLLM's benchmark_device_communicators.py on 4 x H100 SXM (bf16, hidden
/// 8192, 0.5 - 4 MiB, ten all-reduces per CUDA graph replay; the ca_1stage / ca_2stage
/// columns of vllm-project/vllm PRs #24111 and #24532, averaged): one-stage 6.57 us + the
/// p-1 peers' copies at 0.887 x 450 GB/s (residuals <= 0.6 us); two-stage 12.56 us + 2(p-1)/p
/// of the buffer at 0.468 x 450 GB/s (residuals <= 2.2 us). The two-stage kernel's larger
/// fixed time is its middle barrier (st.release / ld.acquire at system scope) and the
/// dependent second round of remote loads after it; its lower rate, loads of chunks a peer
/// has just written, each stage only 1/p of the buffer long.
constexpr double kCarOneStageFixedS = 6.57e-6;
constexpr double kCarOneStageShare = 0.887;
constexpr double kCarTwoStageFixedS = 12.56e-6;
constexpr double kCarTwoStageShare = 0.468;

}  // namespace

bool custom_allreduce_one_stage(double bytes, double ranks) noexcept {
  return ranks <= 2.0 || (ranks <= 4.0 && bytes < kCarOneStageMaxBytes4) ||
         (ranks <= 8.0 && bytes < kCarOneStageMaxBytes8);
}

Estimate custom_allreduce_estimate(double bytes, double ranks, const LinkRates& link) noexcept {
  Estimate e;
  if (ranks <= 1) return e;  // nothing leaves the GPU
  const bool one = custom_allreduce_one_stage(bytes, ranks);
  const double remote = one ? (ranks - 1.0) * bytes : 2.0 * (ranks - 1.0) / ranks * bytes;
  const double rate = link.bytes_per_s * (one ? kCarOneStageShare : kCarTwoStageShare);
  e.bytes = remote;
  e.memory_s = rate > 0 ? remote / rate : 0.0;
  e.overhead_s = one ? kCarOneStageFixedS : kCarTwoStageFixedS;
  e.time_s = e.memory_s + e.overhead_s;
  e.kernels = 1.0;
  return e;
}

Estimate nccl_ring_estimate(Collective op, double bytes, double ranks,
                            const LinkRates& link) noexcept {
  const bool reduce = op == Collective::all_reduce;
  const CollectiveCost c = collective_cost(op, CollectiveAlgo::ring, bytes, ranks);
  if (!reduce && op != Collective::all_gather && op != Collective::reduce_scatter) {
    return collective_estimate(c, link);
  }
  Estimate e;
  if (c.steps <= 0) return e;
  const double bus = link.bytes_per_s;
  const double ll = std::min(kNcclLlMaxBytesPerS, bus * (reduce ? 0.25 : 1.0 / 3.0));
  const double bws[3] = {ll, bus * kNcclLl128Share, bus};
  double best = -1.0;
  for (int p = 0; p < 3; ++p) {
    const double lat = kNcclBaseS[p] + c.steps * kNcclHopS[p];
    const double xfer = bws[p] > 0 ? c.bytes_sent / bws[p] : 0.0;
    if (best < 0 || lat + xfer < best) {
      best = lat + xfer;
      e.memory_s = xfer;
      e.overhead_s = lat;
    }
  }
  e.bytes = c.bytes_sent;
  e.time_s = e.memory_s + e.overhead_s;
  e.kernels = 1.0;
  return e;
}

Estimate collective_estimate(const CollectiveCost& c, const LinkRates& link) noexcept {
  Estimate e;
  e.bytes = c.bytes_sent;
  e.memory_s = link.bytes_per_s > 0 ? c.bytes_sent / link.bytes_per_s : 0.0;
  e.overhead_s = c.steps * link.latency_s;
  e.time_s = e.memory_s + e.overhead_s;
  e.kernels = c.steps > 0 ? 1.0 : 0.0;
  return e;
}

void collective_sweep(Collective op, CollectiveAlgo algo, const double* bytes, const double* ranks,
                      std::size_t n_points, const LinkRates& link, EstimateColumns out) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    Estimate e;
    if (algo == CollectiveAlgo::nccl) {
      e = nccl_ring_estimate(op, bytes[i], ranks[i], link);
    } else if (algo == CollectiveAlgo::custom && op == Collective::all_reduce) {
      e = custom_allreduce_estimate(bytes[i], ranks[i], link);
    } else {
      e = collective_estimate(collective_cost(op, algo, bytes[i], ranks[i]), link);
    }
    out.set(i, e);
  }
}

Estimate spanning_all_to_all_estimate(double bytes, double ranks, double local,
                                      const LinkRates& up, const LinkRates& out) noexcept {
  if (local >= ranks || local < 1.0) {
    return collective_estimate(
        collective_cost(Collective::all_to_all, CollectiveAlgo::ring, bytes, ranks), up);
  }
  // A group that is not a whole number of domains leaves a last, smaller domain of `rest`
  // ranks: its ranks send the most through their NICs, a full domain's the most over the
  // scale-up link; the exchange ends with the slower of the two.
  const double rest = std::fmod(ranks, local);
  const double fewest = rest > 0.0 ? rest : local;
  const double on = (local - 1.0) / ranks * bytes;    // to the other ranks of a full domain
  const double off = (ranks - fewest) / ranks * bytes;  // through the NIC, smallest domain
  const double on_s = up.bytes_per_s > 0 ? on / up.bytes_per_s : 0.0;
  const double off_s = out.bytes_per_s > 0 ? off / out.bytes_per_s : 0.0;
  Estimate e;
  e.bytes = (ranks - 1.0) / ranks * bytes;  // every rank's sends, whichever link
  e.memory_s = std::max(on_s, off_s);
  e.overhead_s = (ranks - 1.0) * out.latency_s;
  e.time_s = e.memory_s + e.overhead_s;
  e.kernels = 1.0;
  return e;
}

void spanning_all_to_all_sweep(const double* bytes, const double* ranks, const double* local,
                               std::size_t n_points, const LinkRates& up, const LinkRates& out,
                               EstimateColumns cols) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    cols.set(i, spanning_all_to_all_estimate(bytes[i], ranks[i], local[i], up, out));
  }
}

double spanning_ring_bytes_per_s(double ranks, double local, double up, double out) noexcept {
  if (local >= ranks || local < 1.0) return up;
  const double rest = std::fmod(ranks, local);
  const double fewest = rest > 0.0 ? rest : local;  // the NICs of the smallest domain
  return std::min(up, fewest * out);
}

namespace {

/// NCCL 2.18.3's tuning model for groups spanning nodes (NVIDIA/nccl src/graph/tuning.cc @
/// ea38312273e5b9a19a224c9ff4c10b7fcf441eaf; the ring and tree constants below are unchanged
/// in v2.20.5-1 except the tree's Simple hwLat), protocols LL, LL128, Simple, in seconds:
/// hwLat[NET] of the ring and the tree, hwLat[NVLINK] and baseLat of the tree (the ring's
/// are kNcclBaseS / kNcclHopS above).
constexpr double kNcclNetRingS[3] = {2.7e-6, 4.0e-6, 14.0e-6};
constexpr double kNcclTreeBaseS[3] = {6.8e-6, 14.0e-6, 0.0};
constexpr double kNcclTreeHopS[3] = {0.6e-6, 1.25e-6, 4.0e-6};
constexpr double kNcclNetTreeS[3] = {5.0e-6, 8.5e-6, 14.0e-6};
/// getNetOverhead: the proxy's post per network step on an x86 Intel host (and NCCL's
/// fallback for other CPUs; AMD hosts 2 µs), tripled for Simple; an inter-node ring pays
/// max(NVLink hop, this) on each of its intra-node steps.
constexpr double kNcclNetOverheadS = 1.0e-6;
/// llMaxBws on Intel hosts (index1 0 for multi-node): 2 nodes 39.0, more 20.4 GB/s.
constexpr double kNcclLlMax2NodesBytesPerS = 39.0e9;
constexpr double kNcclLlMaxNodesBytesPerS = 20.4e9;
/// treeCorrectionFactor[protocol][log2(bytes / 64)], 64 B to 256 MiB, on the tree's bandwidth.
constexpr double kNcclTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
     1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
     1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
     .9}};

}  // namespace

Estimate nccl_spanning_estimate(Collective op, double bytes, double ranks, double local,
                                double bus, double ll128_channel_bytes_per_s) noexcept {
  Estimate e;
  if (ranks <= 1) return e;
  const bool reduce = op == Collective::all_reduce;
  const double nodes = std::ceil(ranks / local);
  const double ppn = ranks / nodes;
  const double steps = reduce ? 2.0 * (ranks - 1.0) : ranks - 1.0;
  const double inter = reduce ? 2.0 * nodes : nodes - 1.0;
  const double ll_max = nodes <= 2.0 ? kNcclLlMax2NodesBytesPerS : kNcclLlMaxNodesBytesPerS;
  const double sent = (reduce ? 2.0 : 1.0) * (ranks - 1.0) / ranks * bytes;
  double best = -1.0;
  auto take = [&](double lat, double xfer) {
    if (best < 0 || lat + xfer < best) {
      best = lat + xfer;
      e.memory_s = xfer;
      e.overhead_s = lat;
    }
  };
  // ncclTopoTuneModel: LL128's ring bus at most nChannels x perChMaxRingLL128Bw, the ring
  // graph's channels one per NIC of the node with the fewest ranks (as the bus, above)
  const double rest = std::fmod(ranks, local);
  const double channels = rest > 0.0 ? rest : local;
  double ll128 = bus * (ppn < 2.0 ? 0.7 : 0.92);
  if (ll128_channel_bytes_per_s > 0.0) {
    ll128 = std::min(ll128, channels * ll128_channel_bytes_per_s);
  }
  const double ring_bw[3] = {std::min(ll_max, bus / 4.0), ll128, bus};
  for (int p = 0; p < 3; ++p) {
    const double net = kNcclNetOverheadS * (p == 2 ? 3.0 : 1.0);
    double lat = kNcclBaseS[p] + (steps - inter) * std::max(kNcclHopS[p], net) +
                 inter * kNcclNetRingS[p];
    // ncclTopoGetAlgoTime: the ring's Simple all-reduce plateau once each channel's share of
    // a rank's slice is >= 64 B (nChannels taken as ppn: a channel per NIC).
    if (reduce && p == 2 && bytes / (ppn * ranks) >= 64.0) lat *= 1.4;
    take(lat, ring_bw[p] > 0 ? sent / ring_bw[p] : 0.0);
  }
  if (reduce) {  // NCCL 2.18 prices the tree for all-reduce only
    const double tree = bus * 0.92;
    const double tree_bw[3] = {std::min(tree / 3.8, ll_max), tree * (120.0 / 128.0), tree};
    const int log_size = static_cast<int>(std::floor(std::log2(std::max(bytes / 64.0, 1.0))));
    for (int p = 0; p < 3; ++p) {
      const double lat = kNcclTreeBaseS[p] + 2.0 * ((ppn - 1.0) * kNcclTreeHopS[p] +
                                                     std::floor(std::log2(nodes)) *
                                                         kNcclNetTreeS[p]);
      double bw = tree_bw[p] * 0.5;  // algorithm bandwidth: half the bus
      if (log_size < 23) bw *= kNcclTreeCorrection[p][log_size];
      take(lat, bw > 0 ? bytes / bw : 0.0);
    }
  }
  e.bytes = sent;
  e.time_s = e.memory_s + e.overhead_s;
  e.kernels = 1.0;
  return e;
}

Estimate spanning_collective_estimate(Collective op, CollectiveAlgo algo, double bytes,
                                      double ranks, double local, const LinkRates& up,
                                      const LinkRates& out,
                                      double ll128_channel_bytes_per_s) noexcept {
  const bool spans = local < ranks && local >= 1.0;
  if (op == Collective::all_to_all) {
    return spanning_all_to_all_estimate(bytes, ranks, local, up, out);
  }
  const CollectiveCost c = collective_cost(op, algo, bytes, ranks);
  if (!spans) {
    return algo == CollectiveAlgo::nccl ? nccl_ring_estimate(op, bytes, ranks, up)
                                        : collective_estimate(c, up);
  }
  if (op == Collective::send_recv) return collective_estimate(c, out);
  const double bus = spanning_ring_bytes_per_s(ranks, local, up.bytes_per_s, out.bytes_per_s);
  if (algo == CollectiveAlgo::nccl) {
    return nccl_spanning_estimate(op, bytes, ranks, local, bus, ll128_channel_bytes_per_s);
  }
  return collective_estimate(c, LinkRates{bus, out.latency_s});
}

void spanning_collective_sweep(Collective op, CollectiveAlgo algo, const double* bytes,
                               const double* ranks, const double* local, std::size_t n_points,
                               const LinkRates& up, const LinkRates& out,
                               EstimateColumns cols, double ll128_channel_bytes_per_s) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    cols.set(i, spanning_collective_estimate(op, algo, bytes[i], ranks[i], local[i], up, out,
                                             ll128_channel_bytes_per_s));
  }
}

Estimate deepep_exchange_estimate(double bytes, double ranks, double local, double node_share,
                                  double rounds, const LinkRates& up,
                                  const LinkRates& out) noexcept {
  const bool spans = local >= 1.0 && local < ranks;
  const double nodes = spans ? ranks / local : 1.0;
  const double nvl = spans ? (local - 1.0) / local * bytes
                           : (ranks > 1.0 ? (ranks - 1.0) / ranks * bytes : 0.0);
  const double rdma = spans ? node_share * bytes * (nodes - 1.0) / nodes : 0.0;
  const double nvl_s = up.bytes_per_s > 0 ? nvl / up.bytes_per_s : 0.0;
  const double rdma_s = out.bytes_per_s > 0 ? rdma / out.bytes_per_s : 0.0;
  Estimate e;
  e.bytes = nvl + rdma;
  e.memory_s = std::max(nvl_s, rdma_s);
  e.overhead_s = rounds * up.latency_s;
  e.time_s = e.memory_s + e.overhead_s;
  e.kernels = 1.0;
  return e;
}

void deepep_exchange_sweep(const double* bytes, const double* ranks, const double* rounds,
                           std::size_t n_points, double local, double node_share,
                           const LinkRates& up, const LinkRates& out,
                           EstimateColumns cols) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    cols.set(i, deepep_exchange_estimate(bytes[i], ranks[i], local, node_share, rounds[i], up,
                                         out));
  }
}

}  // namespace roofline
