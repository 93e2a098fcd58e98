#include "roofline/ops/select.hpp"

#include <algorithm>
#include <cmath>

namespace roofline {

namespace {

/// max(issue-bound time of `warps` x `steps`, one block's latency of `steps` with
/// `block_warps` warps (x `loops` iterations) each).
double barrier_steps_s(double warps, double block_warps, double loops, double steps,
                       double sms, double clock_hz) noexcept {
  const double per_warp = steps * loops * kSelectStepWarpInstructions;
  const double issue = warps * per_warp / (sms * kWarpIssuePerSmCycle * clock_hz);
  const double latency = steps *
                         (kSelectStepLatencyCycles +
                          block_warps * loops * kSelectStepWarpInstructions / kWarpIssuePerSmCycle) /
                         clock_hz;
  return std::max(issue, latency);
}

}  // namespace

bool topk_multiblock(double s, double n) noexcept {
  return (s <= 20 && n >= 20000) || (s > 20 && s <= 40 && n >= 10000) ||
         (s > 40 && s <= 80 && n >= 8000) || (s > 80 && s < 200 && n >= 5000) ||
         (s >= 200 && s < 800 && n >= 3000) || (s >= 800 && s <= 4000 && n >= 800) ||
         (s > 4000 && n >= 400);
}

double topk_block_warps(double slice_len) noexcept {
  if (!(slice_len > 0)) return 1.0;
  return std::min(std::ceil(slice_len / 32.0), 32.0);
}

double topk_select_s(double slices, double slice_len, double radix_bits, double sms,
                     double clock_hz) noexcept {
  if (!(slices > 0) || !(slice_len > 0) || !(sms > 0) || !(clock_hz > 0)) return 0.0;
  const double warps = topk_block_warps(slice_len);
  const double loops = std::ceil(slice_len / (32.0 * warps));
  const double steps = std::max(radix_bits, 2.0) / 2.0 + 1.0;
  return barrier_steps_s(slices * warps, warps, loops, steps, sms, clock_hz);
}

double topk_bitonic_sort_s(double slices, double sms, double clock_hz) noexcept {
  if (!(slices > 0) || !(sms > 0) || !(clock_hz > 0)) return 0.0;
  constexpr double kStages = 15.0;     // log2(32) (log2(32) + 1) / 2
  constexpr double kBlockWarps = 8.0;  // 16 x 16 threads
  return barrier_steps_s(std::ceil(slices / 2.0), kBlockWarps, 1.0, kStages, sms, clock_hz);
}

double topk_multiblock_passes(double itemsize) noexcept {
  if (!(itemsize > 0)) return 0.0;
  return std::ceil(itemsize);
}

double topk_multiblock_items_per_thread(double slices, double slice_len, double sms) noexcept {
  constexpr double kMin = 4.0;
  constexpr double kMax = 64.0;
  if (!(slices > 0) || !(slice_len > 0) || !(sms > 0)) return kMin;
  const double items =
      std::ceil(slices * slice_len / (sms * kMbTopkBlocksPerSm * kMbTopkBlockThreads));
  return std::clamp(items, kMin, kMax);
}

double topk_multiblock_blocks_per_slice(double slices, double slice_len, double sms) noexcept {
  if (!(slice_len > 0)) return 1.0;
  const double per_block =
      topk_multiblock_items_per_thread(slices, slice_len, sms) * kMbTopkBlockThreads;
  return std::max(std::ceil(slice_len / per_block), 1.0);
}

double topk_multiblock_launches(double itemsize) noexcept {
  const double passes = topk_multiblock_passes(itemsize);
  if (!(passes > 0)) return 0.0;
  return 9.0 + 3.0 * passes;
}

double topk_multiblock_s(double slices, double slice_len, double itemsize, double sms,
                         double clock_hz) noexcept {
  if (!(slices > 0) || !(slice_len > 0) || !(itemsize > 0) || !(sms > 0) || !(clock_hz > 0))
    return 0.0;
  const double ipt = topk_multiblock_items_per_thread(slices, slice_len, sms);
  const double per_slice = topk_multiblock_blocks_per_slice(slices, slice_len, sms);
  const double blocks = slices * per_slice;
  // one slice in one block: that block walks only the slice (aten's last-block share)
  const double items =
      per_slice > 1.0 ? ipt : std::ceil(slice_len / kMbTopkBlockThreads);
  const double scan_s = kSelectStepLatencyCycles / clock_hz;
  auto kernel = [&](double grid, double trips, double scans) {
    const double waves = std::max(grid / (sms * kMbTopkBlocksPerSm), 1.0);
    return waves * (kMbTopkBlockBaseS + trips * kBlockRoundTripS + scans * scan_s);
  };
  const double digit_counts = kernel(blocks, 1.0 + items, 0.0);
  const double cum_sum = kernel(slices, std::ceil(per_slice / 4.0), 1.0);
  const double within_k = kernel(blocks, 3.0, 1.0);
  const double gather = kernel(blocks, 1.0 + items, 2.0 * items);
  return topk_multiblock_passes(itemsize) * (digit_counts + cum_sum + within_k) + gather;
}

double radix_sort_passes(double key_bits) noexcept {
  if (!(key_bits > 0)) return 0.0;
  return std::ceil(key_bits / 8.0);
}

double radix_sort_launches(double passes) noexcept {
  if (!(passes > 0)) return 0.0;
  return 2.0 * passes + 6.0;
}

double radix_sort_lookback_s(double passes) noexcept {
  if (!(passes > 0)) return 0.0;
  return passes * kOnesweepLookbackS;
}

double radix_sort_bytes(double n, double key_bytes) noexcept {
  if (!(n > 0) || !(key_bytes > 0)) return 0.0;
  constexpr double kIndexBytes = 8.0;
  return n * key_bytes + radix_sort_passes(8.0 * key_bytes) * 2.0 * n * (key_bytes + kIndexBytes);
}

double block_radix_sort_threads(double slice_len) noexcept {
  if (!(slice_len > 128.0)) return 32.0;
  const double pow2 = std::exp2(std::ceil(std::log2(std::min(slice_len, kBlockSortMaxKeys))));
  return std::max(pow2, 1024.0) / 32.0;
}

double block_radix_sort_items(double slice_len) noexcept {
  return slice_len > 128.0 ? 32.0 : 4.0;
}

double block_radix_sort_s(double slices, double slice_len, double key_bytes, double value_bytes,
                          double sms, double clock_hz) noexcept {
  if (!(slices > 0) || !(slice_len > 0) || !(key_bytes > 0) || !(value_bytes >= 0) ||
      !(sms > 0) || !(clock_hz > 0))
    return 0.0;
  const double passes = std::ceil(8.0 * key_bytes / kBlockRadixBits);
  const double items = block_radix_sort_items(slice_len);
  const double warps = block_radix_sort_threads(slice_len) / 32.0;
  const double rank = items * 2.0 * kSmemLatencyCycles;
  // a warp's 32 items of `bytes` each, in 128-byte wavefronts (none for no values)
  auto wavefronts = [](double bytes) { return std::ceil(32.0 * bytes / kSmemWavefrontBytes); };
  const double exchange = 2.0 * warps * items * (wavefronts(key_bytes) + wavefronts(value_bytes));
  const double waves = std::ceil(slices / sms);
  return waves * passes * (rank + kSelectStepLatencyCycles + exchange) / clock_hz;
}

double nonzero_launches(double numel, double ndim) noexcept {
  if (!(numel > 0)) return 0.0;
  const double count = numel <= kCubReduceTileItems ? 1.0 : 2.0;
  const double unflatten = ndim > 1 ? 1.0 : 0.0;
  return count + 2.0 + unflatten;
}

namespace {

/// A grid-wide thread loop: `grid` blocks of `block` threads, each walking `items` items of
/// `loads` dependent global loads; blocks past one wave (kThreadsPerSm / block per SM) run
/// in turn.
double thread_loop_s(double grid, double block, double items, double loads, double sms) {
  const double resident = std::max(std::floor(kThreadsPerSm / block), 1.0);
  const double waves = std::ceil(grid / (sms * resident));
  return waves * items * loads * kBlockRoundTripS;
}

}  // namespace

double index_gather_chain_s(double grid, double block, double elements, double index_tensors,
                            double sms) noexcept {
  if (!(grid > 0) || !(block > 0) || !(elements > 0) || !(index_tensors >= 0) || !(sms > 0))
    return 0.0;
  const double items = std::clamp(std::ceil(elements / (grid * block)), 1.0, kIndexKernelItems);
  return thread_loop_s(grid, block, items, index_tensors + 1.0, sms);
}

double scatter_chain_s(double n, double sms) noexcept {
  if (!(n > 0) || !(sms > 0)) return 0.0;
  const double grid = std::ceil(n / (kScatterKernelThreads * kScatterKernelItems));
  const double items =
      std::clamp(std::ceil(n / (grid * kScatterKernelThreads)), 1.0, kScatterKernelItems);
  return thread_loop_s(grid, kScatterKernelThreads, items, 1.0, sms);
}

double index_gather_outputs(double grid, double block) noexcept {
  if (!(grid > 0) || !(block > 0)) return 0.0;
  return grid * block * kIndexKernelItems;
}

double index_put_launches(double n, double passes) noexcept {
  if (!(n > 0)) return 0.0;
  if (n <= kCubSingleTileItems64 || !(passes > 0)) return 2.0;
  return 2.0 * passes + 4.0 + 1.0;
}

double index_put_accumulate_chain_s(double n, double unique_rows, double slice, double sms,
                                    double step_s) noexcept {
  if (!(n > 0) || !(unique_rows > 0) || !(slice > 0) || !(sms > 0) || !(step_s > 0)) return 0.0;
  constexpr double kIndicesPerBlock = 4.0;
  constexpr double kChunk = 32.0 * 4.0;  // a warp's lanes x the kernel's unroll
  const double duplicates = std::max(n / unique_rows, 1.0);
  const double chains = unique_rows * std::ceil(slice / kChunk);
  const double active = std::clamp(kIndicesPerBlock / duplicates, 1.0, kIndicesPerBlock);
  const double resident = kThreadsPerSm / kIndexPutBlockThreads;
  const double rounds = std::ceil(chains / (sms * resident * active));
  return rounds * duplicates * step_s;
}

}  // namespace roofline
