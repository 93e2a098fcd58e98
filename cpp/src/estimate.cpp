#include "roofline/estimate.hpp"

#include "roofline/ops/attention.hpp"  // kDropoutIntOps, kAttentionQueryTile
#include "roofline/ops/grouped_gemm.hpp"  // kFusedMoeComputeFraction

#include <algorithm>
#include <cmath>

namespace roofline {
namespace {

// ceil(x) for x >= 0, exactly as std::ceil, without a libm call (x86-64's baseline ISA has no
// rounding instruction, and the GEMM search rounds a dozen times per tile). From 2^52 on, x is
// whole (and beyond 2^63 it would not fit the integer conversion: tile counts of 2^53-row GEMMs
// reach 2^94).
inline double ceil_pos(double x) {
  if (!(x < 4503599627370496.0)) return x;
  const double t = static_cast<double>(static_cast<long long>(x));
  return t < x ? t + 1.0 : t;
}

// A CTA tile of a GEMM: rows and columns of C it computes.
struct Tile {
  double m, n;
};

// Tiles a tuned library (cuBLAS / CUTLASS / DeepGEMM) chooses from on current GPUs.
constexpr std::array<Tile, 12> kTiles{{
    {64, 64}, {64, 128}, {64, 192}, {64, 256},
    {128, 64}, {128, 128}, {128, 192}, {128, 256},
    {256, 64}, {256, 128}, {256, 192}, {256, 256},
}};

// Columns of the widest tile above.
constexpr double kWidestTileN = 256.0;

// Operand reuse of a tile (FLOPs per byte loaded, up to a constant): m*n / (m + n). Tiles at
// or above that of 128x128 keep the tensor cores fed; smaller ones run proportionally slower.
constexpr double kFullReuse = 128.0 * 128.0 / 256.0;


// Split-K factors a library may use when tiles leave SMs idle (each slice writes fp32 partial
// sums that a reduction reads back, so large factors only pay off for long K).
constexpr std::array<double, 5> kSplits{1, 2, 4, 8, 16};

double combine(double a, double b, double p) {
  if (p <= 0.0) return std::max(a, b);
  const double hi = std::max(a, b);
  if (hi <= 0.0) return 0.0;
  const double x = a / hi, y = b / hi;
  if (p == 4.0) return hi * std::sqrt(std::sqrt(x * x * x * x + y * y * y * y));  // fast path
  return hi * std::pow(std::pow(x, p) + std::pow(y, p), 1.0 / p);
}

// An estimate holding what its cost fixes (FLOPs, DRAM bytes, launches), times zero. Each model
// below starts from one and returns it (a named local: built in the caller's result, where a
// by-value parameter would be copied out with wide loads of just-stored fields, which stall).
template <class T>
EstimateT<T> counted(const CostT<T>& c) {
  EstimateT<T> e;
  e.flops = c.flops;
  e.bytes = c.bytes();
  e.kernels = c.kernels;
  return e;
}

// DRAM time when only `busy` SMs issue loads.
double memory_time(double bytes, double busy, const Rates& r) {
  double s_per_byte = r.s_per_byte;
  if (r.s_per_byte_per_sm > 0 && busy > 0) {
    s_per_byte = std::max(s_per_byte, r.s_per_byte_per_sm / busy);
  }
  return bytes * s_per_byte;
}

// The terms (GemmTerms) that apply to a GEMM: the library terms (cuBLAS / CUTLASS) for
// unscaled, tensorwise- and rowwise-scaled inputs; none for block-scaled formats (DeepGEMM-
// style kernels, whose latency and overlap calibrate.py fits on their own profiler times).
// All zero = the idealized model.
struct LibraryGemm {
  double compute_scale = 1.0;  // 1 / sustained fraction of the achievable tensor rate
  double memory_scale = 1.0;   // 1 / fraction of the streaming bandwidth for operand traffic
  double latency_s = 0.0;      // fixed time of one call
  double throttle = 1.0;       // sustained clock fraction under continuous tensor load
  double throttle_time_s = 0.0;  // time constant of the clock drop
  double max_splits = 16.0;    // largest split-K factor
  double min_tile_n = 0.0;     // narrowest CTA tile (columns of C) the kernels have
  // Utilisation floor of a stream-K schedule over several waves (0: data-parallel tiles only).
  double stream_k = kStreamKUtilisation;
};

// Bytes of one input element of a GEMM computing at peak class `c` (bf16/fp16: 2, fp32/tf32:
// 4, 8-bit: 1, fp4: 0.5).
double input_bytes(PeakClass c) {
  switch (c) {
    case PeakClass::fp64: return 8.0;
    case PeakClass::fp32: case PeakClass::tf32: return 4.0;
    case PeakClass::bf16: return 2.0;
    case PeakClass::fp4: return 0.5;
    default: return 1.0;
  }
}

// Whether a GEMM's operand rows are 16-byte multiples, which TMA can move (x / 16 and its
// floor are exact for integral byte counts). A row is the contiguous extent of an operand's
// layout: k for A stored m x k and for F.linear's weight (B = W^T, W stored n x k), n for C;
// m for A stored k x m (a_transposed: X^T of a weight gradient dW = X^T dY, whose K extent is
// the tokens and sets no stride, so K need not be aligned there).
bool aligned_rows(const Cost& c) {
  const double e = input_bytes(c.math);
  auto multiple_of_16 = [](double x) { return x / 16.0 == static_cast<double>(
                                           static_cast<long long>(x / 16.0)); };
  return multiple_of_16((c.a_transposed ? c.m : c.k) * e) && multiple_of_16(c.n * e);
}

// The library terms of GEMM `c`, whose operand rows are `aligned` (aligned_rows) or not.
LibraryGemm library_gemm(const Cost& c, const Rates& r, bool aligned) {
  const GemmTerms& g = r.eff.gemm;
  LibraryGemm lib;
  lib.latency_s = r.eff.gemm_latency_s;
  // Kernel-promoted 1x128 / 128x128 scales (DeepGEMM-style) have their own fitted terms;
  // microscaled MMA runs in the library as per-tensor fp8 does (same tensor rate, same clock).
  if (c.scaling == Scaling::blockwise) return lib;
  if (g.throttle_fraction > 0 && g.throttle_time_s > 0) {
    lib.throttle = g.throttle_fraction;
    lib.throttle_time_s = g.throttle_time_s;
  }
  const bool low_bits = c.math == PeakClass::fp8 || c.math == PeakClass::int8 ||
                        c.math == PeakClass::fp4;
  const GemmScales& k = r.gemm_scales;
  if (g.latency_s > 0) lib.latency_s = g.latency_s;
  const bool grouped_scale = c.grouped && g.grouped_compute_fraction > 0;
  if (c.grouped) {
    // torch's CUTLASS grouped kernels: a setup kernel (per-group pointers and problem sizes)
    // before the GEMM, and their own fixed tiles (see grouped_gemm.cpp).
    if (g.grouped_latency_s > 0) lib.latency_s = g.grouped_latency_s;
  }
  if (c.scaling == Scaling::rowwise) {
    lib.latency_s += g.rowwise_latency_s;
    if (g.rowwise_max_splits > 0) lib.max_splits = g.rowwise_max_splits;
    // An epilogue that scales the finished accumulator cannot take a tile whose K loop is
    // shared between CTAs: without split-K there is no stream-K either, the last wave of
    // tiles leaves SMs idle (wave quantisation).
    if (lib.max_splits <= 1.0) lib.stream_k = 0.0;
    lib.min_tile_n = std::min(g.rowwise_min_tile_n, kWidestTileN);  // some tile stays
  }
  // Operands whose rows are not 16-byte multiples cannot be moved by TMA: the library falls
  // back to kernels with narrow loads.
  const std::size_t slow = !aligned && g.unaligned_fraction > 0 ? 1 : 0;
  lib.memory_scale = k.memory[slow];
  if (grouped_scale) {  // 1 / scale / grouped fraction [/ unaligned fraction], in that order
    lib.compute_scale = k.compute_base[low_bits ? 1 : 0] / g.grouped_compute_fraction;
    if (slow) lib.compute_scale /= g.unaligned_fraction;
  } else if (c.fused_moe && g.grouped_compute_fraction > 0) {  // Triton fused_moe: its rate
    lib.compute_scale = k.compute_base[low_bits ? 1 : 0] / kFusedMoeComputeFraction;
    if (slow) lib.compute_scale /= g.unaligned_fraction;
  } else {
    lib.compute_scale = k.compute[low_bits ? 1 : 0][slow];
  }
  return lib;
}

// The library terms of GEMM `c`.
LibraryGemm library_gemm(const Cost& c, const Rates& r) {
  return library_gemm(c, r, aligned_rows(c));
}

// DRAM time of a library GEMM whose `busy` SMs issue the loads.
double library_memory_time(double bytes, double busy, const Rates& r, const LibraryGemm& lib) {
  return memory_time(bytes, busy, r) * lib.memory_scale;
}

// Compute time of a kernel at full clock `t`, stretched by the power limiter's clock drop:
// clock = f + (1 - f) * tau / (tau + t) (full clock for short kernels, f for long ones).
double throttled(double t, const LibraryGemm& lib) {
  if (lib.throttle >= 1.0 || lib.throttle_time_s <= 0) return t;
  const double tau = lib.throttle_time_s;
  return t / (lib.throttle + (1.0 - lib.throttle) * tau / (tau + t));
}

// The estimate of the winning GEMM configuration: its time plus the library's fixed time per
// kernel, never under the kernel floor; overhead is what exceeds the slower of the two rates.
Estimate finish_gemm(double best_time, double best_compute, double best_memory,
                     const Cost& c, const Rates& r, const LibraryGemm& lib) {
  Estimate e = counted(c);
  e.compute_s = best_compute;
  e.memory_s = best_memory;
  e.time_s = std::max(best_time + c.kernels * lib.latency_s, c.kernels * r.kernel_floor_s);
  e.overhead_s = e.time_s - std::max(e.compute_s, e.memory_s);
  return e;
}

// The reference search: every (tile, split-K) configuration evaluated in full. shaped_gemm
// returns the same estimate (bit for bit) and skips configurations that cannot win.
Estimate shaped_gemm_exhaustive(const Cost& c, const Rates& r) {
  const LibraryGemm lib = library_gemm(c, r);
  const double bytes = c.bytes();
  const double s_per_flop = r.s_per_flop[static_cast<std::size_t>(c.math)] * lib.compute_scale;
  const double sms = r.sms;
  // Without a per-SM bandwidth cap, every unsplit configuration moves the same bytes at the
  // same rate, so the fastest of them is the one with the least compute (the p-norm is
  // monotone in each term): track it and combine once. Split-K configurations differ in
  // traffic and are evaluated in full. Same result as evaluating every configuration.
  const bool uncapped = r.s_per_byte_per_sm <= 0;
  const double unsplit_memory = library_memory_time(bytes, sms, r, lib);
  double least_unsplit_compute = INFINITY;
  double best_time = INFINITY, best_compute = 0, best_memory = 0;
  // The best (tile, split-K) configuration, as a tuned library would pick it. Each
  // configuration's time is non-decreasing in m, n, k and batch, so their minimum is too.
  for (const Tile& t : kTiles) {
    if (t.n < lib.min_tile_n) continue;
    const double tiles_m = std::ceil(c.m / t.m);
    const double tiles_n = std::ceil(c.n / t.n);
    const double tiles = c.batch * tiles_m * tiles_n;
    const double reuse = std::min(1.0, t.m * t.n / (t.m + t.n) / kFullReuse);
    const double padded_flops = 2.0 * c.batch * tiles_m * t.m * tiles_n * t.n * c.k;
    for (const double splits : kSplits) {
      // Split-K fills SMs that the tiles leave idle; never worth it with a full wave.
      if (splits > 1.0 && (tiles >= sms || splits > lib.max_splits)) break;
      const double units = tiles * splits;
      const double waves = std::ceil(units / sms);
      double utilisation = units / (waves * sms);
      if (units > sms) utilisation = std::max(utilisation, lib.stream_k);
      const double compute = throttled(padded_flops * s_per_flop / (utilisation * reuse), lib);
      if (splits == 1.0 && uncapped) {
        least_unsplit_compute = std::min(least_unsplit_compute, compute);
        continue;
      }
      const double partials = splits > 1.0 ? 2.0 * 4.0 * c.batch * c.m * c.n * splits : 0.0;
      // Compute and DRAM traffic overlap imperfectly: a p-norm is max-like when one term
      // dominates and sum-like when both saturate (short-K GEMMs writing a large C show it).
      const double memory =
          library_memory_time(bytes + partials, std::min(units, sms), r, lib);
      const double time = combine(compute, memory, r.eff.overlap_p);
      if (time < best_time) {
        best_time = time;
        best_compute = compute;
        best_memory = memory;
      }
    }
  }
  if (uncapped) {
    const double time = combine(least_unsplit_compute, unsplit_memory, r.eff.overlap_p);
    if (time <= best_time) {
      best_time = time;
      best_compute = least_unsplit_compute;
      best_memory = unsplit_memory;
    }
  }
  return finish_gemm(best_time, best_compute, best_memory, c, r, lib);
}

// Operand reuse of each tile relative to 128x128, capped at 1 (see kFullReuse).
constexpr std::array<double, kTiles.size()> tile_reuse() {
  std::array<double, kTiles.size()> out{};
  for (std::size_t i = 0; i < kTiles.size(); ++i) {
    const double v = kTiles[i].m * kTiles[i].n / (kTiles[i].m + kTiles[i].n) / kFullReuse;
    out[i] = v < 1.0 ? v : 1.0;
  }
  return out;
}
constexpr std::array<double, kTiles.size()> kTileReuse = tile_reuse();

// 1 / reuse of each tile, rounded down a little: x * kInvReuseLow[i] <= x / kTileReuse[i].
constexpr std::array<double, kTiles.size()> inv_reuse_low() {
  std::array<double, kTiles.size()> out{};
  for (std::size_t i = 0; i < kTiles.size(); ++i) out[i] = (1.0 / kTileReuse[i]) * (1.0 - 1e-12);
  return out;
}
constexpr std::array<double, kTiles.size()> kInvReuseLow = inv_reuse_low();

// Each tile's area over its reuse (Tm Tn / reuse): raw compute per wave slot, up to 2 k s_per_flop.
constexpr std::array<double, kTiles.size()> tile_area() {
  std::array<double, kTiles.size()> out{};
  for (std::size_t i = 0; i < kTiles.size(); ++i) out[i] = kTiles[i].m * kTiles[i].n / kTileReuse[i];
  return out;
}
constexpr std::array<double, kTiles.size()> kTileArea = tile_area();

// A configuration is skipped only when a lower bound of its time exceeds the best time so far
// by this relative margin, far above the few ulps by which rounding can reorder the bound and
// the time: the pruned search picks exactly the configuration the exhaustive one picks.
constexpr double kPruneMargin = 1.0 + 1e-9;

// The combine() of the default model's p = 4, inlined (the search calls it per configuration).
inline double combine_fast(double a, double b, double p) {
  if (p != 4.0) return combine(a, b, p);
  const double hi = std::max(a, b);
  if (hi <= 0.0) return 0.0;
  if (!(hi < INFINITY)) return combine(a, b, p);
  // The larger term over hi is exactly 1 (x / x == 1 for finite x > 0): one division.
  const double y = std::min(a, b) / hi;
  const double y4 = y * y * y * y;
  return hi * std::sqrt(std::sqrt(1.0 + y4));
}

// A GEMM configuration as the search compares it: its compute before the clock model (`raw`),
// its DRAM time and its rank key (Ranker::key; infinite: none chosen yet).
struct Pick {
  double key = INFINITY, raw = 0, memory = 0;
  bool set = false;
};

// Orders GEMM configurations by combined time without computing it. key() is a monotone
// transform of combine(throttled(raw), memory, p) up to a relative `slack`: for p = 4 the fourth
// power c^4 + memory^4, with the clock model's two chained divisions merged into one (a few ulps
// off the exact c); otherwise the time itself (slack 0). Keys further apart than the slack order
// the exact times the same way; closer ones (near-ties) and keys outside [kKeyMin, kKeyMax]
// (where fourth powers lose precision) are settled by the exact times, so the search picks the
// configuration, and returns the time, that evaluating every time exactly would, bit for bit.
struct Ranker {
  static constexpr double kKeyMin = 1e-290, kKeyMax = 1e290;
  const LibraryGemm& lib;
  double p;
  bool fourth = p == 4.0;
  double slack = fourth ? 1e-12 : 0.0;
  // Pruning margin on keys: kPruneMargin on times, its fourth power on fourth powers.
  double prune = fourth ? kPruneMargin * kPruneMargin * kPruneMargin * kPruneMargin
                        : kPruneMargin;

  // The rank key of compute `c` (after the clock model) and DRAM time `memory`.
  double key_of(double c, double memory) const {
    if (!fourth) return combine_fast(c, memory, p);
    const double c2 = c * c, m2 = memory * memory;
    return c2 * c2 + m2 * m2;
  }
  // The rank key of raw compute `raw` (before the clock model) and DRAM time `memory`.
  double key(double raw, double memory) const {
    if (!fourth) return key_of(throttled(raw, lib), memory);
    if (lib.throttle >= 1.0 || lib.throttle_time_s <= 0) return key_of(raw, memory);
    // t / (f + (1 - f) tau / (tau + t)) = t (tau + t) / (f (tau + t) + (1 - f) tau).
    const double tau = lib.throttle_time_s, span = tau + raw;
    const double c = raw * span / (lib.throttle * span + (1.0 - lib.throttle) * tau);
    return key_of(c, memory);
  }
  // The exact compute of a pick (after the clock model).
  double compute(const Pick& a) const { return throttled(a.raw, lib); }
  // The exact combined time of a pick (infinite when none is chosen).
  double time(const Pick& a) const {
    return a.set ? combine_fast(compute(a), a.memory, p) : INFINITY;
  }
  // True when `a` takes less time than `b` (or, with `ties`, no more), as the exact times say.
  bool before(const Pick& a, const Pick& b, bool ties) const {
    if (a.key >= kKeyMin && a.key <= kKeyMax) {
      if (a.key < b.key * (1.0 - slack)) return true;
      if (a.key > b.key * (1.0 + slack)) return false;
    }
    return ties ? time(a) <= time(b) : time(a) < time(b);
  }
  // True when a configuration whose time is at least that of key `lower` surely takes longer than
  // `limit` by the pruning margin; false may still exceed it (evaluated in full: always safe).
  bool exceeds(double lower, double limit) const {
    return lower >= kKeyMin && lower <= kKeyMax && lower > limit * prune;
  }
};

// The estimate of the chosen configuration `a`: its exact time (the clock model taken once),
// compute and DRAM time; an infinite time where none was chosen or its time is NaN (the
// comparisons never choose a NaN time).
inline Estimate finish_pick(const Pick& a, const Ranker& rank, const Cost& c, const Rates& r) {
  if (!a.set) return finish_gemm(INFINITY, 0.0, 0.0, c, r, rank.lib);
  const double compute = rank.compute(a);
  const double time = combine_fast(compute, a.memory, rank.p);
  if (!(time <= INFINITY)) return finish_gemm(INFINITY, 0.0, 0.0, c, r, rank.lib);
  return finish_gemm(time, compute, a.memory, c, r, rank.lib);
}

// Distinct tile extents along m (kTiles[i].m) and n (kTiles[i].n), and each tile's index into
// them: the search rounds each dimension once per extent instead of once per tile.
constexpr std::array<double, 3> kTileM{64, 128, 256};
constexpr std::array<double, 4> kTileN{64, 128, 192, 256};
constexpr std::array<std::size_t, kTiles.size()> kTileMIndex{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
constexpr std::array<std::size_t, kTiles.size()> kTileNIndex{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
static_assert([] {
  for (std::size_t i = 0; i < kTiles.size(); ++i) {
    if (kTileM[kTileMIndex[i]] != kTiles[i].m || kTileN[kTileNIndex[i]] != kTiles[i].n) {
      return false;
    }
  }
  return true;
}());

static_assert(kTiles.size() == kGemmTileCount);
static_assert([] {  // tile i * |kTileN| + j has extents (kTileM[i], kTileN[j])
  for (std::size_t i = 0; i < kTiles.size(); ++i) {
    if (kTileMIndex[i] != i / kTileN.size() || kTileNIndex[i] != i % kTileN.size()) return false;
  }
  return true;
}());

// A candidate tile's unsplit compute (over its 2 k s_per_flop) may exceed the least by this
// relative margin, far above the rounding of either (a few ulps), and still be evaluated.
constexpr double kCandidateMargin = 1.0 + 1e-7;

// Fills `t` for an m x n (x batch) output on `sms` SMs, for kernels whose stream-K utilisation
// floor is `stream_k` (0: none) and whose narrowest tile has `min_tile_n` columns (narrower
// tiles are never split nor candidates). Candidates (uncapped bandwidth only): a tile's unsplit
// compute is 2 k s_per_flop (Tm Tn / reuse) x slots, slots = sms for one wave, else
// min(waves sms, tiles / stream_k), the waves exactly as the search counts them; only tiles
// within kCandidateMargin of the least can have the least compute, for every k and rate.
void build_tiles(GemmTiles& t, double m, double n, double batch, double sms, bool candidates,
                 double stream_k, double min_tile_n) {
  t.m = m;
  t.n = n;
  t.batch = batch;
  t.sms = sms;
  t.stream_k = stream_k;
  t.min_tile_n = min_tile_n;
  t.has_candidates = candidates;
  t.count = 0;
  for (std::size_t i = 0; i < kTileM.size(); ++i) t.tiles_m[i] = ceil_pos(m / kTileM[i]);
  for (std::size_t i = 0; i < kTileN.size(); ++i) t.tiles_n[i] = ceil_pos(n / kTileN[i]);
  // Tile ti = i * |kTileN| + j has extents (kTileM[i], kTileN[j]) (kTileMIndex, kTileNIndex);
  // the products keep the search's association: (batch tm) tn and (((2 batch) tm Tm) tn) Tn.
  // Split tiles: those whose grid leaves SMs idle (NaN counts are never evaluated).
  t.split_count = 0;
  for (std::size_t i = 0; i < kTileM.size(); ++i) {
    const double rows = batch * t.tiles_m[i];
    const double padded_m = 2.0 * batch * t.tiles_m[i] * kTileM[i];
    for (std::size_t j = 0; j < kTileN.size(); ++j) {
      const std::size_t ti = i * kTileN.size() + j;
      t.tiles[ti] = rows * t.tiles_n[j];
      t.padded[ti] = padded_m * t.tiles_n[j] * kTileN[j];
      if (t.tiles[ti] < sms && kTileN[j] >= min_tile_n) {
        t.split[t.split_count++] = static_cast<unsigned char>(ti);
      }
    }
  }
  if (!candidates) return;
  std::array<double, kTiles.size()> cost;
  double least = INFINITY;
  for (std::size_t ti = 0; ti < kTiles.size(); ++ti) {
    const double tiles = t.tiles[ti];
    // (tiles / 0 is infinite: without stream-K the slots are whole waves.)
    const double slots =
        tiles <= sms ? sms : std::min(ceil_pos(tiles / sms) * sms, tiles / stream_k);
    cost[ti] = kTiles[ti].n < min_tile_n ? INFINITY : kTileArea[ti] * slots;
    least = std::min(least, cost[ti]);
  }
  const double limit = least * kCandidateMargin;
  for (std::size_t ti = 0; ti < kTiles.size(); ++ti) {
    if (!(cost[ti] <= limit)) continue;
    const double tiles = t.tiles[ti];
    const double waves = ceil_pos(tiles / sms);
    double utilisation = tiles / (waves * sms);
    if (tiles > sms) utilisation = std::max(utilisation, stream_k);
    t.denom[ti] = utilisation * kTileReuse[ti];
    t.candidates[t.count++] = static_cast<unsigned char>(ti);
  }
}

// The tile table build_tiles(m, n, batch, sms, candidates, stream_k, min_tile_n) from `memo`,
// built on a miss.
const GemmTiles& memo_tiles(GemmMemo& memo, double m, double n, double batch, double sms,
                            bool candidates, double stream_k, double min_tile_n) {
  GemmTiles* const lane = memo.entries.data() + memo.lane * kGemmMemoWays;
  const std::size_t filled = memo.filled[memo.lane];
  for (std::size_t i = 0; i < filled; ++i) {
    const GemmTiles& t = lane[i];
    if (t.m == m && t.n == n && t.batch == batch && t.sms == sms &&
        t.has_candidates == candidates && t.stream_k == stream_k &&
        t.min_tile_n == min_tile_n) {
      return t;
    }
  }
  std::size_t& next = memo.next[memo.lane];
  GemmTiles& t = lane[next];
  next = (next + 1) % kGemmMemoWays;
  if (filled < kGemmMemoWays) memo.filled[memo.lane] = filled + 1;
  build_tiles(t, m, n, batch, sms, candidates, stream_k, min_tile_n);
  return t;
}

// The best (tile, split-K) configuration, as a tuned library would pick it; the same estimate
// as shaped_gemm_exhaustive, faster, for GEMM `c` whose library terms are `library`
// (library_gemm(c, r)). Configurations are compared by rank keys (Ranker), and only the winner's
// time is taken exactly. Unsplit configurations without a per-SM bandwidth cap share one memory
// time, so only their least compute matters (the p-norm and the clock model are monotone: raw
// compute times are compared and transformed once), over the candidate tiles of the tile table
// memo_tiles(memo, m, n, batch, sms, candidates, stream_k, min_tile_n) (see build_tiles) for
// c's extent and its library's kernels; with no split configuration, that winner is the
// answer. Split-K configurations (only for grids under one wave) are bounded below by their
// compute at full utilisation and their memory time, which grows with the split factor: once
// that bound exceeds the best time so far (or the unsplit winner's, which wins ties), no larger
// factor of that tile can win.
Estimate shaped_gemm(const Cost& c, const Rates& r, const LibraryGemm& lib, GemmMemo& memo) {
  const Ranker rank{lib, r.eff.overlap_p};
  const double bytes = c.bytes();
  const double s_per_flop = r.s_per_flop[static_cast<std::size_t>(c.math)] * lib.compute_scale;
  const double sms = r.sms;
  const bool uncapped = r.s_per_byte_per_sm <= 0;
  const GemmTiles& tt =
      memo_tiles(memo, c.m, c.n, c.batch, sms, uncapped, lib.stream_k, lib.min_tile_n);
  const double partial_bytes = 2.0 * 4.0 * c.batch * c.m * c.n;
  Pick best;     // the best split (or, capped, any) configuration so far
  Pick unsplit;  // uncapped: the unsplit winner (its least compute, in any order)
  if (uncapped) {
    double least_raw = INFINITY;  // least compute before the clock model
    for (std::size_t j = 0; j < tt.count; ++j) {
      const std::size_t ti = tt.candidates[j];
      least_raw = std::min(least_raw, tt.padded[ti] * c.k * s_per_flop / tt.denom[ti]);
    }
    unsplit.raw = least_raw;
    unsplit.memory = library_memory_time(bytes, sms, r, lib);
    unsplit.set = true;
    if (tt.split_count == 0 || lib.max_splits < kSplits[1]) {
      // No split configuration: the unsplit winner is the answer (no key needed).
      return finish_pick(unsplit, rank, c, r);
    }
    unsplit.key = rank.key(unsplit.raw, unsplit.memory);
  }
  // Uncapped: one bound for every split configuration of every tile (the unpadded FLOPs at
  // full utilisation and reuse, and the traffic of the smallest split factor); when it cannot
  // beat the unsplit winner, which wins ties, the split-K search is skipped.
  bool search = !uncapped;
  if (uncapped && tt.split_count > 0 && lib.max_splits >= kSplits[1]) {
    // The clock model only lengthens compute: the bound without it is tried first.
    const double floor_raw = 2.0 * c.batch * c.m * c.n * c.k * s_per_flop;
    const double floor_memory =
        library_memory_time(bytes + partial_bytes * kSplits[1], sms, r, lib);
    search = !rank.exceeds(rank.key_of(floor_raw, floor_memory), unsplit.key) &&
             !rank.exceeds(rank.key(floor_raw, floor_memory), unsplit.key);
  }
  // Uncapped: the DRAM time of each split factor, the same on every tile (the busy SMs do not
  // change the rate without a per-SM cap).
  std::array<double, kSplits.size()> split_memory{};
  if (uncapped && search) {
    for (std::size_t si = 1; si < kSplits.size(); ++si) {
      split_memory[si] = library_memory_time(bytes + partial_bytes * kSplits[si], sms, r, lib);
    }
  }
  // Uncapped: unsplit done above, and split-K needs idle SMs (the table's split tiles).
  const std::size_t visits = uncapped ? tt.split_count : kTiles.size();
  for (std::size_t v = 0; search && v < visits; ++v) {
    const std::size_t ti = uncapped ? tt.split[v] : v;
    if (kTiles[ti].n < lib.min_tile_n) continue;  // narrower than the kernels have
    const double tiles = tt.tiles[ti];
    const double reuse = kTileReuse[ti];
    const double padded_flops = tt.padded[ti] * c.k;
    if (!uncapped) {  // splits == 1 with a per-SM bandwidth cap: evaluated in full
      const double waves = ceil_pos(tiles / sms);
      double utilisation = tiles / (waves * sms);
      if (tiles > sms) utilisation = std::max(utilisation, lib.stream_k);
      Pick pick;
      pick.raw = padded_flops * s_per_flop / (utilisation * reuse);
      pick.memory = library_memory_time(bytes, std::min(tiles, sms), r, lib);
      pick.key = rank.key(pick.raw, pick.memory);
      pick.set = true;
      if (rank.before(pick, best, false)) best = pick;
      if (tiles >= sms) continue;  // split-K never pays with a full wave
    }
    // A lower bound of every split configuration's raw compute on this tile (full utilisation,
    // no division): its key is tried first without the clock model, then with it.
    const double raw_floor = padded_flops * s_per_flop * kInvReuseLow[ti];
    for (std::size_t si = 1; si < kSplits.size(); ++si) {
      const double splits = kSplits[si];
      if (splits > lib.max_splits) break;
      const double partials = partial_bytes * splits;
      const double units = tiles * splits;
      const double busy = std::min(units, sms);
      Pick pick;
      pick.memory =
          uncapped ? split_memory[si] : library_memory_time(bytes + partials, busy, r, lib);
      // A split configuration wins only below the best split time so far and below the
      // unsplit winner's time (which wins ties): bound against the smaller.
      const double limit = std::min(best.key, unsplit.key);
      const bool pruned = rank.exceeds(rank.key_of(raw_floor, pick.memory), limit) ||
                          rank.exceeds(rank.key(raw_floor, pick.memory), limit);
      if (pruned) {
        // Memory grows with the split factor only while the busy SMs do not change its rate;
        // stop only when that holds for every larger factor (uncapped bandwidth, or all SMs
        // already busy).
        if (uncapped || busy >= sms) break;
        continue;
      }
      const double waves = ceil_pos(units / sms);
      double utilisation = units / (waves * sms);
      if (units > sms) utilisation = std::max(utilisation, lib.stream_k);
      pick.raw = padded_flops * s_per_flop / (utilisation * reuse);
      // The clock model only lengthens compute: a key without it above the limit loses.
      if (rank.exceeds(rank.key_of(pick.raw, pick.memory), limit)) continue;
      pick.key = rank.key(pick.raw, pick.memory);
      pick.set = true;
      if (rank.before(pick, best, false)) best = pick;
    }
  }
  if (uncapped && rank.before(unsplit, best, true)) best = unsplit;
  return finish_pick(best, rank, c, r);
}

// Streaming kernels. DRAM traffic moves at the achievable bandwidth (times the kernel's
// bandwidth_fraction); a fixed latency per kernel covers launch, pipeline fill and drain, less
// the part of the fill a kernel too small to fill the pipeline never pays (small_kernel_ramp_s,
// tapering to 0 at half an L2 of traffic; not in PyTorch's row kernels), less,
// for each kernel after the first of a call, the launch and fill it overlaps with its
// predecessor's drain (follow_on_s).
// Row kernels (row_kernel != none) add what PyTorch's implementations do:
// - re-reads of a row after its reduction cost aten_reread / inductor_reread of a DRAM pass
//   while the rows in flight (SMs x CTAs per SM x the bytes of every tensor's row the kernel
//   reads or writes) fit in half the L2, a full pass beyond;
// - rows of one-CTA-per-SM kernels run in waves over the SMs (the last may leave SMs idle);
// - aten_cta kernels (one 1024-thread CTA per SM) move at most cta_sm_bytes_per_s per SM;
// - transcendentals (exp, log, division) at transcendental_flops each at the fp32 rate: they
//   follow the loads of a row (added to the time) except in aten_stream kernels, whose loops
//   overlap them with the traffic of the next iterations (counted with the FLOPs).
// (Templated on the number type: value-dependent branches are selects computing both sides,
// so each lane of a Lanes estimate is bit for bit the double one.)
template <class T>
EstimateT<T> shaped_memory(const CostT<T>& c, const Rates& r) {
  EstimateT<T> e = counted(c);
  const RowOpTerms& t = r.eff.row_ops;
  const double s_per_flop = r.s_per_flop[static_cast<std::size_t>(c.math)];
  const T fraction = select(c.bandwidth_fraction > 0.0, c.bandwidth_fraction, T(1.0));
  const bool rows = c.row_kernel != RowKernel::none;
  T dram = e.bytes;
  T util = 1.0, waves = 0.0;
  if (rows && any(c.reread_bytes > 0.0)) {
    const double base = c.row_kernel == RowKernel::inductor ? t.inductor_reread : t.aten_reread;
    T cost = base;
    // Every tensor row a CTA reads or writes passes through L2 between a row's first read and
    // its re-read: the re-read hits while the resident CTAs' rows fit in half the L2.
    const T footprint = select(c.rows > 0.0, e.bytes / c.rows, c.row_bytes);
    const T in_flight = r.sms * max(T(1.0), c.ctas_per_sm) * footprint;
    if (t.l2_bytes > 0) cost = select(in_flight > 0.5 * t.l2_bytes, T(1.0), cost);
    dram = select(c.reread_bytes > 0.0, dram + cost * c.reread_bytes, dram);
  }
  // Waves only for one resident CTA per SM (long rows): with several, the tail balances out.
  if (rows && r.sms > 0) {
    const auto waved = (c.rows > 0.0) & (c.ctas_per_sm > 0.0) & (c.ctas_per_sm <= 1.0);
    if (any(waved)) {
      const T slots = r.sms * c.ctas_per_sm;
      const T w = ceil(c.rows / slots);
      util = select(waved, c.rows / (w * slots), T(1.0));
      waves = select(waved, w, T(0.0));
    }
  }
  const T special = rows ? c.transcendentals * t.transcendental_flops * s_per_flop : T(0.0);
  const bool overlapped = c.row_kernel == RowKernel::aten_stream;
  // x / 1 == x: the divisions by a unit fraction or utilisation (most kernels) are skipped.
  auto over = [](const T& x, const T& d) { return select(d == 1.0, x, x / d); };
  // aten's non-vectorized TensorIterator kernel computes offsets per element and operand: at
  // its element rate (in fp32 FLOP-equivalents) it is slower than DRAM for 2- and 4-byte data.
  const T strided =
      c.strided_elements * r.eff.attention.strided_element_flops *
      r.s_per_flop[static_cast<std::size_t>(PeakClass::fp32)];
  e.compute_s = over(c.flops * s_per_flop + strided + (overlapped ? special : T(0.0)), util);
  if (rows && r.s_per_lane_op > 0 && any(c.issue_lane_ops > 0.0)) {
    // The SMs' instruction issue: a floor under the compute side when the kernel's lane
    // instructions (counted from its generated code) outlast its FLOPs at the fp32 rate.
    e.compute_s = max(e.compute_s, over(c.issue_lane_ops * r.s_per_lane_op, util));
  }
  e.memory_s = over(over(dram * r.s_per_byte, fraction), util);
  if (r.sms > 0 && any(c.sm_bytes_per_s > 0.0)) {
    // A kernel whose loads, not the HBM, set its rate (strided reads using part of each
    // sector): every SM moves at most sm_bytes_per_s, whatever the HBM bandwidth.
    const auto capped = c.sm_bytes_per_s > 0.0;
    e.memory_s = select(capped, max(e.memory_s, dram / (r.sms * c.sm_bytes_per_s)), e.memory_s);
  }
  T serial = overlapped ? T(0.0) : over(special, util);
  if (c.row_kernel == RowKernel::aten_cta && t.cta_sm_bytes_per_s > 0 && any(waves > 0.0)) {
    // Each SM runs its rows one CTA at a time: per row, its traffic at the per-SM rate, then
    // its transcendentals at one SM's share of the fp32 rate.
    const auto waved = waves > 0.0;
    const T per_row = e.bytes / c.rows;
    e.memory_s = select(waved, max(e.memory_s, waves * per_row / t.cta_sm_bytes_per_s),
                        e.memory_s);
    serial = select(waved,
                    waves * (c.transcendentals / c.rows) * t.transcendental_flops * s_per_flop *
                        r.sms,
                    serial);
  }
  const T roof = max(e.compute_s, e.memory_s) + serial;
  T latency = 0.0;
  const auto moves = e.bytes > 0.0;
  if (any(moves)) {
    // Per kernel: the full latency less the ramp saving, which tapers linearly from
    // small_kernel_ramp_s (no traffic) to 0 at half an L2 of DRAM traffic (one of H100's two L2
    // partitions: a kernel moving less leaves its write-back drain to what follows; unknown L2:
    // at the ramp's own traffic time); every kernel after the first of a call also hides
    // follow_on_s behind its predecessor's drain.
    const double lat = r.eff.memory_latency_s;
    const double ramp = min(t.small_kernel_ramp_s, lat);
    const T kernels = max(T(1.0), c.kernels);
    T filled = 0.0;  // fraction of the way to a full pipeline, per kernel
    if (t.l2_bytes > 0) {
      filled = dram / (kernels * 0.5 * t.l2_bytes);
    } else if (ramp > 0) {
      filled = over(roof, kernels) / ramp;
    }
    // PyTorch's row kernels (aten, Inductor) end with a dependent load, reduce, store per row:
    // no saving (the fused backend is an idealized streaming kernel and keeps it).
    const T saving = rows ? T(0.0) : ramp * max(T(0.0), 1.0 - filled);
    const double follow = min(t.follow_on_s, lat - ramp);
    latency = select(moves, c.kernels * (lat - saving) - max(T(0.0), c.kernels - 1.0) * follow,
                     T(0.0));
  }
  e.time_s = max(roof + latency, c.kernels * r.kernel_floor_s);
  e.overhead_s = e.time_s - max(e.compute_s, e.memory_s);
  return e;
}

// Flash attention tiles: a CTA owns kAttnRows query rows (forward) or KV rows (backward) and
// loops over blocks of the other side (FlashAttention-2/3 use 128 x 64..176 tiles).
constexpr double kAttnRows = kAttentionQueryTile;

// Keys of the block the fixed per-unit cost (attention_tile_overhead) is counted in: one
// 128-key block at the kernel's head dim, whatever block the inner loop actually uses.
constexpr double kOverheadKeys = 128.0;

// Decode kernels (FlashDecoding, FlashMLA) handle "few" query rows per sequence: up to this many.
constexpr double kDecodeMaxQ = 16.0;

// Decode kernels pack the q_len x heads_per_kv rows of one KV head into tiles of 64 rows.
constexpr double kDecodeRows = 64.0;

// Most KV splits a forward kernel uses (FlashAttention caps num_splits at 128).
constexpr double kMaxSplits = 128.0;

// Tile sizes are whole rows, at least 1 and at most 1024 (fitted terms could hold anything).
double tile(double v) { return std::min(1024.0, std::max(1.0, std::round(v))); }

double gcd(double a, double b) {
  while (b > 0.5) {
    const double t = std::fmod(a, b);
    a = b;
    b = t;
  }
  return a;
}

// sum_{j < n} ceil((a - j*b) / c) for whole a, b, c > 0 with a - (n-1)*b > 0, in closed form: the
// terms drop by D = b/g every P = c/g steps (g = gcd(b, c)), so each residue class mod P is an
// arithmetic series. At most P (<= 1024) iterations, whatever the sizes.
double sum_ceil(double a, double b, double c, double n) {
  if (n <= 0) return 0.0;
  const double g = gcd(b, c);
  const double period = c / g, drop = b / g;
  double sum = 0.0;
  for (double t = 0; t < std::min(period, n); ++t) {
    const double k = std::floor((n - 1.0 - t) / period) + 1.0;  // j = t, t + P, ... below n
    sum += k * std::ceil((a - t * b) / c) - drop * k * (k - 1.0) / 2.0;
  }
  return sum;
}

// Work of a flash kernel in keys (forward) or query rows (backward) of the inner loop: units
// (`problems` (sequence, head) pairs x outer tiles of `bo` rows), their sum and the largest.
// Inner loops visit whole blocks of `bi`; each unit adds `overhead` (same unit). Causal masks
// are bottom-right aligned; forward query tiles are counted from the last query and backward
// KV tiles from the first key, so each unit's work depends on one side only and grows with
// every size (the sums are closed forms).
struct AttnWork {
  double units = 0, total = 0, largest = 0;
};

AttnWork attn_work(const Cost& c, double problems, double bo, double bi, double overhead) {
  AttnWork w;
  const double q = c.q_len, kv = c.kv_len;
  if (!c.backward) {
    const double tiles = std::ceil(q / bo);
    const double full = std::ceil(kv / bi) * bi;  // keys (whole blocks) of an unmasked unit
    w.units = problems * tiles;
    w.largest = full + overhead;
    if (!c.causal) {
      w.total = w.units * w.largest;
      return w;
    }
    // Tile j from the bottom ends at query q - 1 - j*bo, which sees kv - j*bo keys.
    const double seen = std::min(tiles, std::ceil(kv / bo));
    w.total = problems * (bi * sum_ceil(kv, bo, bi, seen) + tiles * overhead);
    return w;
  }
  const double tiles = std::ceil(kv / bo);
  w.units = problems * tiles;
  w.largest = std::ceil((c.causal ? std::min(q, kv) : q) / bi) * bi + overhead;
  if (!c.causal) {
    w.total = w.units * w.largest;
    return w;
  }
  // KV tile j (keys from j*bo) is seen by min(q, kv - j*bo) queries: all q while kv - j*bo >= q.
  const double all = kv >= q ? std::min(tiles, std::floor((kv - q) / bo) + 1.0) : 0.0;
  const double rows = all * std::ceil(q / bi) +
                      sum_ceil(kv - all * bo, bo, bi, tiles - all);
  w.total = problems * (bi * rows + tiles * overhead);
  return w;
}

// Parameters of one attention implementation: the standard (idealized) model's values,
// overridden by the implementation's non-zero fitted terms.
struct AttnParams {
  double fraction, bwd_fraction, decode_fraction, q_tile, kv_tile, decode_rows, softmax, t0,
      call_s, decode_call_s, overhead_keys, cta_bytes_per_s, bandwidth_scale;
  bool split_kv, pack_gqa, fixed_kv_tile;
  bool softmax_bf16 = false;  // softmax in bf16 GEMM FLOP-equivalents whatever the input format
  bool separate_dq = false;   // backward: dQ in its own kernel over query tiles (AOTriton)
  double latency_s = -1.0;    // fixed time of the fused kernel (< 0: the GEMM latency)
};

// FlashAttention-3's tiles (and FlashInfer's Hopper prefill, which instantiates the same
// kernels): kBlockM x kBlockN from fa3_tile. Paged KV goes through TMA only when a page holds
// whole key blocks and the packed query rows (q_len x heads per kv head) exceed one tile;
// otherwise the producer warps gather rows through the page table (narrower blocks, no TMA).
void fa3_params(const Cost& c, const AttentionBackendTerms& t, AttnParams& p) {
  const double eb = input_bytes(c.math);
  const Fa3Tile tma = fa3_tile(c.head_dim, c.v_head_dim, c.causal, eb, false);
  const bool paged = c.page_tokens > 0.0;
  const bool non_tma = paged && !(std::fmod(c.page_tokens, tma.block_n) == 0.0 &&
                                  c.q_len * c.heads_per_kv > tma.block_m);
  const Fa3Tile tl = non_tma ? fa3_tile(c.head_dim, c.v_head_dim, c.causal, eb, true) : tma;
  p.q_tile = tl.block_m;
  p.kv_tile = tl.block_n;
  p.overhead_keys = tl.block_n;
  p.fixed_kv_tile = true;
  if (c.attention_backend == AttentionBackend::fa3) p.decode_rows = tl.block_m;  // PackGQA tile
  if (non_tma && t.paged_bandwidth_scale > 0.0) p.bandwidth_scale = t.paged_bandwidth_scale;
}

AttnParams attn_params(const Cost& c, const Efficiency& eff) {
  AttnParams p{eff.attention_fraction, 0.0, eff.decode_fraction, kAttnRows, kOverheadKeys,
               kDecodeRows, eff.attention_softmax_flops, eff.attention_tile_overhead, 0.0, 0.0,
               kOverheadKeys, 0.0, 1.0, true, true, false};
  const AttentionBackendTerms* t = nullptr;
  switch (c.attention_backend) {
    case AttentionBackend::flash: t = &eff.attention.flash; break;
    case AttentionBackend::cudnn: t = &eff.attention.cudnn; break;
    case AttentionBackend::efficient: t = &eff.attention.efficient; break;
    case AttentionBackend::fa3: t = &eff.attention.fa3; break;
    case AttentionBackend::flashinfer: t = &eff.attention.flashinfer; break;
    case AttentionBackend::flash_triton: t = &eff.attention.flash_triton; break;
    case AttentionBackend::flex: t = &eff.attention.flex; break;
    default: break;
  }
  if (t != nullptr) {
    auto pick = [](double v, double fallback) { return v > 0.0 ? v : fallback; };
    p.fraction = pick(t->fraction, p.fraction);
    p.bwd_fraction = t->bwd_fraction;
    p.decode_fraction = pick(t->decode_fraction, p.decode_fraction);
    p.q_tile = pick(t->q_tile, p.q_tile);
    p.fixed_kv_tile = t->kv_tile > 0.0;
    p.kv_tile = pick(t->kv_tile, p.kv_tile);
    p.overhead_keys = p.kv_tile;
    p.decode_rows = pick(t->decode_rows, p.decode_rows);
    p.split_kv = t->no_split_kv < 0.5;
    p.pack_gqa = t->no_pack_gqa < 0.5;
    p.call_s = c.backward ? pick(t->bwd_call_s, t->call_s) : t->call_s;
    p.decode_call_s = pick(t->decode_call_s, p.call_s);
    p.bandwidth_scale = pick(t->bandwidth_scale, 1.0);
    p.cta_bytes_per_s = c.backward ? 0.0 : t->cta_bytes_per_s;
    if (c.backward) p.t0 = pick(t->bwd_tile_overhead, p.t0);
    p.separate_dq = t->separate_dq >= 0.5;
    if (t->kernel_latency_s > 0.0) p.latency_s = t->kernel_latency_s;
    if (t->softmax_flops > 0.0) {
      p.softmax = t->softmax_flops;
      p.softmax_bf16 = true;
    }
    const bool fa3 = c.attention_backend == AttentionBackend::fa3;
    if (fa3 || (c.attention_backend == AttentionBackend::flashinfer && t->q_tile <= 0.0)) {
      fa3_params(c, *t, p);
    } else if (c.attention_backend == AttentionBackend::flashinfer && c.page_tokens > 0.0 &&
               t->paged_bandwidth_scale > 0.0) {
      p.bandwidth_scale = t->paged_bandwidth_scale;
    }
  }
  if (p.fraction <= 0.0) p.fraction = 1.0;
  if (p.bwd_fraction <= 0.0) p.bwd_fraction = p.fraction;
  if (p.decode_fraction <= 0.0) p.decode_fraction = 1.0;
  p.q_tile = tile(p.q_tile);
  p.kv_tile = tile(p.kv_tile);
  p.decode_rows = tile(p.decode_rows);
  return p;
}

// One schedule of an attention kernel: its compute, memory and combined time.
struct AttnRun {
  double compute = 0, memory = 0, time = INFINITY, call = 0;
};

// Flash attention: forward = units of q_tile query rows looping over KV blocks, backward =
// units of KV rows looping over query blocks, decode = the q rows of one KV head packed into one
// tile with the KV split across the SMs (split-KV). Every scored block costs its matrix FLOPs
// plus the exp/softmax work per score, at a fitted fraction of the GEMM rate; units spread over
// the SMs (waves for equal units, longest-first for causal ones); DRAM traffic overlaps as for
// GEMMs. Tiles, rates, split-KV and a fixed time per call depend on the implementation
// (AttentionTerms; the standard model when they are zero).
//
// Monotone by construction: the time is the minimum over schedules (decode or prefill tiling,
// KV block, split count), each non-decreasing in every size, and each allowed on a set of shapes
// that only shrinks as a size grows (decode while q_len <= 16, 128-key blocks while head_dim <=
// 128, splits while the unsplit units leave SMs idle); tile counts are ceil-divisions and causal
// sums closed forms.
//
// A backward with a separate dQ kernel (AttnParams::separate_dq: AOTriton on ROCm) is the dK/dV
// kernel (KV tiles looping over queries: S, dP, dV, dK, 2(2d + 2dv) FLOPs per score) plus the dQ
// kernel (`dq_pass`: the forward's schedule, query tiles looping over every key, with S, dP and
// dQ, 2(2d + dv) FLOPs per score, at the backward's rate): the dQ kernel alone does more work
// per score on the forward's units, so such a backward never costs less than its forward.
Estimate shaped_attention(const Cost& c, const Rates& r, bool dq_pass = false) {
  Estimate e = counted(c);
  const AttnParams p = attn_params(c, r.eff);
  const double s_per_flop = r.s_per_flop[static_cast<std::size_t>(c.math)];
  const double sms = r.sms;
  const double d = c.head_dim, dv = c.v_head_dim;
  const bool split_dq = c.backward && p.separate_dq;
  double mm = c.backward ? 2.0 * (3.0 * d + 2.0 * dv) : 2.0 * (d + dv);  // FLOPs per score
  if (split_dq) mm = 2.0 * (2.0 * d + 2.0 * dv);
  if (dq_pass) mm = 2.0 * (2.0 * d + dv) * p.fraction / p.bwd_fraction;
  const double softmax_s_per_flop =
      p.softmax_bf16 ? r.s_per_flop[static_cast<std::size_t>(PeakClass::bf16)] : s_per_flop;
  const double per_score =
      mm * s_per_flop + p.softmax * (c.backward || dq_pass ? 2.0 : 1.0) * softmax_s_per_flop;
  // Dropout: the kernel draws its random bits on the integer pipe, in the warps that also issue
  // the MMAs (FlashAttention-2 applies the mask between its two GEMMs), so they add to the
  // critical path; the backward regenerates the forward's mask once.
  const double drop_score = c.dropout ? kDropoutIntOps * r.s_per_int_op : 0.0;
  const double overhead = p.t0 * p.overhead_keys;  // keys (or query rows) per unit

  // K and V bytes of one (sequence, kv head) pair: what one unit streams over its KV range.
  const double pair_bytes = c.kv_len * (d + dv) * input_bytes(c.math);
  AttnRun best;
  // A schedule of `units` units whose critical path is `makespan` inner rows of `rows` outer
  // rows each, at `fraction` of the GEMM rate, with `splits` KV splits; `unit_rows` inner rows
  // in one unit.
  auto consider = [&](double units, double makespan, double rows, double fraction,
                      double splits, double unit_rows, double call) {
    // Each split writes fp32 partial outputs (and row statistics) that a combine step re-reads.
    const double partials =
        splits > 1.0 ? 2.0 * 4.0 * c.batch * c.q_len * (dv + 1.0) * splits : 0.0;
    AttnRun run;
    run.compute = makespan * sms * rows * (per_score / fraction + drop_score);
    run.memory = memory_time(e.bytes + partials, std::min(units, sms), r) / p.bandwidth_scale;
    run.time = combine(run.compute, run.memory, r.eff.overlap_p);
    if (p.cta_bytes_per_s > 0.0) {
      // No unit finishes faster than its own math plus its loads at the rate one unit sustains
      // alone (a kernel that does not overlap them within a unit: nothing hides them when one
      // unit runs per SM).
      const double unit = unit_rows * sms * rows * (per_score / fraction + drop_score) +
                          pair_bytes / splits / p.cta_bytes_per_s;
      run.time = std::max(run.time, unit);
    }
    run.call = call;
    if (run.time + run.call < best.time + best.call) best = run;
  };
  // KV blocks the inner loop may use: the backend's fixed block, else 64 keys at any head dim
  // and 128 keys while head_dim <= 128 (shared memory).
  std::array<double, 2> blocks{p.kv_tile, 0.0};
  if (!p.fixed_kv_tile) blocks = {64.0, d <= 128.0 ? 128.0 : 0.0};

  if (c.backward) {
    const AttnWork w = attn_work(c, c.batch, kAttnRows, kAttnRows, overhead);
    // The backward accumulates dQ atomically and never splits.
    const double makespan = c.causal ? std::max(w.total / sms, w.largest)
                                     : std::ceil(w.units / sms) * w.largest;
    consider(w.units, makespan, kAttnRows, p.bwd_fraction, 1.0, w.largest, p.call_s);
  } else {
    for (const double bk : blocks) {
      if (bk <= 0.0) continue;
      const AttnWork w = attn_work(c, c.batch, p.q_tile, bk, overhead);
      // Split-KV (FlashAttention's num_splits): only while the units leave SMs idle. A causal
      // kernel splits the same way: split i of a query tile takes KV blocks [i n/s, (i+1) n/s)
      // of the n = ceil(kv / bk) blocks and stops at the tile's causal limit (a split past it
      // exits after its setup), so the masked blocks are never visited. Chunked prefill (a short
      // query on a long cache) then spreads its few tiles over the SMs as a non-causal query
      // does; and since a causal unit never visits more blocks than the non-causal one of the
      // same split, causal <= non-causal for every schedule, hence for their minimum.
      const double nblocks = std::ceil(c.kv_len / bk);
      const double most = p.split_kv && w.units < sms ? std::min(kMaxSplits, nblocks) : 1.0;
      for (double s = 1.0; s <= most; ++s) {
        const double units = w.units * s;
        const double unit_rows = std::ceil(nblocks / s) * bk + overhead;
        if (c.causal) {
          // Longest-first over the SMs: the visited blocks plus every split's setup, and no
          // less than the largest split (the bottom tile sees every key).
          const double total = w.total + (s - 1.0) * w.units * overhead;
          consider(units, std::max(total / sms, unit_rows), p.q_tile, p.fraction, s, unit_rows,
                   p.call_s);
        } else {
          consider(units, std::ceil(units / sms) * unit_rows, p.q_tile, p.fraction, s,
                   unit_rows, p.call_s);
        }
      }
      if (c.q_len > kDecodeMaxQ) continue;
      // Decode: the q_len x heads_per_kv rows of one KV head packed into tiles of decode_rows
      // (one query head per tile when the kernel does not pack GQA heads), KV split over idle SMs.
      const double hpk = p.pack_gqa ? std::max(1.0, c.heads_per_kv) : 1.0;
      const double base = c.batch / hpk * std::ceil(c.q_len * hpk / p.decode_rows);
      const double most_decode = p.split_kv && base < sms ? std::min(kMaxSplits, nblocks) : 1.0;
      for (double s = 1.0; s <= most_decode; ++s) {
        const double units = base * s;
        const double unit_rows = std::ceil(nblocks / s) * bk + overhead;
        consider(units, std::ceil(units / sms) * unit_rows, p.decode_rows, p.decode_fraction, s,
                 unit_rows, p.decode_call_s);
      }
    }
  }
  e.compute_s = best.compute;
  e.memory_s = best.memory;
  const double call = dq_pass ? 0.0 : best.call;  // the dQ kernel's call: counted once
  const double latency = p.latency_s >= 0.0 ? p.latency_s : r.eff.gemm_latency_s;
  e.time_s = std::max(best.time + c.kernels * latency + call,
                      c.kernels * r.kernel_floor_s);
  if (split_dq) {
    // The dQ kernel re-reads Q, K, V, O, dO and the row statistics and writes dQ; its fixed
    // per-call time is the backward's, counted once above.
    Cost dq = c;
    dq.backward = false;
    dq.bytes_written = c.batch * c.q_len * d * input_bytes(c.math);
    const Estimate q = shaped_attention(dq, r, true);
    e.compute_s += q.compute_s;
    e.memory_s += q.memory_s;
    e.time_s += q.time_s;
    e.kernels += dq.kernels;
  }
  e.overhead_s = e.time_s - std::max(e.compute_s, e.memory_s);
  return e;
}

}  // namespace

template <class T>
EstimateT<T>& EstimateT<T>::operator+=(const EstimateT<T>& o) noexcept {
  time_s += o.time_s;
  compute_s += o.compute_s;
  memory_s += o.memory_s;
  overhead_s += o.overhead_s;
  flops += o.flops;
  bytes += o.bytes;
  kernels += o.kernels;
  return *this;
}

template struct EstimateT<double>;
template struct EstimateT<Lanes>;

Rates::Rates(const Hardware& hw, const Efficiency& e) noexcept
    : s_per_byte(1.0 / (hw.mem_bytes_per_s * e.memory_fraction)),
      kernel_floor_s(e.kernel_floor_s),
      sms(hw.sms),
      s_per_byte_per_sm(e.sm_bytes_per_s > 0 ? 1.0 / e.sm_bytes_per_s : 0.0),
      s_per_int_op(hw.sms > 0 && hw.clock_hz > 0
                       ? 1.0 / (hw.sms * hw.clock_hz * kIntLanesPerSm) : 0.0),
      s_per_lane_op(hw.sms > 0 && hw.clock_hz > 0
                        ? 1.0 / (hw.sms * hw.clock_hz * kIssueLanesPerSm) : 0.0),
      eff(e) {
  // library_gemm's scales: 1 / compute_scale (if set), then / unaligned_fraction (if set).
  const GemmTerms& g = e.gemm;
  for (std::size_t low = 0; low < 2; ++low) {
    const double scale = low ? g.compute_scale_8 : g.compute_scale_16;
    const double base = scale > 0 ? 1.0 / scale : 1.0;
    gemm_scales.compute_base[low] = base;
    gemm_scales.compute[low][0] = base;
    gemm_scales.compute[low][1] = g.unaligned_fraction > 0 ? base / g.unaligned_fraction : base;
  }
  const double memory = g.memory_fraction > 0 ? 1.0 / g.memory_fraction : 1.0;
  gemm_scales.memory[0] = memory;
  gemm_scales.memory[1] = g.unaligned_fraction > 0 ? memory / g.unaligned_fraction : memory;
  for (int c = 0; c < kPeakClassCount; ++c) {
    const double rate = hw.peak_flops_per_s[static_cast<std::size_t>(c)] * e.compute_fraction;
    s_per_flop[static_cast<std::size_t>(c)] = rate > 0 ? 1.0 / rate : 0.0;
  }
}

namespace {

// The shape-aware model of a kernel other than a GEMM on a GPU with SMs.
Estimate shaped_other(const Cost& cost, const Rates& rates) {
  if (cost.kind == KernelKind::memory) return shaped_memory(cost, rates);
  if (cost.kind == KernelKind::attention && rates.sms > 0) return shaped_attention(cost, rates);
  return estimate_plain(cost, rates);
}

// A shape-aware GEMM (rates.sms > 0), its tile tables from `memo` (see shaped_gemm) and its
// library terms from `library_of(cost)` (library_gemm or a copy of its result).
template <class LibraryOf>
Estimate estimate_gemm(const Cost& cost, const Rates& rates, const LibraryOf& library_of,
                       GemmMemo& memo) {
  if (!cost.pad_to_align) return shaped_gemm(cost, rates, library_of(cost), memo);
  const Estimate as_is = shaped_gemm(cost, rates, library_of(cost), memo);
  // The same GEMM on k and n padded up to 16-byte rows (TMA-aligned): monotone in every size.
  // (FLOPs and bytes stay those of the cost: the padded copy keeps its fields.)
  Cost padded = cost;
  const double step = 16.0 / input_bytes(cost.math);
  padded.k = std::ceil(cost.k / step) * step;
  padded.n = std::ceil(cost.n / step) * step;
  const Estimate aligned = shaped_gemm(padded, rates, library_of(padded), memo);
  return aligned.time_s < as_is.time_s ? aligned : as_is;
}

}  // namespace

Estimate estimate_shape_aware(const Cost& cost, const Rates& rates, GemmMemo& memo) noexcept {
  if (cost.kind == KernelKind::gemm && rates.sms > 0) {
    return estimate_gemm(cost, rates, [&](const Cost& c) { return library_gemm(c, rates); }, memo);
  }
  return shaped_other(cost, rates);
}

double sustained_compute_s(double compute_s, double f, double tau) noexcept {
  if (!(f > 0.0 && f < 1.0 && tau > 0.0 && compute_s > 0.0)) return compute_s;
  // compute_s = t / (f + (1 - f) tau / (tau + t))  <=>  t^2 + (tau - f s) t - s tau = 0
  const double b = tau - f * compute_s;
  const double t = 0.5 * (std::sqrt(b * b + 4.0 * compute_s * tau) - b);
  return t / f;
}

double sustained_gemm_time_s(double time_s, double compute_s, double memory_s, double f,
                             double tau, double p) noexcept {
  const double fixed = time_s - combine(compute_s, memory_s, p);  // latency per call
  return combine(sustained_compute_s(compute_s, f, tau), memory_s, p) + fixed;
}

double limiter_load(double busy_s, double since_start_s, double window_s,
                    double prior_load) noexcept {
  if (!(window_s > 0.0)) return std::clamp(prior_load, 0.0, 1.0);
  const double before = std::clamp(window_s - since_start_s, 0.0, window_s);  // pre-trace part
  const double load = (std::max(busy_s, 0.0) + std::clamp(prior_load, 0.0, 1.0) * before) /
                      window_s;
  return std::clamp(load, 0.0, 1.0);
}

double limited_compute_s(double compute_s, double f, double tau, double load) noexcept {
  if (!(f > 0.0 && f < 1.0 && tau > 0.0 && compute_s > 0.0)) return compute_s;
  const double full = f * sustained_compute_s(compute_s, f, tau);  // at the boost clock
  return full / (1.0 - (1.0 - f) * std::clamp(load, 0.0, 1.0));
}

double limited_gemm_time_s(double time_s, double compute_s, double memory_s, double f,
                           double tau, double p, double load) noexcept {
  const double fixed = time_s - combine(compute_s, memory_s, p);  // latency per call
  return combine(limited_compute_s(compute_s, f, tau, load), memory_s, p) + fixed;
}

Estimate estimate_shape_aware(const Cost& cost, const Rates& rates) noexcept {
  GemmMemo memo;  // one estimate: its tables are built afresh
  return estimate_shape_aware(cost, rates, memo);
}

Estimate estimate_fixed_tile_gemm(const Cost& cost, const Rates& rates, double padded_flops,
                                  double utilisation, double busy_sms, double extra_compute_s,
                                  bool overlaps) noexcept {
  if (!rates.eff.shape_aware || rates.sms <= 0) return estimate_plain(cost, rates);
  const LibraryGemm lib = library_gemm(cost, rates);
  const double s_per_flop = rates.s_per_flop[static_cast<std::size_t>(cost.math)] *
                            lib.compute_scale;
  const double tensor = throttled(padded_flops * s_per_flop / std::max(utilisation, 1e-9), lib);
  const double compute =
      overlaps ? std::max(tensor, extra_compute_s) : tensor + extra_compute_s;
  const double busy = std::min(std::max(busy_sms, 1.0), rates.sms);
  const double memory = library_memory_time(cost.bytes(), busy, rates, lib);
  return finish_gemm(combine(compute, memory, rates.eff.overlap_p), compute, memory, cost,
                     rates, lib);
}

Estimate estimate_exhaustive(const Cost& cost, const Rates& rates) noexcept {
  if (rates.eff.shape_aware && cost.kind == KernelKind::gemm && rates.sms > 0) {
    return shaped_gemm_exhaustive(cost, rates);
  }
  return estimate(cost, rates);
}

Estimate estimate(const Cost& cost, const Hardware& hw, const Efficiency& eff) noexcept {
  return estimate(cost, Rates(hw, eff));
}

namespace {

// Lane i of `c`'s counts and GEMM fields (the rest as a default Cost has them).
Cost lane_gemm_cost(const CostT<Lanes>& c, std::size_t i) noexcept {
  Cost s;
  s.flops = c.flops[i];
  s.bytes_read = c.bytes_read[i];
  s.bytes_written = c.bytes_written[i];
  s.kernels = c.kernels[i];
  s.math = c.math;
  s.kind = c.kind;
  s.m = c.m[i];
  s.n = c.n[i];
  s.k = c.k[i];
  s.batch = c.batch[i];
  s.scaling = c.scaling;
  s.grouped = c.grouped;
  s.pad_to_align = c.pad_to_align;
  s.a_transposed = c.a_transposed;
  return s;
}

// Times of the GEMMs of 8 shapes for a shape-aware model on a GPU with SMs (as
// estimate_lane_times dispatches them): each lane bit for bit estimate(lane_cost(c, i), r,
// memo).time_s, i.e. estimate_gemm, with the library terms built once for the lanes (they differ
// between lanes only by the alignment of their operand rows).
Lanes gemm_lane_times(const CostT<Lanes>& c, const Rates& r, GemmMemo& memo) noexcept {
  const Cost flags = lane_gemm_cost(c, 0);
  const std::array<LibraryGemm, 2> library{library_gemm(flags, r, false),
                                           library_gemm(flags, r, true)};
  const auto library_of = [&](const Cost& s) -> const LibraryGemm& {
    return library[aligned_rows(s) ? 1 : 0];
  };
  Lanes t;
  for (std::size_t i = 0; i < kLaneCount; ++i) {
    memo.lane = i;  // lane i's GEMMs share lane i's tile tables (as one shape's do)
    t[i] = estimate_gemm(lane_gemm_cost(c, i), r, library_of, memo).time_s;
  }
  memo.lane = 0;
  return t;
}

}  // namespace

Cost lane_cost(const CostT<Lanes>& c, std::size_t i) noexcept {
  Cost s = lane_gemm_cost(c, i);
  s.q_len = c.q_len;
  s.kv_len = c.kv_len;
  s.head_dim = c.head_dim;
  s.v_head_dim = c.v_head_dim;
  s.heads_per_kv = c.heads_per_kv;
  s.causal = c.causal;
  s.backward = c.backward;
  s.dropout = c.dropout;
  s.bandwidth_fraction = c.bandwidth_fraction[i];
  s.sm_bytes_per_s = c.sm_bytes_per_s[i];
  s.attention_backend = c.attention_backend;
  s.row_kernel = c.row_kernel;
  s.rows = c.rows[i];
  s.ctas_per_sm = c.ctas_per_sm[i];
  s.row_bytes = c.row_bytes[i];
  s.reread_bytes = c.reread_bytes[i];
  s.transcendentals = c.transcendentals[i];
  s.issue_lane_ops = c.issue_lane_ops[i];
  s.strided_elements = c.strided_elements[i];
  return s;
}

Lanes estimate_lane_times(const CostT<Lanes>& c, const Rates& rates, GemmMemo& memo) noexcept {
  // As estimate(): shape-aware GEMMs and attention kernels (on a GPU with SMs) search per
  // shape; streaming kernels run on all lanes; the rest take the plain model on all lanes.
  if (rates.eff.shape_aware && c.kind != KernelKind::generic) {
    if (c.kind == KernelKind::gemm && rates.sms > 0) return gemm_lane_times(c, rates, memo);
    if (c.kind == KernelKind::memory) return shaped_memory(c, rates).time_s;
    if (c.kind == KernelKind::attention && rates.sms > 0) {
      Lanes t;
      for (std::size_t i = 0; i < kLaneCount; ++i) {
        t[i] = estimate_shape_aware(lane_cost(c, i), rates).time_s;
      }
      return t;
    }
  }
  return estimate_plain(c, rates).time_s;
}

}  // namespace roofline
