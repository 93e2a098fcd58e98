#pragma once
#include <cstdint>

#include "roofline/estimate.hpp"
#include "roofline/sweep.hpp"

namespace roofline {

/// Communication patterns between the ranks of one group.
enum class Collective : std::uint8_t {
  all_reduce,      ///< every rank ends with the sum of every rank's buffer
  all_gather,      ///< every rank ends with the concatenation of every rank's shard
  reduce_scatter,  ///< every rank ends with one shard of the sum
  all_to_all,      ///< every rank sends a distinct 1/p of its buffer to every rank
  send_recv        ///< one rank sends its buffer to one other rank
};

/// How a collective is scheduled.
enum class CollectiveAlgo : std::uint8_t {
  ring,  ///< p-1 (or 2(p-1)) neighbour steps: bandwidth-optimal, latency linear in p
  tree,  ///< recursive halving/doubling (double binary tree): log2(p) latency steps
  nccl,  ///< NCCL's ring within one NVLink domain, protocol and latency from its tuning model
  custom ///< vLLM's custom all-reduce (one-stage / two-stage kernels over NVLink P2P loads)
};

/// Link-level work of a collective per rank: bytes each rank sends and sequential steps.
struct CollectiveCost {
  double bytes_sent = 0;  ///< bytes one rank sends over its link
  double steps = 0;       ///< sequential communication steps (each pays the latency)
};

/// The link a collective runs over, in SI units.
struct LinkRates {
  double bytes_per_s = 0;  ///< achievable bandwidth per direction per rank
  double latency_s = 0;    ///< latency paid once per step
};

/// Alpha-beta cost of `op` on `bytes` (the full per-rank buffer: all_reduce input, all_gather
/// output, reduce_scatter input, all_to_all buffer, send_recv message) over `ranks` ranks.
/// Ring all_reduce sends 2(p-1)/p bytes in 2(p-1) steps; all_gather / reduce_scatter /
/// all_to_all send (p-1)/p bytes in p-1 steps (tree: ceil(log2 p) steps, all_reduce twice).
CollectiveCost collective_cost(Collective op, CollectiveAlgo algo, double bytes,
                               double ranks) noexcept;

/// Time = steps x latency + bytes_sent / bandwidth, reported as memory_s (the transfer term)
/// and overhead_s (the latency term); bytes = link bytes sent, flops = 0.
Estimate collective_estimate(const CollectiveCost& c, const LinkRates& link) noexcept;

/// NCCL's ring (`op` all_reduce, all_gather or reduce_scatter; others: the plain ring over
/// `link`) within one NVLink domain, as NCCL 2.18's tuning model (src/graph/tuning.cc) prices
/// it: each protocol p of LL, LL128 and Simple costs base_p + s x hop_p + bytes_sent / bw_p,
/// s = 2(n-1) steps for all_reduce (n-1 otherwise), bw_p = `link.bytes_per_s` (Simple's bus
/// bandwidth) x 1/4 for LL all_reduce (1/3 otherwise, at most 87.7 GB/s) and x 0.92 for
/// LL128; NCCL runs the fastest. `link.latency_s` is not used. overhead_s = the latency.
Estimate nccl_ring_estimate(Collective op, double bytes, double ranks,
                            const LinkRates& link) noexcept;

/// True where vLLM's custom all-reduce (csrc/custom_all_reduce.cuh, v0.6.2 - v0.6.4) runs its
/// one-stage kernel on a fully NVLinked group: 2 ranks, or bytes < 512 KiB at <= 4 ranks, or
/// bytes < 256 KiB at <= 8 ranks; the two-stage kernel otherwise.
bool custom_allreduce_one_stage(double bytes, double ranks) noexcept;

/// vLLM's custom all-reduce of `bytes` over `ranks` fully NVLinked ranks, one kernel in a CUDA
/// graph on registered buffers. One-stage: a start barrier, each rank loads the whole buffer
/// from every peer (p-1 remote copies) and reduces, an end barrier: time = one-stage fixed
/// time + (p-1) x bytes / (one-stage share x link). Two-stage: a start barrier, each rank
/// reduces its 1/p chunk from every rank into its IPC buffer, a release/acquire barrier, then
/// loads the other p-1 reduced chunks: time = two-stage fixed time + 2(p-1)/p x bytes /
/// (two-stage share x link). Fixed times and shares from vLLM's published H100 timings;
/// `link.latency_s` is not used. overhead_s = the fixed time, memory_s = the transfer term,
/// bytes = the remote bytes one rank loads.
Estimate custom_allreduce_estimate(double bytes, double ranks, const LinkRates& link) noexcept;

/// Collective estimates over arrays of buffer bytes and ranks (length n_points); `algo` custom
/// prices all_reduce as custom_allreduce_estimate and any other `op` as the ring.
void collective_sweep(Collective op, CollectiveAlgo algo, const double* bytes, const double* ranks,
                      std::size_t n_points, const LinkRates& link, EstimateColumns out) noexcept;

/// Bus bandwidth per rank of a ring collective over `ranks` ranks laid out `local` to a
/// scale-up domain (a node or NVLink domain), each rank with its own NIC of rate `out`
/// (rail-optimised: DGX A100 / H100 / B200, one ConnectX per GPU). NCCL builds its rings as
/// channels NET -> GPU a -> .. -> GPU x -> NET, each channel leaving the domain through a
/// different NIC of the communicator's GPUs there, and inside the domain hopping over the
/// scale-up link (NVIDIA/nccl src/graph/search.cc, v2.18.3-1): the channels together carry
/// min(g x out, up), g = the group's ranks in the domain, whose NICs the search may use
/// (the topology holds only the communicator's GPUs, so PXN relays only through them).
/// local >= ranks: one domain, `up`; otherwise, a group that is not a whole number of
/// domains leaves a last domain of s = ranks mod local ranks, whose s NICs set the rate
/// (NCCL's rings take the fewest channels over the nodes): min(up, s x out).
double spanning_ring_bytes_per_s(double ranks, double local, double up, double out) noexcept;

/// NCCL's own price of `op` (all_reduce, all_gather, reduce_scatter) over `ranks` ranks laid
/// out `local` to a node, the ring's bus bandwidth `bus` (spanning_ring_bytes_per_s), as NCCL
/// 2.18.3's tuning model prices it (src/graph/tuning.cc, ncclTopoTuneModel /
/// ncclTopoGetAlgoTime, commit ea38312; the ring terms unchanged through v2.20.5), x86 Intel
/// host, n = ceil(ranks / local) nodes, ppn = ranks / n, the fastest of:
/// ring, protocol p in {LL, LL128, Simple}: baseLat[p] + (steps - inter) x max(hwLat[NVLINK][p],
///   netOverhead[p]) + inter x hwLat[NET][p] + bytes sent / busBw[p]; steps = 2(ranks-1)
///   (all-reduce) or ranks-1, inter = 2n (all-reduce) or n-1; netOverhead 1 µs (Simple 3 µs);
///   busBw LL min(bus/4, llMaxBw: 39 GB/s on 2 nodes, 20.4 beyond), LL128 0.92 bus (0.7 at
///   ppn < 2), Simple bus; the Simple all-reduce's latency x 1.4 (ring plateau) when
///   bytes / (ppn x ranks) >= 64;
/// tree (all-reduce only): baseLat + 2((ppn-1) x hwLat[NVLINK] + floor(log2 n) x hwLat[NET])
///   + bytes / (0.5 x busBw x treeCorrectionFactor), busBw 0.92 bus (LL: / 3.8, at most
///   llMaxBw; LL128 x 120/128).
/// LL128's ring bus is also capped at nChannels x perChMaxRingLL128Bw
/// (`ll128_channel_bytes_per_s`, NCCL 2.18: Volta / Ampere 20, Hopper and later 36.7 GB/s;
/// <= 0: no cap), nChannels the ring graph's channels, one per NIC the group uses on a node
/// (the fewest of any node: local, or ranks mod local). Not priced: the tree's per-channel
/// caps (the tree graph's channels), CollNet / NVLS.
/// memory_s: the chosen protocol's transfer term; overhead_s: its latency.
Estimate nccl_spanning_estimate(Collective op, double bytes, double ranks, double local,
                                double bus, double ll128_channel_bytes_per_s = 0.0) noexcept;

/// Ring / tree `op` (all_reduce, all_gather, reduce_scatter) over `ranks` ranks laid out
/// `local` to a scale-up domain: collective_estimate of the same bytes and steps at
/// spanning_ring_bytes_per_s, paying `out.latency_s` per step (the scale-up latency where the
/// group fits one domain); algo nccl: nccl_spanning_estimate (nccl_ring_estimate in one
/// domain; `ll128_channel_bytes_per_s` its LL128 per-channel cap). all_to_all:
/// spanning_all_to_all_estimate; send_recv: `out` where local < ranks (a GPU's own NIC), else
/// `up`.
Estimate spanning_collective_estimate(Collective op, CollectiveAlgo algo, double bytes,
                                      double ranks, double local, const LinkRates& up,
                                      const LinkRates& out,
                                      double ll128_channel_bytes_per_s = 0.0) noexcept;

/// spanning_collective_estimate over arrays of buffer bytes, ranks and ranks per domain.
void spanning_collective_sweep(Collective op, CollectiveAlgo algo, const double* bytes,
                               const double* ranks, const double* local, std::size_t n_points,
                               const LinkRates& up, const LinkRates& out,
                               EstimateColumns cols,
                               double ll128_channel_bytes_per_s = 0.0) noexcept;

/// All-to-all over `ranks` ranks laid out `local` to a scale-up domain (a node or NVLink
/// domain; ranks > local): each rank sends (local-1)/p of its buffer `bytes` over the scale-up
/// link `up` and (p-local)/p over the scale-out link `out`, both at once, so time =
/// max(on-domain / up rate, off-domain / out rate) + (p-1) x out latency (local >= ranks: the
/// plain all_to_all over `up`); p not a multiple of local: the last domain's p mod local ranks
/// send (p - p mod local)/p off-domain, the slowest. bytes = (p-1)/p x bytes, memory_s = the
/// transfer term.
Estimate spanning_all_to_all_estimate(double bytes, double ranks, double local,
                                      const LinkRates& up, const LinkRates& out) noexcept;

/// spanning_all_to_all_estimate over arrays of buffer bytes, ranks and ranks per domain.
void spanning_all_to_all_sweep(const double* bytes, const double* ranks, const double* local,
                               std::size_t n_points, const LinkRates& up, const LinkRates& out,
                               EstimateColumns cols) noexcept;

/// DeepEP's normal-mode (training) exchange kernels, one launch of `rounds` synchronisation
/// rounds (deepseek-ai/DeepEP v1.2.1 `csrc/kernels/intranode.cu` / `internode.cu`). `bytes`: the
/// rows a GPU sends, one per token and destination rank holding one of its experts, times the
/// row's bytes (0 for the notify / barrier kernels, which move a few counts). Within one
/// scale-up domain (local >= ranks) the (p-1)/p share for the other ranks crosses `up` (the
/// rank's own rows stay in its memory); spanning domains of `local` ranks (DeepEP forwards
/// through the GPU of the same index on each node: ranks a multiple of local) a row crosses the
/// NIC once per destination node, `node_share` x bytes with node_share the rows per destination
/// node over the rows per destination rank, (N-1)/N of it to the other N-1 = ranks/local
/// nodes, while the rows for the other ranks of the destination node, (local-1)/local x bytes,
/// are forwarded over `up`, both at once: time = max(nvl / up rate, rdma / out rate) + rounds x
/// up latency (the kernels write to every peer at once: a round is one signal hop, not one
/// step per peer). bytes = nvl + rdma bytes; memory_s the transfer term; 1 kernel.
Estimate deepep_exchange_estimate(double bytes, double ranks, double local, double node_share,
                                  double rounds, const LinkRates& up,
                                  const LinkRates& out) noexcept;

/// deepep_exchange_estimate over arrays of row bytes, ranks and rounds.
void deepep_exchange_sweep(const double* bytes, const double* ranks, const double* rounds,
                           std::size_t n_points, double local, double node_share,
                           const LinkRates& up, const LinkRates& out,
                           EstimateColumns cols) noexcept;

}  // namespace roofline
