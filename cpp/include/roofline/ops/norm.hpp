#pragma once
#include <cstddef>
#include <cstdint>

#include "roofline/cost.hpp"
#include "roofline/dtype.hpp"
#include "roofline/estimate.hpp"
#include "roofline/sweep.hpp"

namespace roofline {

/// Row-wise streaming ops: one kernel normalizes or reduces each row of a rows x cols tensor.
enum class RowOp : std::uint8_t { rmsnorm, layernorm, softmax, cross_entropy, log_softmax };

/// Which implementation runs a row-wise op.
enum class RowBackend : std::uint8_t {
  fused,    ///< one good fused kernel (QuACK, Liger, cuDNN class): one read, one write
  eager,    ///< PyTorch's aten CUDA kernels, as eager mode launches them
  compiled  ///< torch.compile (Inductor): one Triton reduction kernel (looped above 1024 cols)
};

/// Shape and options of a row-wise op (cross_entropy: cols = vocabulary size).
struct RowOpShape {
  double rows = 1;           ///< independent rows (tokens)
  double cols = 1;           ///< elements per row (hidden size, or vocabulary)
  DType dtype = DType::bf16;  ///< format of the input, output, weight and gradients
  bool backward = false;     ///< the backward pass alone (reads the saved fp32 statistics)
  bool save_stats = false;   ///< forward writes fp32 per-row statistics for a backward pass
  RowBackend backend = RowBackend::fused;  ///< implementation (kernels, passes, row mapping)
};

/// Shape of an elementwise kernel (or a chain of `kernels`): `numel` elements of every tensor
/// read and written.
struct ElementwiseShape {
  double numel = 1;              ///< elements per tensor
  double reads = 1;              ///< tensors read
  double writes = 1;             ///< tensors written
  double flops_per_element = 0;  ///< arithmetic per element (fp32 vector peak)
  DType dtype = DType::bf16;     ///< element format of every tensor
  double kernels = 1;            ///< kernels launched back to back (reads, writes: their totals)
};

/// Hardware-free cost of one elementwise kernel, or a back-to-back chain of `s.kernels` of them
/// (kind = memory, math at fp32).
Cost elementwise_cost(const ElementwiseShape& s) noexcept;

/// Threads of aten's non-vectorized elementwise kernel resident on one SM:
/// `elementwise_kernel<128, 4>` launches 128-thread blocks, 16 of them fill the SM's 2048
/// threads (ATen `CUDALoops.cuh`).
inline constexpr double kAtenLoopThreadsPerSm = 2048.0;

/// Time floor of aten's non-vectorized elementwise kernel (`elementwise_kernel<128, 4>`, the
/// path TensorIterator takes when an operand is broadcast or laid out unlike the others):
/// each thread computes one element's offsets, loads it (2-byte scalar loads, no vector
/// width) and stores the result before its next element, so every resident thread has one
/// DRAM round trip in flight: `ceil(numel / (sms x threads_per_sm))` steps of `step_s` (the
/// dependent load -> store round trip). 0 without elements or SMs.
double aten_loop_floor_s(double numel, double sms, double threads_per_sm,
                         double step_s) noexcept;

/// Threads of aten's one-block nll_loss kernels (reduced 2-d forward and backward):
/// `clamp(2^round(log2(rows / 16)), 32, 1024)`. 32 for no rows.
double nll_loss_threads(double rows) noexcept;

/// Time of aten's one-block nll_loss kernel over `rows` targets: each of
/// `nll_loss_threads(rows)` threads walks `ceil(rows / threads)` rows, each row
/// `round_trips` dependent loads of `step_s` (forward: the target, then the logit it indexes:
/// 2; backward: the target, its store fire-and-forget: 1). 0 without rows.
double nll_loss_chain_s(double rows, double round_trips, double step_s) noexcept;

/// Shared memory aten's block softmax may cache a row in: the default 48 KiB less its reduction
/// buffer (longer rows are read again).
inline constexpr double kAtenSoftmaxSmemBytes = 49152.0 - 32.0 * 4.0;

/// Bytes of one int64 class label (cross_entropy).
inline constexpr double kLabelBytes = 8.0;

/// Bytes of one fp32 statistic (rstd, mean, log-sum-exp, loss, weight-gradient accumulator).
inline constexpr double kStatBytes = 4.0;

/// FLOPs per element of each op's pass (forward, backward), counted at the fp32 vector peak.
double row_op_flops_per_element(RowOp op, bool backward) noexcept;

/// Hardware-free cost of one row-wise op under its backend (kind = memory, math at fp32):
/// kernels, compulsory DRAM bytes, re-reads, transcendentals and the row-to-SM mapping.
Cost row_op_cost(RowOp op, const RowOpShape& s) noexcept;

/// Row-wise op estimates over arrays rows, cols (length n_points); options from `flags`.
void row_op_sweep(RowOp op, const double* rows, const double* cols, std::size_t n_points,
                  const RowOpShape& flags, const Rates& rates, EstimateColumns out) noexcept;

}  // namespace roofline
