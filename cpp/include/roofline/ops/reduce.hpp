#pragma once
// aten's full reductions (`x.sum()`, `x.mean()` over every element of a contiguous tensor):
// the launch configuration `setReduceConfig` (ATen Reduce.cuh) picks for one output, and the
// chain of dependent round trips that sets a small reduction's time.

namespace roofline {

/// Dependent round trips of the global (multi-block) tail: each block stores its partial and
/// fences, bumps the output's semaphore with an atomic, and the last block reads the partials.
inline constexpr double kGlobalReduceTailRoundTrips = 3.0;

/// Threads of aten's `reduce_kernel<512, 1>` for a full reduction of `numel` elements loaded
/// `vec` at a time (8 for 16-bit sum / mean, 4 otherwise): `last_pow2(numel / vec)` (of
/// `numel` below 128 elements, which are not vectorized), at most 512. 1 for no elements.
double full_reduce_threads(double numel, double vec) noexcept;

/// Blocks of that reduction (`ctas_per_output`): with `v = ceil(numel / threads)` values per
/// thread, `max(ceil(v / 256), min(sms x 2048 / threads, ceil(v / 16)))` once `v >= 256`,
/// else 1 (one block, no global tail). 1 without elements or SMs.
double full_reduce_blocks(double numel, double vec, double sms) noexcept;

/// Vector loads each thread issues in turn: `ceil(ceil(numel / (threads x blocks)) / vec)`
/// (`vec` = 1 below 128 elements). 0 for no elements.
double full_reduce_loads(double numel, double vec, double sms) noexcept;

/// Latency chain of that kernel beyond its launch: `max(loads x kBlockRoundTripS, bytes_s +
/// kBlockRoundTripS)` (each thread's dependent loads, or the bytes behind the first round trip
/// once the loads in flight cover the bandwidth) plus, with several blocks,
/// `kGlobalReduceTailRoundTrips` round trips. 0 for no elements.
double full_reduce_chain_s(double numel, double vec, double bytes_s, double sms) noexcept;

}  // namespace roofline
