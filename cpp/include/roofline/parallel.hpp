#pragma once
// The sweeps' thread split: contiguous chunks of the points, one std::thread each.
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace roofline {

/// Below this many points per thread a sweep stays on the calling thread.
constexpr std::size_t kMinPointsPerThread = 1u << 15;

/// Runs fn(begin, end) over [0, n) split across `threads` workers (0 = all cores), at least
/// min_points per worker; the calling thread alone for small n.
template <class Fn>
void parallel_for(std::size_t n, int threads, Fn&& fn,
                  std::size_t min_points = kMinPointsPerThread) {
  std::size_t workers = threads > 0 ? static_cast<std::size_t>(threads)
                                    : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min(workers, std::max<std::size_t>(1, n / min_points));
  if (workers <= 1) {
    fn(std::size_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(workers);
  const std::size_t chunk = (n + workers - 1) / workers;
  for (std::size_t w = 0; w < workers; ++w) {
    const std::size_t begin = w * chunk;
    const std::size_t end = std::min(n, begin + chunk);
    if (begin >= end) break;
    pool.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  for (auto& t : pool) t.join();
}

}  // namespace roofline
