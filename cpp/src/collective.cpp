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
    const Estimate e = collective_estimate(collective_cost(op, algo, bytes[i], ranks[i]), link);
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

}  // namespace roofline
