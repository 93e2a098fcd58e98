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
  g.accumulate = s.accumulate;
  return g;
}

// Rows and columns of one group's C that torch's CUTLASS grouped kernels compute (Hopper,
// aten/src/ATen/native/cuda/GroupMM.cu and ScaledGroupMM.cu): the tile is chosen from the mean
// rows per group M, k and n; CTAs come in clusters (2 x 1 for bf16, 2 x 2 for the rowwise fp8
// kernel) and a cluster is scheduled whole, so each group's rows (and columns) pad to whole
// clusters of tiles. bf16: 64 x 128 tiles when M <= 128 or n <= 128, else 128 x 256. fp8:
// 64 x 128 when small, 256 x 128 when two of M, k, n are >= 2048 (fast accumulation), else
// 128 x 256.
// torch ships grouped kernels for 16-bit inputs (torch._grouped_mm) and rowwise-scaled fp8
// (torch._scaled_grouped_mm); other formats are modelled as a tuned grouped kernel
// (DeepGEMM-style) whose groups pad to 64-row tiles.
// vLLM / SGLang's Triton fused_moe (GroupedLayout::fused_moe) is a tuned kernel of its own.
bool torch_kernel(const GroupedGemmShape& s) {
  if (s.layout == GroupedLayout::fused_moe) return false;
  const PeakClass c = peak_class(s.a);
  return c == PeakClass::bf16 || (c == PeakClass::fp8 && s.scaling == Scaling::rowwise);
}

struct ClusterTile {
  double rows, cols;  // a cluster's rows and columns of C
};

ClusterTile cluster_tile(const GroupedGemmShape& s, double mean_rows) {
  const bool small = mean_rows <= 128.0 || s.n <= 128.0;
  if (s.layout == GroupedLayout::fused_moe) return {kFusedMoeBlockRows, 1.0};
  if (!torch_kernel(s)) return {kGroupRowAlignment, 1.0};
  if (peak_class(s.a) != PeakClass::fp8) {
    return small ? ClusterTile{2 * 64.0, 128.0} : ClusterTile{2 * 128.0, 256.0};
  }
  const bool large = (mean_rows >= 2048.0 && s.k >= 2048.0) ||
                     (mean_rows >= 2048.0 && s.n >= 2048.0) || (s.k >= 2048.0 && s.n >= 2048.0);
  if (small) return {2 * 64.0, 2 * 128.0};
  if (large) return {2 * 256.0, 2 * 128.0};
  return {2 * 128.0, 2 * 256.0};
}

double pad(double x, double to) { return std::ceil(x / to) * to; }

}  // namespace

Cost grouped_gemm_cost(const GroupedGemmShape& s) noexcept {
  Cost c = gemm_cost(gemm_of(s, s.m_per_group, s.groups));
  c.grouped = torch_kernel(s);
  // The tile model sees each group padded to whole clusters of tiles (FLOPs and bytes stay
  // the real ones).
  const ClusterTile t = cluster_tile(s, s.m_per_group);
  c.m = pad(s.m_per_group, t.rows);
  c.n = pad(s.n, t.cols);
  return c;
}

Cost grouped_gemm_cost(const GroupedGemmShape& s, const double* counts,
                       std::size_t n_groups) noexcept {
  double largest = 0.0;
  for (std::size_t g = 0; g < n_groups; ++g) largest = std::max(largest, counts[g]);
  if (s.layout == GroupedLayout::masked) {
    // One buffer of `capacity` rows per group; the kernel computes all of it.
    const double capacity = std::max(s.m_per_group, largest);
    GroupedGemmShape u = s;
    u.m_per_group = capacity;
    u.groups = static_cast<double>(n_groups);
    return grouped_gemm_cost(u);
  }
  double total = 0.0;
  for (std::size_t g = 0; g < n_groups; ++g) total += std::max(counts[g], 0.0);
  const ClusterTile t = cluster_tile(s, total / static_cast<double>(n_groups));
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
    padded_rows += pad(m, t.rows);
  }
  c.kind = KernelKind::gemm;
  c.grouped = torch_kernel(s);
  c.fused_moe = s.layout == GroupedLayout::fused_moe;
  c.k = s.k;
  c.n = pad(s.n, t.cols);
  // The tiles of the kernel are the union of every group's tiles. The tile model of estimate()
  // knows one (batch, m) pair, so the groups are pooled into one GEMM of the sum of each
  // group's rows padded to whole clusters of tiles (cluster_tile); monotone in every count
  // except where a count crosses torch's tile-size rule.
  c.m = std::max(padded_rows, 1.0);
  c.batch = 1.0;
  return c;
}

Estimate looped_gemms(const GroupedGemmShape& s, const double* counts, std::size_t n_groups,
                      const Rates& rates) noexcept {
  Estimate serial;
  const bool wgrad = s.layout == GroupedLayout::looped_wgrad;
  double rows = 0.0, used = 0.0;
  for (std::size_t g = 0; g < n_groups; ++g) {
    const double m = counts[g];
    if (m <= 0.0) continue;
    rows += m;
    used += 1.0;
    GemmShape one = gemm_of(s, m, 1.0);
    if (wgrad) {  // dB_g = A_g^T dC_g: k rows of output, the group's tokens are the reduction
      one.m = s.k;
      one.k = m;
      one.a_transposed = true;  // A_g^T is a view of the saved rows
    }
    serial += estimate(gemm_cost(one), rates);
  }
  if (used <= 0.0 || serial.time_s <= 0.0) return serial;
  // The GEMMs go round-robin to kLoopedGemmStreams streams, so up to that many run at once:
  // never faster than one kernel holding every group's tiles (the union), nor than the serial
  // sum spread evenly over the streams.
  // The union: one batched GEMM of the same FLOPs (`used` groups of the mean rows).
  GemmShape b = gemm_of(s, rows / used, used);
  if (wgrad) {
    b.m = s.k;
    b.k = rows / used;
    b.a_transposed = true;
  }
  const Cost union_cost = gemm_cost(b);
  const double together = estimate(union_cost, rates).time_s;
  const double streams = std::min(kLoopedGemmStreams, used);
  const double time = std::max(together, serial.time_s / streams);
  if (time >= serial.time_s) return serial;
  const double scale = time / serial.time_s;  // the overlap shortens every term alike
  Estimate e = serial;
  e.time_s = time;
  e.compute_s *= scale;
  e.memory_s *= scale;
  e.overhead_s *= scale;
  return e;
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
    out.set(i, estimate(grouped_gemm_cost(s), rates));
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
    const double* c = counts + i * n_groups;
    if (s.layout == GroupedLayout::looped || s.layout == GroupedLayout::looped_wgrad) {
      out.set(i, looped_gemms(s, c, n_groups, rates));
      continue;
    }
    out.set(i, estimate(grouped_gemm_cost(s, c, n_groups), rates));
  }
}

}  // namespace roofline
