#include "roofline/ops/grouped_gemm.hpp"

#include <algorithm>
#include <cmath>

#include "roofline/ops/gemm.hpp"

namespace roofline {
namespace {

GemmShape gemm_of(const GroupedGemmShape& s, double m, double batch) {
  GemmShape g;
  g.m = m;
  g.k = s.k;
  g.n = s.n;
  g.batch = batch;
  g.a = s.a;
  g.b = s.b;
  g.out = s.out;
  g.scaling = s.scaling;
  return g;
}

void write(const Estimate& e, std::size_t i, EstimateColumns& out) {
  out.time_s[i] = e.time_s;
  out.compute_s[i] = e.compute_s;
  out.memory_s[i] = e.memory_s;
  out.overhead_s[i] = e.overhead_s;
  out.flops[i] = e.flops;
  out.bytes[i] = e.bytes;
}

}  // namespace

Cost grouped_gemm_cost(const GroupedGemmShape& s) noexcept {
  return gemm_cost(gemm_of(s, s.m_per_group, s.groups));
}

Cost grouped_gemm_cost(const GroupedGemmShape& s, const double* counts,
                       std::size_t n_groups) noexcept {
  double largest = 0.0;
  for (std::size_t g = 0; g < n_groups; ++g) largest = std::max(largest, counts[g]);
  if (s.layout == GroupedLayout::masked) {
    // One buffer of `capacity` rows per group; the kernel computes all of it.
    const double capacity = std::max(s.m_per_group, largest);
    return gemm_cost(gemm_of(s, capacity, static_cast<double>(n_groups)));
  }
  // Contiguous: the sum of each non-empty group's own GEMM (its rows, its weight, its output).
  Cost c;
  double padded_rows = 0.0;
  for (std::size_t g = 0; g < n_groups; ++g) {
    const double m = counts[g];
    if (m <= 0.0) continue;
    const Cost part = gemm_cost(gemm_of(s, m, 1.0));
    c.flops += part.flops;
    c.bytes_read += part.bytes_read;
    c.bytes_written += part.bytes_written;
    c.math = part.math;
    c.scaling = part.scaling;
    padded_rows += std::ceil(m / kGroupRowAlignment) * kGroupRowAlignment;
  }
  c.kind = KernelKind::gemm;
  c.k = s.k;
  c.n = s.n;
  // The tiles of the kernel are the union of every group's tiles. The tile model of estimate()
  // knows one (batch, m) pair, so the groups are pooled into one GEMM of sum(ceil(m_g / 64) * 64)
  // rows: exact for 64-row tiles, optimistic by less than one tile per group for 128- and
  // 256-row tiles; monotone in every count (equal to the uniform batched GEMM when the counts
  // are equal multiples of 256).
  c.m = std::max(padded_rows, 1.0);
  c.batch = 1.0;
  return c;
}

void grouped_gemm_sweep(const double* m_per_group, const double* k, const double* n,
                        const double* groups, std::size_t n_points, const GroupedGemmShape& formats,
                        const Rates& rates, EstimateColumns out) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    GroupedGemmShape s = formats;
    s.m_per_group = m_per_group[i];
    s.k = k[i];
    s.n = n[i];
    s.groups = groups[i];
    write(estimate(grouped_gemm_cost(s), rates), i, out);
  }
}

void grouped_gemm_counts_sweep(const double* counts, std::size_t n_groups,
                               const double* capacity, const double* k, const double* n,
                               std::size_t n_points, const GroupedGemmShape& formats,
                               const Rates& rates, EstimateColumns out) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    GroupedGemmShape s = formats;
    s.m_per_group = capacity[i];
    s.k = k[i];
    s.n = n[i];
    s.groups = static_cast<double>(n_groups);
    write(estimate(grouped_gemm_cost(s, counts + i * n_groups, n_groups), rates), i, out);
  }
}

}  // namespace roofline
