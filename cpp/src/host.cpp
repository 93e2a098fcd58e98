#include "roofline/ops/host.hpp"

#include <algorithm>

namespace roofline {

namespace {

/// Number of region boundaries r (1 <= r < R) at kernel i, boundary r at floor(r * n / R):
/// ceil((i + 1) R / n) - ceil(i R / n) for 1 <= i < n.
std::size_t region_starts_at(std::size_t i, std::size_t n, std::size_t regions) noexcept {
  if (i == 0 || i >= n) {
    return 0;
  }
  const auto ceil_div = [n](std::size_t a) { return (a + n - 1) / n; };
  return ceil_div((i + 1) * regions) - ceil_div(i * regions);
}

/// GPU time of a kernel sequence (each kernel at least the gap floor) and the kernels' own
/// time without that floor.
struct BusyTime {
  double gpu = 0.0;
  double work = 0.0;
};

BusyTime busy_time(const double* kernel_s, std::size_t n, const HostTerms& t) noexcept {
  BusyTime b;
  for (std::size_t j = 0; j < n; ++j) {
    b.gpu += std::max(kernel_s[j], t.kernel_gap_s);
    b.work += kernel_s[j];
  }
  return b;
}

}  // namespace

double launch_gap_s(LaunchMode mode, const HostTerms& t, std::size_t i, std::size_t n,
                    std::size_t regions) noexcept {
  if (i == 0 || i >= n) {
    return 0.0;  // the first launch is the reference; there is no launch after the last
  }
  switch (mode) {
    case LaunchMode::eager:
      return t.eager_launch_s;
    case LaunchMode::compiled: {
      const std::size_t r = std::clamp<std::size_t>(regions, 1, n);
      return t.compiled_launch_s +
             static_cast<double>(region_starts_at(i, n, r)) * t.compiled_call_s;
    }
    case LaunchMode::graph:
      return 0.0;  // one replay issues every kernel; the GPU spaces them kernel_gap_s apart
  }
  return 0.0;
}

WallTime wall_time(const double* kernel_s, std::size_t n, LaunchMode mode, std::size_t regions,
                   const HostTerms& t) noexcept {
  WallTime w;
  if (n == 0) {
    return w;
  }
  // GPU total first, then one pass: prefix GPU time P_{i-1} and host issue time A_i give
  // A_i + (G - P_{i-1}), the time kernel i's launch leaves for the rest to finish.
  const auto [gpu, work] = busy_time(kernel_s, n, t);
  double issued = 0.0;  // A_i: host time from the first launch to launch i
  double before = 0.0;  // P_{i-1}: GPU time of the kernels before i
  double wall = gpu;    // i = 0: everything launched at once
  for (std::size_t i = 1; i < n; ++i) {
    issued += launch_gap_s(mode, t, i, n, regions);
    before += std::max(kernel_s[i - 1], t.kernel_gap_s);
    wall = std::max(wall, issued + (gpu - before));
  }
  const double floor_s = mode == LaunchMode::graph ? t.graph_launch_s : t.kernel_latency_s;
  w.gpu_s = gpu;
  w.wall_s = std::max(wall, floor_s);
  w.host_s = std::max(issued, floor_s);
  // Launch-bound: launching (host issue, idle GPU, gap floors) is most of the wall time.
  w.launch_bound = w.wall_s > 2.0 * work;
  return w;
}

WallTime repeated_wall_time(const double* kernel_s, std::size_t n, LaunchMode mode,
                            std::size_t regions, const HostTerms& t) noexcept {
  WallTime w;
  if (n == 0) {
    return w;
  }
  const auto [gpu, work] = busy_time(kernel_s, n, t);
  // Host time of one call: every launch (the first one too, as the loop repeats the call) and,
  // compiled, the entry of each region; a CUDA graph is one replay.
  double host = 0.0;
  switch (mode) {
    case LaunchMode::eager:
      host = static_cast<double>(n) * t.eager_launch_s;
      break;
    case LaunchMode::compiled:
      host = static_cast<double>(n) * t.compiled_launch_s +
             static_cast<double>(std::clamp<std::size_t>(regions, 1, n)) * t.compiled_region_s;
      break;
    case LaunchMode::graph:
      host = t.graph_launch_s;
      break;
  }
  const double floor_s = mode == LaunchMode::graph ? t.graph_launch_s : t.kernel_latency_s;
  w.gpu_s = gpu;
  w.host_s = std::max(host, floor_s);
  w.wall_s = std::max({gpu, host, floor_s});
  w.launch_bound = w.wall_s > 2.0 * work;
  return w;
}

namespace {

/// looped_wall_time's steady state for host gaps gap(i) (gap(0): the call's first launch, its
/// region entry included). A_i = sum_{j <= i} gap(j), S_i = sum_{j >= i} g_j; one call from an
/// idle GPU ends at W0 = max(head_s + gpu, max_i (A_i + S_i)); period P = A_{n-1} (+ the
/// head's eager launch); wall = max(floor, gpu, min(W0, P) - head_s).
template <class Gap>
WallTime looped(const double* kernel_s, std::size_t n, Gap gap, double head_s, double floor_s,
                const HostTerms& t, double tail_s = 0.0) noexcept {
  WallTime w;
  if (n == 0) {
    return w;
  }
  const auto [gpu, work] = busy_time(kernel_s, n, t);
  // Walk forward once for A_{n-1}, then back: A_i = A_{n-1} - sum_{j > i} gap(j).
  double issued_last = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    issued_last += gap(i);
  }
  double issued = issued_last;
  double rest = 0.0;
  double one_call = head_s + gpu;
  for (std::size_t i = n; i-- > 0;) {
    rest += std::max(kernel_s[i], t.kernel_gap_s);
    one_call = std::max(one_call, issued + rest);
    issued -= gap(i);
  }
  const double period = issued_last + tail_s + (head_s > 0.0 ? t.eager_launch_s : 0.0);
  w.gpu_s = gpu;
  w.host_s = std::max(period, floor_s);
  w.wall_s = std::max({floor_s, gpu, std::min(one_call, period) - head_s});
  w.launch_bound = w.wall_s > 2.0 * work;
  return w;
}

}  // namespace

WallTime looped_wall_time(const double* kernel_s, std::size_t n, LaunchMode mode,
                          std::size_t regions, double head_s, const HostTerms& t) noexcept {
  const std::size_t r = std::clamp<std::size_t>(regions, 1, std::max<std::size_t>(n, 1));
  // Later launches are spaced as in one call (launch_gap_s); the loop also pays the first one,
  // and, compiled, the entry of the first region.
  double first = 0.0;
  switch (mode) {
    case LaunchMode::eager: first = t.eager_launch_s; break;
    case LaunchMode::compiled: first = t.compiled_launch_s + t.compiled_call_s; break;
    case LaunchMode::graph: first = t.graph_launch_s; break;
  }
  auto gap = [&](std::size_t i) { return i == 0 ? first : launch_gap_s(mode, t, i, n, r); };
  const double floor_s = mode == LaunchMode::graph ? t.graph_launch_s : t.kernel_latency_s;
  return looped(kernel_s, n, gap, head_s, floor_s, t);
}

double linear_region_entry_s(const LinearCall& call, const HostTerms& t) noexcept {
  const double extra = call.torchao ? t.torchao_call_s : 0.0;
  switch (call.mode) {
    case LaunchMode::eager: return extra;
    case LaunchMode::compiled:
      return (call.training ? t.compiled_call_s : t.compiled_forward_s) + extra;
    case LaunchMode::graph: return 0.0;
  }
  return 0.0;
}

WallTime linear_call_wall_time(const double* kernel_s, std::size_t n, const LinearCall& call,
                               double head_s, const HostTerms& t) noexcept {
  double launch = 0.0;
  switch (call.mode) {
    case LaunchMode::eager: launch = t.eager_launch_s; break;
    case LaunchMode::compiled: launch = t.compiled_launch_s; break;
    case LaunchMode::graph: launch = 0.0; break;
  }
  const bool graph = call.mode == LaunchMode::graph;
  const double entry = linear_region_entry_s(call, t);
  const std::size_t backward = call.training && n >= 2 ? n / 2 : n;  // first backward kernel
  auto gap = [&](std::size_t i) {
    if (i == 0) {
      return graph ? t.graph_launch_s : launch + entry;
    }
    return launch + (i == backward ? entry : 0.0);
  };
  const double floor_s = graph ? t.graph_launch_s : t.kernel_latency_s;
  return looped(kernel_s, n, gap, head_s, floor_s, t);
}

double host_op_s(HostOp op, const HostTerms& t) noexcept {
  switch (op) {
    case HostOp::view: return t.op_view_launches * t.eager_launch_s;
    case HostOp::kernel: return t.op_kernel_launches * t.eager_launch_s;
    case HostOp::gemm: return t.op_gemm_launches * t.eager_launch_s;
    case HostOp::attention: return t.op_attention_launches * t.eager_launch_s;
    case HostOp::module: return t.module_call_launches * t.eager_launch_s;
    case HostOp::backward: return t.op_backward_launches * t.eager_launch_s;
  }
  return 0.0;
}

double host_calls_s(const double* counts, const HostTerms& t) noexcept {
  double s = 0.0;
  for (std::size_t c = 0; c < host_op_classes; ++c) {
    s += std::max(counts[c], 0.0) * host_op_s(static_cast<HostOp>(c), t);
  }
  return s;
}

WallTime program_wall_time(const double* kernel_s, const double* counts, std::size_t n,
                           const double* tail, const HostTerms& t) noexcept {
  const double entry = std::max(t.step_call_launches, 0.0) * t.eager_launch_s;
  auto gap = [&](std::size_t i) {
    return host_calls_s(counts + i * host_op_classes, t) + (i == 0 ? entry : 0.0);
  };
  const double end = host_calls_s(tail, t) + (n == 0 ? entry : 0.0);
  return looped(kernel_s, n, gap, 0.0, t.kernel_latency_s, t, end);
}

WallTime calls_wall_time(const double* kernel_s, const double* counts, std::size_t n,
                         const HostTerms& t) noexcept {
  WallTime w;
  if (n == 0) {
    return w;
  }
  const auto [gpu, work] = busy_time(kernel_s, n, t);
  double issued = 0.0;  // A_i
  double before = 0.0;  // P_{i-1}
  double wall = gpu;
  for (std::size_t i = 1; i < n; ++i) {
    issued += host_calls_s(counts + i * host_op_classes, t);
    before += std::max(kernel_s[i - 1], t.kernel_gap_s);
    wall = std::max(wall, issued + (gpu - before));
  }
  w.gpu_s = gpu;
  w.wall_s = std::max(wall, t.kernel_latency_s);
  w.host_s = std::max(issued, t.kernel_latency_s);
  w.launch_bound = w.wall_s > 2.0 * work;
  return w;
}

double synced_replay_gap_s(double queued_ops, double syncs, double calls,
                           const HostTerms& t) noexcept {
  return std::max(queued_ops, 0.0) * t.kernel_gap_s + std::max(syncs, 0.0) * t.kernel_latency_s +
         std::max(calls, 0.0) * host_op_s(HostOp::kernel, t) + t.graph_launch_s;
}

}  // namespace roofline
