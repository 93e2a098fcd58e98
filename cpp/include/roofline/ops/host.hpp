#pragma once
#include <cstddef>
#include <cstdint>

#include "roofline/terms/host.hpp"

namespace roofline {

/// How the host issues a sequence of kernels.
enum class LaunchMode : std::uint8_t {
  eager,     ///< one Python/ATen dispatch per kernel
  compiled,  ///< torch.compile regions: a wrapper launches its kernels, a fixed cost per call
  graph      ///< one CUDA graph replay issues every kernel
};

/// Wall time of a kernel sequence and the parts that set it.
struct WallTime {
  double wall_s = 0;          ///< first launch to last kernel's end
  double gpu_s = 0;           ///< GPU time: sum over kernels of max(kernel time, kernel_gap_s)
  double host_s = 0;          ///< launch time: host issue span, at least the call's latency floor
  bool launch_bound = false;  ///< wall_s > 2 x sum of kernel times: launching is most of the wall
};

/// Host time between the launch of kernel i - 1 and kernel i (0 unless 1 <= i < n) of n kernels
/// split evenly into `regions` compiled regions (compiled mode; clamped to [1, n]).
double launch_gap_s(LaunchMode mode, const HostTerms& t, std::size_t i, std::size_t n,
                    std::size_t regions) noexcept;

/// Wall time of n kernels with GPU times kernel_s[0..n) issued in order on one stream:
/// wall = max(floor, max_i (A_i + sum_{j >= i} g_j)), A_i = sum_{1 <= j <= i} launch_gap_s(j),
/// g_j = max(kernel_s[j], kernel_gap_s), floor = graph_launch_s (graph) or kernel_latency_s.
/// n == 0 gives zeros. Monotone non-decreasing in every kernel time, every term and n.
WallTime wall_time(const double* kernel_s, std::size_t n, LaunchMode mode, std::size_t regions,
                   const HostTerms& t) noexcept;

/// Per-call wall time of n kernels when the same call is repeated back to back with no host
/// synchronization (a benchmark loop): the host runs ahead, so one call costs
/// max(floor, gpu, host) with host = sum_i launch cost of kernel i + regions x compiled_region_s
/// (compiled mode), gpu = sum_j max(kernel_s[j], kernel_gap_s). Monotone like wall_time.
WallTime repeated_wall_time(const double* kernel_s, std::size_t n, LaunchMode mode,
                            std::size_t regions, const HostTerms& t) noexcept;

/// Per-call time of a training step (n kernels in `regions` compiled regions: forward, backward)
/// repeated in a loop that runs a head_s GPU kernel before each call outside the timed span
/// (triton do_bench's L2 flush; head_s = 0: a plain loop, timed per iteration). Host issue
/// times from the head's launch: A_i = sum_{j <= i} gap_j, gap_j = launch cost of kernel j plus
/// compiled_call_s for each region starting at j (region 0 at j = 0; compiled mode), host period
/// P = A_{n-1} (+ eager_launch_s for the head's own launch when head_s > 0). One call from an
/// idle GPU ends at W0 = max(head_s + gpu, max_i (A_i + sum_{j >= i} g_j)); the steady state
/// of the loop gives wall = max(floor, gpu, min(W0, P) - head_s) (head_s = 0: max(gpu, P)).
/// Monotone non-decreasing in every kernel time and host term.
WallTime looped_wall_time(const double* kernel_s, std::size_t n, LaunchMode mode,
                          std::size_t regions, double head_s, const HostTerms& t) noexcept;

/// One call of a linear layer as a program issues it: how its kernels are launched, whether it
/// runs forward + backward (training: two regions, forward then backward) or forward only, and
/// whether it is a torchao low-precision linear (float8 training module, or a Float8Tensor
/// weight with dynamic activation quantization).
struct LinearCall {
  LaunchMode mode = LaunchMode::compiled;  ///< eager, compiled or CUDA graph
  bool training = false;                   ///< forward + backward (2 regions), else forward
  bool torchao = false;                    ///< a torchao low-precision linear (its call costs)
};

/// Host time to enter one region of `call` (forward, or backward in training):
/// compiled: compiled_call_s (training) or compiled_forward_s (inference), eager: 0; plus
/// torchao_call_s for a torchao linear (eager and compiled); graph: 0 (captured).
double linear_region_entry_s(const LinearCall& call, const HostTerms& t) noexcept;

/// Per-call time of a linear layer's n kernels when the call is repeated in a loop with a
/// head_s GPU kernel before each call outside the timed span (head_s = 0: a plain loop), the
/// looped_wall_time model with the host gaps of `call`: launch cost per kernel
/// (eager_launch_s, compiled_launch_s, or 0 in a graph replayed for graph_launch_s) plus
/// linear_region_entry_s at the first kernel and, training, at the backward's first
/// (kernel n / 2). Monotone non-decreasing in every kernel time and host term.
WallTime linear_call_wall_time(const double* kernel_s, std::size_t n, const LinearCall& call,
                               double head_s, const HostTerms& t) noexcept;

/// What the host runs for an eager program between two kernel launches, by class.
enum class HostOp : std::uint8_t {
  view,       ///< an aten op that launches no kernel (view, reshape, transpose, alias)
  kernel,     ///< an aten op that launches elementwise / reduction / copy kernels
  gemm,       ///< a GEMM call (aten::linear, matmul, mm, addmm, bmm)
  attention,  ///< a scaled_dot_product_attention call
  module,     ///< one nn.Module call (Python)
  backward    ///< one backward kernel's autograd node
};

/// Number of HostOp classes (the row width of program_wall_time's counts).
inline constexpr std::size_t host_op_classes = 6;

/// Host time of one call of class op (s): the matching HostTerms field (op_view_launches,
/// op_kernel_launches, op_gemm_launches, op_attention_launches, module_call_launches,
/// op_backward_launches) x eager_launch_s.
double host_op_s(HostOp op, const HostTerms& t) noexcept;

/// Host time of counts[0..host_op_classes) calls by class: sum_c counts[c] x host_op_s(c).
double host_calls_s(const double* counts, const HostTerms& t) noexcept;

/// Per-step wall time of an eager program repeated in a loop (decode steps, training steps):
/// n kernels with GPU times kernel_s, the host calls issued from the previous kernel's launch
/// up to kernel i's launch in counts[i * host_op_classes ...] (row 0: from the step's start),
/// and tail[0..host_op_classes) the calls after the last launch. With gap_i =
/// host_calls_s(row i) (row 0 plus the step's entry call, step_call_launches x eager_launch_s),
/// A_i = sum_{j <= i} gap_j, g_j = max(kernel_s[j], kernel_gap_s) and the
/// period P = A_{n-1} + host_calls_s(tail): one step from an idle GPU ends at
/// W0 = max(gpu, max_i (A_i + sum_{j >= i} g_j)) and wall = max(kernel_latency_s, gpu,
/// min(W0, P)) (looped_wall_time's steady state with no head). Never below the GPU time;
/// monotone non-decreasing in every kernel time, count and term.
WallTime program_wall_time(const double* kernel_s, const double* counts, std::size_t n,
                           const double* tail, const HostTerms& t) noexcept;

/// Wall time of one kernel sequence launched from an idle stream (a framework's launches
/// after a device-to-host synchronisation, or a pass whose host runs ahead): n kernels with
/// GPU times kernel_s, the host calls before kernel i's launch in counts[i * host_op_classes
/// ...] (row 0 is the reference launch and is not charged). With A_0 = 0,
/// A_i = sum_{1 <= j <= i} host_calls_s(row j) and g_j = max(kernel_s[j], kernel_gap_s):
/// wall = max(kernel_latency_s, max_i (A_i + sum_{j >= i} g_j)) (wall_time's formula with a
/// host gap per launch by class instead of eager_launch_s). host_s = A_{n-1}. Monotone
/// non-decreasing in every kernel time, count and term.
WallTime calls_wall_time(const double* kernel_s, const double* counts, std::size_t n,
                         const HostTerms& t) noexcept;

/// Wall time from the end of one CUDA-graph step to the start of the next when the host must
/// read device memory before replaying the next graph (an engine whose attention metadata is
/// planned on the host, e.g. FlashInfer's plan copying its indptr to the CPU): the `queued_ops`
/// small ops the host launched behind the previous step run back to back (kernel_gap_s each),
/// each of the `syncs` blocking device-to-host copies costs an idle-stream round trip
/// (kernel_latency_s), the `calls` host calls made after the first sync cost host_op_s(kernel)
/// each, then the replay (graph_launch_s): queued_ops x kernel_gap_s + syncs x
/// kernel_latency_s + calls x host_op_s(HostOp::kernel) + graph_launch_s. Negative counts count
/// as 0; monotone non-decreasing in every count and term.
double synced_replay_gap_s(double queued_ops, double syncs, double calls,
                           const HostTerms& t) noexcept;

}  // namespace roofline
