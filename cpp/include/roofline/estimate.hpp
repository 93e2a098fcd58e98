#pragma once
#include <array>
#include <cstddef>

#include "roofline/cost.hpp"
#include "roofline/efficiency.hpp"
#include "roofline/hardware.hpp"
#include "roofline/lanes.hpp"

namespace roofline {

/// Time of a cost on a hardware, with its parts; sums of estimates are estimates. T is the
/// number type: double (one shape) or Lanes (eight shapes).
template <class T>
struct EstimateT {
  T time_s = 0;      ///< predicted time
  T compute_s = 0;   ///< flops / achievable FLOP/s (after tile and wave quantization)
  T memory_s = 0;    ///< bytes / achievable bytes/s
  T overhead_s = 0;  ///< time above max(compute_s, memory_s): floors, latency, imperfect overlap
  T flops = 0;       ///< floating-point operations
  T bytes = 0;       ///< DRAM bytes read + written
  T kernels = 0;     ///< kernel launches

  /// Adds another estimate field by field (sequential kernels).
  EstimateT& operator+=(const EstimateT& o) noexcept;
};

/// The estimate of one kernel of one shape.
using Estimate = EstimateT<double>;
/// EstimateT of one shape (instantiated in estimate.cpp).
extern template struct EstimateT<double>;
/// EstimateT of eight shapes (instantiated in estimate.cpp).
extern template struct EstimateT<Lanes>;

/// Reciprocals of the GEMM library terms (efficiency.gemm), computed once per Rates: the GEMM
/// search needs them per shape, and 1 / x computed once has the bits it has per call.
struct GemmScales {
  std::array<std::array<double, 2>, 2> compute{{{1.0, 1.0}, {1.0, 1.0}}};  ///< [8-bit][unaligned]
  std::array<double, 2> memory{1.0, 1.0};  ///< 1 / memory_fraction [unaligned]
  std::array<double, 2> compute_base{1.0, 1.0};  ///< 1 / compute_scale_{16, 8} alone [8-bit]
};

/// 32-bit integer lanes per SM (or CU) per clock: 4 sub-partitions x 16 INT32 lanes on NVIDIA
/// Volta through Blackwell (integer multiply-adds issue at the same rate).
inline constexpr double kIntLanesPerSm = 64.0;

/// Lane instructions an SM issues per clock: 4 schedulers x one 32-lane warp instruction on
/// NVIDIA Volta through Blackwell (an SFU instruction takes one issue slot like any other).
inline constexpr double kIssueLanesPerSm = 128.0;

/// Achievable rates of a hardware under an efficiency model (reciprocals, computed once).
struct Rates {
  std::array<double, kPeakClassCount> s_per_flop{};  ///< 1 / (peak * compute_fraction) per class
  double s_per_byte = 0;                              ///< 1 / (bandwidth * memory_fraction)
  double kernel_floor_s = 0;                          ///< minimum time of one kernel
  double sms = 0;                                     ///< SMs (0 = unknown: no wave model)
  double s_per_byte_per_sm = 0;                       ///< 1 / (bandwidth one SM sustains)
  double s_per_int_op = 0;  ///< 1 / (SMs x clock x kIntLanesPerSm): 32-bit integer instructions
                            ///< (0 when the SMs or the clock are unknown)
  double s_per_lane_op = 0;  ///< 1 / (SMs x clock x kIssueLanesPerSm): issued lane instructions
                             ///< (0 when the SMs or the clock are unknown)
  Efficiency eff{};                                   ///< the model's switches and constants
  GemmScales gemm_scales{};                           ///< GEMM library reciprocals

  /// Rates of `hw` under `eff`.
  Rates(const Hardware& hw, const Efficiency& eff) noexcept;
};

/// Utilisation of stream-K schedules, which split the K loop of the last wave's tiles across
/// all SMs instead of leaving SMs idle (a fix-up pass costs a few percent).
inline constexpr double kStreamKUtilisation = 0.92;

/// Tiles the shape-aware GEMM search chooses from (CTA extents along m and n).
constexpr std::size_t kGemmTileCount = 12;

/// The dtype- and k-free part of the GEMM tile search for one output extent (m x n, batch) on
/// one SM count: per tile its count, padded FLOPs over k and utilisation x reuse, and the tiles
/// whose unsplit time can be the least (the others exceed it by far more than rounding for
/// every k and rate). GEMMs sharing the extent (a linear's bf16 and low-precision GEMMs) share it.
struct GemmTiles {
  // Filled when built (left uninitialized: a memo entry is built on its first use).
  double m, n, batch, sms;   ///< the extent and SM count it was built for
  double stream_k;           ///< the kernels' stream-K utilisation floor it was built for
  double min_tile_n;         ///< the kernels' narrowest tile (columns) it was built for
  bool has_candidates;       ///< candidates chosen (uncapped bandwidth)
  std::size_t count;         ///< entries of `candidates`
  std::array<double, 3> tiles_m;                ///< ceil(m / Tm) per distinct Tm
  std::array<double, 4> tiles_n;                ///< ceil(n / Tn) per distinct Tn
  std::array<double, kGemmTileCount> tiles;     ///< batch x tiles along m x along n
  std::array<double, kGemmTileCount> padded;    ///< 2 batch (tiles_m Tm) (tiles_n Tn)
  std::array<double, kGemmTileCount> denom;     ///< unsplit utilisation x reuse (candidates)
  std::array<unsigned char, kGemmTileCount> candidates;  ///< tiles that may win unsplit
  std::array<unsigned char, kGemmTileCount> split;  ///< tiles leaving SMs idle (split-K)
  std::size_t split_count;                      ///< entries of `split`
};

/// GemmTiles a GemmMemo keeps per shape of a batch (a linear's GEMMs have three extents).
constexpr std::size_t kGemmMemoWays = 4;

/// The last few GemmTiles built (round robin), for GEMMs on one Rates evaluated in a row: one
/// round robin of kGemmMemoWays tables per lane of a Lanes batch (gemm_lane_times evaluates a
/// kernel lane by lane, and each lane's GEMMs reuse that lane's tables); lane 0 otherwise.
struct GemmMemo {
  std::array<GemmTiles, kGemmMemoWays * kLaneCount> entries;  ///< lane i: [4 i, 4 i + 4)
  std::size_t lane = 0;                            ///< the lane whose tables lookups use
  std::array<std::size_t, kLaneCount> filled{};    ///< tables built so far, per lane
  std::array<std::size_t, kLaneCount> next{};      ///< table the next miss overwrites, per lane
};

/// The shape-aware model of one kernel (GEMM, attention and streaming kinds; plain otherwise).
Estimate estimate_shape_aware(const Cost& cost, const Rates& rates) noexcept;

/// estimate_shape_aware() reusing the GEMM tile tables of `memo` (same result, bit for bit).
Estimate estimate_shape_aware(const Cost& cost, const Rates& rates, GemmMemo& memo) noexcept;

/// The plain model of one kernel: max(compute, memory, kernels x floor), on T = double or Lanes
/// (each lane bit for bit the double result).
template <class T>
inline T plain_time(const CostT<T>& cost, const Rates& rates) noexcept;

template <class T>
inline EstimateT<T> estimate_plain(const CostT<T>& cost, const Rates& rates) noexcept {
  EstimateT<T> e;
  e.flops = cost.flops;
  e.bytes = cost.bytes();
  e.kernels = cost.kernels;
  e.compute_s = cost.flops * rates.s_per_flop[static_cast<std::size_t>(cost.math)];
  e.memory_s = e.bytes * rates.s_per_byte;
  const T roof = larger(e.compute_s, e.memory_s);
  const T floor_s = cost.kernels * rates.kernel_floor_s;
  e.time_s = larger(roof, floor_s);
  e.overhead_s = e.time_s - roof;
  return e;
}

/// estimate_plain(cost, rates).time_s alone (the same operations, so the same bits), for
/// sweeps that keep only the time.
template <class T>
inline T plain_time(const CostT<T>& cost, const Rates& rates) noexcept {
  const T compute = cost.flops * rates.s_per_flop[static_cast<std::size_t>(cost.math)];
  const T memory = cost.bytes() * rates.s_per_byte;
  const T roof = larger(compute, memory);
  const T floor_s = cost.kernels * rates.kernel_floor_s;
  return larger(roof, floor_s);
}

/// Time of one kernel. Plain model: max(compute, memory, kernels x floor). Shape-aware model:
/// GEMMs pick the best tile (tile + wave quantization, split-K), DRAM bandwidth is capped by
/// the SMs in use, compute and memory combine as a p-norm, and a fixed latency is added.
/// (The plain path is inline: sweeps call it once per kernel per shape.)
inline Estimate estimate(const Cost& cost, const Rates& rates) noexcept {
  if (rates.eff.shape_aware && cost.kind != KernelKind::generic) {
    return estimate_shape_aware(cost, rates);
  }
  return estimate_plain(cost, rates);
}

/// estimate() for kernels evaluated in a row on one Rates: GEMMs sharing an output extent
/// share their tile tables through `memo` (same result as estimate(), bit for bit).
inline Estimate estimate(const Cost& cost, const Rates& rates, GemmMemo& memo) noexcept {
  if (rates.eff.shape_aware && cost.kind != KernelKind::generic) {
    return estimate_shape_aware(cost, rates, memo);
  }
  return estimate(cost, rates);
}

/// Shape-aware time of a GEMM whose kernel fixes its own tiling (Marlin, Machete):
/// `padded_flops` at the tensor rate over `utilisation` of the SMs (library terms of `cost`
/// applied) and `extra_compute_s` of non-tensor work (dequantization), added to it when the
/// two compete for issue slots (mma.sync) or the larger of the two when it `overlaps` the
/// asynchronous MMAs (wgmma), against `cost.bytes()` streamed by `busy_sms` SMs; compute and
/// memory combine as a p-norm and the library's fixed time per call is added. Plain presets
/// (or no SM count): estimate_plain(cost).
Estimate estimate_fixed_tile_gemm(const Cost& cost, const Rates& rates, double padded_flops,
                                  double utilisation, double busy_sms, double extra_compute_s,
                                  bool overlaps) noexcept;

/// Cost of lane `i` of eight costs (the uniform fields and lane i of each number).
Cost lane_cost(const CostT<Lanes>& c, std::size_t i) noexcept;

/// Times of one kernel of 8 shapes, each lane bit for bit estimate(lane_cost(c, i), rates,
/// memo).time_s: plain and streaming (kind == memory) kernels on all lanes at once, shape-aware
/// GEMMs lane by lane with their library terms built once, shape-aware attention lane by lane.
Lanes estimate_lane_times(const CostT<Lanes>& c, const Rates& rates, GemmMemo& memo) noexcept;

/// estimate() with the GEMM search evaluating every (tile, split-K) configuration: the
/// reference the pruned search must equal bit for bit (tests and benchmarks only).
Estimate estimate_exhaustive(const Cost& cost, const Rates& rates) noexcept;

/// Compute time of a library GEMM that runs inside a continuous stream of tensor work (a
/// training step) instead of alone. `compute_s` is its compute time as a kernel run alone,
/// at the clock f + (1 - f) tau / (tau + t) of its full-clock time t (GemmTerms'
/// throttle_fraction f and throttle_time_s tau); under continuous load the power limiter
/// holds the clock at f, so the time is t / f, t being the positive root of
/// t^2 + (tau - f compute_s) t - compute_s tau = 0. `compute_s` when f >= 1, f <= 0 or tau <= 0.
double sustained_compute_s(double compute_s, double f, double tau) noexcept;

/// Time of that GEMM: `time_s` (its compute and memory combined as a p-norm of exponent `p`,
/// plus its fixed time per call) with the compute term replaced by sustained_compute_s.
double sustained_gemm_time_s(double time_s, double compute_s, double memory_s, double f,
                             double tau, double p) noexcept;

/// Load the power limiter sees at a moment: the busy fraction of the `window_s` before it, the
/// part of the window before the trace's first kernel (`window_s - since_start_s` when
/// positive) counted at `prior_load`; `busy_s` is the busy time inside the window after that
/// start. (busy_s + prior_load max(0, window_s - since_start_s)) / window_s, clamped to [0, 1].
double limiter_load(double busy_s, double since_start_s, double window_s,
                    double prior_load) noexcept;

/// Compute time of a GEMM whose clock follows the power limiter's load L in [0, 1]: the clock
/// is 1 - (1 - f) L of full (f = throttle_fraction, the settled floor), so the time is
/// t / (1 - (1 - f) L), t = f sustained_compute_s(compute_s, f, tau) its full-clock time;
/// L = 1 gives sustained_compute_s, L = 0 the boost clock. `compute_s` as sustained_compute_s.
double limited_compute_s(double compute_s, double f, double tau, double load) noexcept;

/// Time of that GEMM: `time_s` (compute and memory combined as a p-norm of exponent `p`, plus
/// its fixed time per call) with the compute term replaced by limited_compute_s.
double limited_gemm_time_s(double time_s, double compute_s, double memory_s, double f,
                           double tau, double p, double load) noexcept;

/// Same as estimate(cost, Rates(hw, eff)).
Estimate estimate(const Cost& cost, const Hardware& hw, const Efficiency& eff) noexcept;

}  // namespace roofline
