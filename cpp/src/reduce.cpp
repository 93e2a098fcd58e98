#include "roofline/ops/reduce.hpp"

#include <algorithm>
#include <cmath>

#include "roofline/ops/select.hpp"

namespace roofline {

namespace {

constexpr double kMaxThreads = 512.0;         // reduce_kernel<512, 1>
constexpr double kMinValuesPerThread = 16.0;  // setReduceConfig's min_values_per_thread
constexpr double kMaxValuesPerThread = 256.0;
constexpr double kVectorizeFrom = 128.0;      // dim0 >= 128 vectorizes the input

/// Elements per load: `vec` once the input is vectorized, else 1.
double load_width(double numel, double vec) noexcept {
  return numel >= kVectorizeFrom && vec > 1.0 ? std::floor(vec) : 1.0;
}

}  // namespace

double full_reduce_threads(double numel, double vec) noexcept {
  if (!(numel >= 1.0)) return 1.0;
  const double dim0 = std::max(std::floor(numel / load_width(numel, vec)), 1.0);
  if (dim0 >= kMaxThreads) return kMaxThreads;
  return std::exp2(std::floor(std::log2(dim0)));
}

double full_reduce_blocks(double numel, double vec, double sms) noexcept {
  if (!(numel >= 1.0) || !(sms > 0)) return 1.0;
  const double threads = full_reduce_threads(numel, vec);
  const double values = std::ceil(numel / threads);
  if (values < kMaxValuesPerThread) return 1.0;
  const double target = sms * std::floor(kThreadsPerSm / threads);
  return std::max(std::ceil(values / kMaxValuesPerThread),
                  std::min(target, std::ceil(values / kMinValuesPerThread)));
}

double full_reduce_loads(double numel, double vec, double sms) noexcept {
  if (!(numel >= 1.0)) return 0.0;
  const double per_thread =
      std::ceil(numel / (full_reduce_threads(numel, vec) * full_reduce_blocks(numel, vec, sms)));
  return std::ceil(per_thread / load_width(numel, vec));
}

double full_reduce_chain_s(double numel, double vec, double bytes_s, double sms) noexcept {
  if (!(numel >= 1.0)) return 0.0;
  const double streamed = std::max(bytes_s, 0.0) + kBlockRoundTripS;
  double chain = std::max(full_reduce_loads(numel, vec, sms) * kBlockRoundTripS, streamed);
  if (full_reduce_blocks(numel, vec, sms) > 1.0)
    chain += kGlobalReduceTailRoundTrips * kBlockRoundTripS;
  return chain;
}

}  // namespace roofline
