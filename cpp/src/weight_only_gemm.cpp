#include "roofline/ops/weight_only_gemm.hpp"

#include <algorithm>
#include <cmath>

namespace roofline {
namespace {

// Launches of Marlin's host loop over m: full 64-row passes go 16 to a launch, and a remainder
// under 64 rows takes a launch of its own (IST-DASLab/marlin marlin_cuda_kernel.cu, marlin_cuda).
double launches(double m) {
  const double full = std::floor(m / kMarlinRowsPerPass);
  const double rest = m - full * kMarlinRowsPerPass > 0 ? 1.0 : 0.0;
  return std::max(std::ceil(full / kMarlinPassesPerLaunch) + rest, 1.0);
}

// Scale groups along k.
double groups(const WeightOnlyGemmShape& s) {
  return s.group_size > 0 ? std::ceil(s.k / s.group_size) : 1.0;
}

// Lane instructions per weight element and pass: unpacking (int4: two lop3 and one shift per
// four values plus a subtract / fused multiply-add per pair, ~1.1; int8: byte permutes and a
// subtract per pair, ~1.0), a per-pair multiply by the group scale (0.5, in the epilogue for
// per-column scales: 0) and a per-pair zero-point subtract (0.5).
constexpr double kUnpackInt4 = 1.125;
constexpr double kUnpackInt8 = 1.0;
constexpr double kPerPair = 0.5;

}  // namespace

Cost weight_only_gemm_cost(const WeightOnlyGemmShape& s) noexcept {
  Cost c;
  c.kind = KernelKind::gemm;
  c.math = peak_class(s.a);
  c.m = s.m;
  c.k = s.k;
  c.n = s.n;
  c.flops = 2.0 * s.m * s.k * s.n;
  const double g = groups(s);
  const double weight = s.k * s.n * s.weight_bits / 8.0 + g * s.n * element_bytes(s.a) +
                        (s.zero_points ? g * s.n * s.weight_bits / 8.0 : 0.0);
  c.kernels = s.kernel == WeightOnlyKernel::marlin ? launches(s.m) : 1.0;
  c.bytes_read = s.m * s.k * element_bytes(s.a) + c.kernels * weight;
  c.bytes_written = s.m * s.n * element_bytes(s.out);
  return c;
}

double weight_only_dequant_ops(const WeightOnlyGemmShape& s) noexcept {
  const double unpack = s.weight_bits <= 4 ? kUnpackInt4 : kUnpackInt8;
  const double per = unpack + (s.group_size > 0 ? kPerPair : 0.0) +
                     (s.zero_points ? kPerPair : 0.0);
  const double rows =
      s.kernel == WeightOnlyKernel::marlin ? kMarlinRowsPerPass : kMacheteRowsPerTile;
  return per * s.k * s.n * std::ceil(s.m / rows);
}

Estimate weight_only_gemm_estimate(const WeightOnlyGemmShape& s, const Rates& rates) noexcept {
  const Cost c = weight_only_gemm_cost(s);
  const double s_per_op = 2.0 * rates.s_per_flop[static_cast<std::size_t>(PeakClass::fp32)];
  const double dequant = std::isfinite(s_per_op) ? weight_only_dequant_ops(s) * s_per_op : 0.0;
  const double sms = std::max(rates.sms, 1.0);
  if (s.kernel == WeightOnlyKernel::machete) {
    // The weight is wgmma's A operand (it is converted in registers): 128 weight columns per
    // CTA (two 64-row warpgroups) against a token tile of 16, 32, 64 or 128 rows (the
    // smallest power of two holding m, from 16); a stream-K schedule spreads the tiles'
    // 64-deep k-blocks over all SMs (at least the library's stream-K utilisation, at most
    // the tiles' own wave fill).
    const double tile_m = std::min(kMacheteRowsPerTile,
                                   std::max(16.0, std::exp2(std::ceil(std::log2(s.m)))));
    const double tiles_m = std::ceil(s.m / tile_m), tiles_n = std::ceil(s.n / 128.0);
    const double tiles = tiles_m * tiles_n;
    const double units = tiles * std::ceil(s.k / 64.0);
    const double util = std::max(tiles / (sms * std::ceil(tiles / sms)), kStreamKUtilisation);
    const double padded = 2.0 * tiles_m * tile_m * s.k * tiles_n * 128.0;
    return estimate_fixed_tile_gemm(c, rates, padded, util, std::min(units, sms), dequant, true);
  }
  // Marlin's tiles: 16-row MMA blocks (up to four per CTA), 128 x 128 (k x n) weight tiles for
  // m <= 16, else 64 x 256; a launch's k-tile iterations are striped evenly over all SMs.
  const bool small = s.m <= 16.0;
  const double tile_k = small ? 128.0 : 64.0, tile_n = small ? 128.0 : 256.0;
  const double work = std::ceil(s.k / tile_k) * std::ceil(s.n / tile_n);
  const double full = std::floor(s.m / kMarlinRowsPerPass);
  double padded = 0.0;  // padded FLOPs over utilisation, summed over launches
  double busy = 0.0;
  for (double done = 0.0; done < full; done += kMarlinPassesPerLaunch) {
    const double par = std::min(kMarlinPassesPerLaunch, full - done);
    const double iters = par * work;
    const double util = iters / (sms * std::ceil(iters / sms));
    padded += 2.0 * par * kMarlinRowsPerPass * s.k * s.n / util;
    busy = std::max(busy, std::min(iters, sms));
  }
  const double rest = s.m - full * kMarlinRowsPerPass;
  if (rest > 0) {
    const double util = work / (sms * std::ceil(work / sms));
    padded += 2.0 * 16.0 * std::ceil(rest / 16.0) * s.k * s.n / util;
    busy = std::max(busy, std::min(work, sms));
  }
  return estimate_fixed_tile_gemm(c, rates, padded, 1.0, busy, dequant, false);
}

Estimate weight_only_grouped_estimate(const WeightOnlyGemmShape& s, const double* counts,
                                      std::size_t n_groups, const Rates& rates) noexcept {
  Cost c;
  c.kind = KernelKind::gemm;
  c.math = peak_class(s.a);
  c.k = s.k;
  c.n = s.n;
  const double g = groups(s);
  const double weight = s.k * s.n * s.weight_bits / 8.0 + g * s.n * element_bytes(s.a) +
                        (s.zero_points ? g * s.n * s.weight_bits / 8.0 : 0.0);
  const double sms = std::max(rates.sms, 1.0);
  // Per expert and 64-row block: 128 x 128 weight tiles (Marlin's small-m tiles).
  const double work = std::ceil(s.k / 128.0) * std::ceil(s.n / 128.0);
  double rows = 0.0, padded = 0.0, units = 0.0, dequant_ops = 0.0;
  WeightOnlyGemmShape one = s;
  one.kernel = WeightOnlyKernel::marlin;
  for (std::size_t e = 0; e < n_groups; ++e) {
    const double m = counts[e];
    if (!(m > 0)) continue;
    rows += m;
    c.bytes_read += m * s.k * element_bytes(s.a) + weight;
    c.bytes_written += m * s.n * element_bytes(s.out);
    padded += 2.0 * 16.0 * std::ceil(m / 16.0) * s.k * s.n;
    units += std::ceil(m / kMarlinRowsPerPass) * work;
    one.m = m;
    dequant_ops += weight_only_dequant_ops(one);
  }
  c.m = std::max(rows, 1.0);
  c.flops = 2.0 * rows * s.k * s.n;
  const double util = units > 0 ? units / (sms * std::ceil(units / sms)) : 1.0;
  const double s_per_op = 2.0 * rates.s_per_flop[static_cast<std::size_t>(PeakClass::fp32)];
  const double dequant = std::isfinite(s_per_op) ? dequant_ops * s_per_op : 0.0;
  return estimate_fixed_tile_gemm(c, rates, padded, util, std::min(std::max(units, 1.0), sms),
                                  dequant, false);
}

void weight_only_grouped_sweep(const double* counts, std::size_t n_groups, const double* k,
                               const double* n, std::size_t n_points,
                               const WeightOnlyGemmShape& formats, const Rates& rates,
                               EstimateColumns out) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    WeightOnlyGemmShape s = formats;
    s.k = k[i];
    s.n = n[i];
    out.set(i, weight_only_grouped_estimate(s, counts + i * n_groups, n_groups, rates));
  }
}

void weight_only_gemm_sweep(const double* m, const double* k, const double* n,
                            std::size_t n_points, const WeightOnlyGemmShape& formats,
                            const Rates& rates, EstimateColumns out) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    WeightOnlyGemmShape s = formats;
    s.m = m[i];
    s.k = k[i];
    s.n = n[i];
    out.set(i, weight_only_gemm_estimate(s, rates));
  }
}

}  // namespace roofline
