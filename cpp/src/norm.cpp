#include "roofline/ops/norm.hpp"

#include <algorithm>
#include <cmath>

namespace roofline {

double row_op_flops_per_element(RowOp op, bool backward) noexcept {
  // Forward / backward arithmetic per element (exp counted as one FLOP, per-row terms such as
  // rsqrt, log and the division by cols are not counted):
  switch (op) {
    // fwd: sum of squares (mul, add), y = x * rstd * w (2 mul) = 4.
    // bwd: xhat = x * rstd, g = dy * w, dot += g * xhat (2), dx = rstd * (g - xhat * dot / C)
    //      (mul, sub, mul), dw += dy * xhat (2) = 9.
    case RowOp::rmsnorm: return backward ? 9.0 : 4.0;
    // fwd: sum (add), d = x - mean, var += d * d (3), y = d * rstd * w + b (3) = 7.
    // bwd: xhat (sub, mul), g = dy * w, sum g, sum g * xhat (2), dx = rstd * (g - (xhat * s2
    //      + s1) / C) (4), dw += dy * xhat (2), db += dy (1) = 13.
    case RowOp::layernorm: return backward ? 13.0 : 7.0;
    // fwd: max, x - max, exp, sum, scale = 5. bwd: dot += dy * y (2), dy - dot, * y = 4.
    // log_softmax: fwd as softmax; bwd: sum dy, exp(y), dy - exp(y) * sum (2) = 4.
    case RowOp::softmax:
    case RowOp::log_softmax: return backward ? 4.0 : 5.0;
    // fwd: max, x - max, exp, sum = 4. bwd: x - lse, exp, - onehot, * dloss = 4.
    case RowOp::cross_entropy: return 4.0;
  }
  return 0.0;
}

namespace {

// One fused kernel: every tensor crosses DRAM once.
Cost fused_cost(RowOp op, const RowOpShape& s) noexcept {
  const double b = bytes_per_element(s.dtype);
  const double elems = s.rows * s.cols;
  Cost c;
  c.kind = KernelKind::memory;
  c.math = PeakClass::fp32;
  c.flops = elems * row_op_flops_per_element(op, s.backward);
  switch (op) {
    case RowOp::rmsnorm:
    case RowOp::layernorm: {
      // Per-row fp32 statistics: rstd (RMSNorm), mean and rstd (LayerNorm).
      const double stats = op == RowOp::rmsnorm ? 1.0 : 2.0;
      // Per-column parameters: weight (RMSNorm), weight and bias (LayerNorm).
      const double params = op == RowOp::rmsnorm ? 1.0 : 2.0;
      if (s.backward) {
        // Reads dy, x, the weight and the saved statistics; writes dx and one fp32 row of
        // parameter gradients per parameter (the weight is only read, not its bias).
        c.bytes_read = 2.0 * elems * b + s.cols * b + stats * kStatBytes * s.rows;
        c.bytes_written = elems * b + params * kStatBytes * s.cols;
      } else {
        c.bytes_read = elems * b + params * s.cols * b;
        c.bytes_written = elems * b + (s.save_stats ? stats * kStatBytes * s.rows : 0.0);
      }
      break;
    }
    case RowOp::softmax:
    case RowOp::log_softmax:
      // The output is what the backward needs: no statistics are saved.
      c.bytes_read = (s.backward ? 2.0 : 1.0) * elems * b;  // x, or y and dy
      c.bytes_written = elems * b;                          // y, or dx
      break;
    case RowOp::cross_entropy:
      if (s.backward) {
        // Reads logits, labels, the saved log-sum-exp and the per-row loss gradient; writes
        // the logits' gradient.
        c.bytes_read = elems * b + s.rows * (kLabelBytes + 2.0 * kStatBytes);
        c.bytes_written = elems * b;
      } else {
        // Reads logits and labels; writes the fp32 loss per row (and the log-sum-exp).
        c.bytes_read = elems * b + s.rows * kLabelBytes;
        c.bytes_written = s.rows * kStatBytes * (s.save_stats ? 2.0 : 1.0);
      }
      break;
  }
  return c;
}

// aten's LayerNorm / RMSNorm kernels (layer_norm_kernel.cu, vectorized path): 256 threads per
// CTA reading 4-element vectors, so a row of up to 1024 elements is one load per thread; longer
// rows are read again (from L2) after the row statistics are reduced.
constexpr double kAtenNormRowElems = 256.0 * 4.0;
// CTAs of aten's norm kernels resident per SM (256 threads each, 2048 threads per SM).
constexpr double kAtenNormCtas = 8.0;
// aten softmax (SoftMax.cu, torch >= 2.10): the forward runs the persistent warp-per-row kernel
// (dispatch_softmax_forward) for rows up to 2048 elements and 8192 bytes, the backward
// (host_softmax_backward) up to 1024 elements and 4096 bytes; longer rows one 1024-thread CTA
// per row: the forward keeps the row in
// registers when each thread holds at most 9 elements (cunn_SoftMaxForwardReg, any alignment),
// else (and the backward) caches it in the default 48 KiB of shared memory when it fits (minus
// the reduction buffer, 16-byte multiples), else re-reads it.
constexpr double kAtenPersistentElems = 1024.0;
constexpr double kAtenPersistentBytes = 4096.0;
constexpr double kAtenPersistentForwardElems = 2048.0;
constexpr double kAtenPersistentForwardBytes = 8192.0;
// Most elements per thread of aten's register-resident forward kernel (1024 threads per CTA).
constexpr double kAtenRegElems = 9.0 * 1024.0;
// Inductor keeps rows up to 1024 elements in registers (persistent reduction); longer rows
// loop over the row and read it again for the output.
constexpr double kInductorPersistentElems = 1024.0;

// aten's host_softmax dispatch for a softmax / log_softmax over rows of `cols` elements.
// reg / smem: the row stays on chip (registers / shared memory), one 1024-thread CTA per row;
// looped: the same CTA re-reads the row from L2 / DRAM for each pass.

enum class AtenSoftmax : std::uint8_t { persistent, reg, smem, looped };

AtenSoftmax aten_softmax_path(double cols, double b, bool forward) {
  const double elems = forward ? kAtenPersistentForwardElems : kAtenPersistentElems;
  const double bytes = forward ? kAtenPersistentForwardBytes : kAtenPersistentBytes;
  if (cols <= elems && cols * b <= bytes) return AtenSoftmax::persistent;
  if (forward && cols <= kAtenRegElems) return AtenSoftmax::reg;  // row in registers
  const double vector = 16.0 / b;  // elements per 16-byte vector (ILP)
  if (cols * b < kAtenSoftmaxSmemBytes && std::fmod(cols, vector) == 0.0) return AtenSoftmax::smem;
  return AtenSoftmax::looped;
}

// Maps a row pass of aten's softmax kernels onto `c`: `rereads` tensors read again by the
// looped kernel; `exps` transcendentals per element (`exps_warp` in the warp-per-row kernel,
// which keeps the exps in registers).
void aten_softmax_rows(Cost& c, const RowOpShape& s, double b, double rereads, double exps,
                       double exps_warp) {
  const double elems = s.rows * s.cols;
  c.rows = s.rows;
  c.row_bytes = s.cols * b;
  c.transcendentals = exps * elems;
  switch (aten_softmax_path(s.cols, b, !s.backward)) {
    case AtenSoftmax::persistent:
      c.transcendentals = exps_warp * elems;
      c.row_kernel = RowKernel::aten_rows;
      c.ctas_per_sm = 0.0;
      break;
    case AtenSoftmax::reg:
      c.row_kernel = RowKernel::aten_cta;
      c.ctas_per_sm = 1.0;
      break;
    // cunn_SoftMaxForwardSmem / BackwardSmem: the looped kernel's code (vectorized loads, the
    // same passes and block reductions) with the row staged in shared memory. Measured on H200
    // (data/programs/h200/probe.jsonl, 4096 rows) it streams no faster than the looped kernel
    // (1.5-2.1 TB/s at 9224-24584 columns), so both are priced alike, re-reads included: a row
    // that stops being a multiple of the vector width, or outgrows shared memory, never gets
    // faster.
    case AtenSoftmax::smem:
    case AtenSoftmax::looped:
      c.row_kernel = RowKernel::aten_stream;
      c.ctas_per_sm = 1.0;
      c.reread_bytes = rereads * elems * b;
      break;
  }
}

// What eager PyTorch launches (aten CUDA kernels of torch 2.11).
Cost eager_cost(RowOp op, const RowOpShape& s) noexcept {
  const double b = bytes_per_element(s.dtype);
  const double elems = s.rows * s.cols;
  Cost c = fused_cost(op, s);
  switch (op) {
    case RowOp::rmsnorm:
    case RowOp::layernorm: {
      // One vectorized kernel (F.rms_norm is aten's _fused_rms_norm since torch 2.8), which
      // always writes the fp32 statistics; the backward's dx kernel reads dy and x again
      // after the row reduction.
      if (!s.backward && !s.save_stats) {
        c.bytes_written += (op == RowOp::rmsnorm ? 1.0 : 2.0) * kStatBytes * s.rows;
      }
      c.row_kernel = RowKernel::aten_rows;
      c.rows = s.rows;
      c.ctas_per_sm = kAtenNormCtas;
      c.row_bytes = s.cols * b;
      if (s.cols > kAtenNormRowElems) c.reread_bytes = (s.backward ? 2.0 : 1.0) * elems * b;
      if (s.backward && op == RowOp::layernorm) {
        // LayerNorm's parameter gradients are a second kernel (GammaBetaBackwardCUDAKernel):
        // a column reduction that reads dy and x once more, from DRAM (layer_norm_kernel.cu;
        // issue #23's encoder-layer trace: 112 us beside the dx kernel's 206 us at 16384 x
        // 4096 bf16). RMSNorm's fused backward is priced as before.
        c.kernels = 2.0;
        c.bytes_read += 2.0 * elems * b;
      }
      break;
    }
    case RowOp::softmax:
    case RowOp::log_softmax:
      if (!s.backward) {
        // max, sum of exp, exp / sum: re-reads twice when the row is not cached on chip; the
        // warp-per-row kernel keeps its exps in registers (exp, then a division).
        aten_softmax_rows(c, s, b, 2.0, 3.0, 2.0);
      } else if (op == RowOp::log_softmax) {
        // log_softmax_backward_cuda_out calls the backward kernel on dy directly (no dy * y
        // kernel): dx = dy - exp(y) * sum(dy), dy read for its sum and again with y.
        aten_softmax_rows(c, s, b, 1.0, 1.0, 1.0);
      } else {
        // tmp = dy * y (one elementwise kernel), then dx = y * (tmp - sum(tmp)) / ... : the
        // softmax backward kernel reads tmp for its sum and again with y for the output.
        c.kernels = 2.0;
        c.bytes_read += 2.0 * elems * b;
        c.bytes_written += elems * b;
        aten_softmax_rows(c, s, b, 1.0, 0.0, 0.0);
      }
      break;
    case RowOp::cross_entropy:
      if (!s.backward) {
        // F.cross_entropy = log_softmax (writes the full log-probabilities) + nll_loss (gathers
        // one per row and reduces them to the mean).
        c.kernels = 2.0;
        c.bytes_read += s.rows * b;
        c.bytes_written += elems * b;
        aten_softmax_rows(c, s, b, 2.0, 1.0, 1.0);
      } else {
        // nll_loss backward fills a zero gradient and scatters the labels' entries (2 kernels);
        // log_softmax backward reads it for its sum and again with the log-probabilities.
        c.kernels = 3.0;
        c.bytes_read = 2.0 * elems * b + s.rows * (kLabelBytes + kStatBytes);
        c.bytes_written = 2.0 * elems * b;
        aten_softmax_rows(c, s, b, 1.0, 1.0, 1.0);
      }
      break;
  }
  return c;
}

// Inductor's looped row reduction (torch 2.11 triton_heuristics, INNER hint, no max-autotune):
// XBLOCK = 2 rows per CTA up to 2048 columns, else 1; R0_BLOCK = min(cols, 2048) elements per
// loop step (a power of two); R0_BLOCK / 128 warps, at most 16: 512 threads from 2048 columns.
// A persistent-rblock config (R0_BLOCK = cols) is autotuned beside it and the H200 picks it at
// 4096 columns (data/programs/h200/norm_configs.jsonl): the same combines, fewer loop steps.
constexpr double kInductorMaxRBlock = 2048.0;
constexpr double kInductorMaxWarps = 16.0;
// Lanes of a warp; shuffle steps of a warp's tree reduction (log2 32).
constexpr double kWarpLanes = 32.0;
constexpr double kWarpShuffleSteps = 5.0;
// Lane instructions of one Welford combine (triton_helpers.welford_combine): delta = mean_2 -
// mean_1 unless equal (FSETP, FADD, FSEL), weight_1 + weight_2 (FADD), weight_2 / weight
// unless 0 (FSETP, MUFU.RCP and FMUL of div.full.f32 with its range fix-up (2), FSEL), the
// mean (FFMA), m2_1 + m2_2 + delta^2 x weight_1 x w2_over_w (FADD, FMUL, FMUL, FFMA) = 15.
// A sum's combine is one FADD. Across lanes each value moves by one SHFL (3 for Welford).
constexpr double kWelfordCombineOps = 15.0;
constexpr double kSumCombineOps = 1.0;
// Lane instructions per element of the forward norms' two passes (bf16 in and out; vector
// loads, stores and address arithmetic are per 4 elements and not counted). LayerNorm:
// statistics pass: convert (1), the mask compare and the three masked accumulator selects
// (4), welford_reduce: x - mean, weight + 1, (x - mean) / weight (MUFU.RCP, FMUL), mean +=,
// x - new mean, the m2 FFMA (7) = 12; output pass: convert x, weight, bias (3), x - mean,
// x rstd, the weight-and-bias FFMA (3), convert out (1) = 7: 19. RMSNorm: convert, the
// sum-of-squares FFMA, mask compare and select (4); convert x and weight, x rstd, x weight,
// convert out (5): 9.
constexpr double kLayerNormElementOps = 19.0;
constexpr double kRmsNormElementOps = 9.0;

// Lane instructions the SMs issue per row in Inductor's looped forward LayerNorm / RMSNorm:
// the passes' per-element work, then the row's block reduction of R0_BLOCK accumulators:
// (accumulators per thread - 1) combines in each of the row's threads, 5 shuffle steps in each
// of its warps, log2(warps) steps over the warps' partials in one warp (a CTA of XBLOCK rows
// reduces each row in threads / XBLOCK threads). Welford's combine is the 15-instruction chain
// above where a sum's is one add: on the H200, whose HBM streams a row in less time than the
// SM issues this, LayerNorm runs 19-33 % behind RMSNorm on the same bytes; on the H100's slower
// HBM the issue hides behind the traffic (issue #23, data/programs/h200/small_kernels.jsonl).
double inductor_norm_issue_per_row(RowOp op, double cols) {
  const double r_block = std::min(std::exp2(std::ceil(std::log2(cols))), kInductorMaxRBlock);
  const double rows_per_cta = cols <= kInductorMaxRBlock ? 2.0 : 1.0;
  const double warps = std::min(std::max(r_block / 128.0, 2.0), kInductorMaxWarps);
  const double row_threads = warps * kWarpLanes / rows_per_cta;
  const double row_warps = row_threads / kWarpLanes;
  const bool welford = op == RowOp::layernorm;
  const double combine = welford ? kWelfordCombineOps : kSumCombineOps;
  const double shuffled = combine + (welford ? 3.0 : 1.0);
  const double in_thread = row_threads * std::max(0.0, r_block / row_threads - 1.0) * combine;
  const double across = (row_warps * kWarpShuffleSteps + std::log2(row_warps)) * kWarpLanes *
                        shuffled;
  return cols * (welford ? kLayerNormElementOps : kRmsNormElementOps) + in_thread + across;
}

// What Inductor generates: one Triton reduction per op (a persistent reduction up to 1024
// columns, a looped one above that reads the row again for its output), plus a second kernel
// for the mean of the cross-entropy losses or the column reduction of the norms' weight grads.
Cost compiled_cost(RowOp op, const RowOpShape& s) noexcept {
  const double b = bytes_per_element(s.dtype);
  const double elems = s.rows * s.cols;
  Cost c = fused_cost(op, s);
  c.row_kernel = RowKernel::inductor;
  c.rows = s.rows;
  c.row_bytes = s.cols * b;
  const bool looped = s.cols > kInductorPersistentElems;
  switch (op) {
    case RowOp::rmsnorm:
    case RowOp::layernorm:
      if (s.backward) {
        // dx: a row reduction over dy and x (both read again when looped); dw: a split column
        // reduction reading dy and x once more.
        c.kernels = 2.0;
        c.bytes_read += 2.0 * elems * b;
        if (looped) c.reread_bytes = 2.0 * elems * b;
      } else if (looped) {
        c.reread_bytes = elems * b;
        c.issue_lane_ops = s.rows * inductor_norm_issue_per_row(op, s.cols);
      }
      break;
    case RowOp::softmax:
    case RowOp::log_softmax:
      if (s.backward) {
        if (looped) c.reread_bytes = 2.0 * elems * b;  // y and dy
      } else {
        // Online max / sum of exp (two exps per element), then exp / sum for the output.
        c.transcendentals = (looped ? 3.0 : 2.0) * elems;
        if (looped) c.reread_bytes = elems * b;
      }
      break;
    case RowOp::cross_entropy:
      if (s.backward) {
        c.transcendentals = elems;  // exp(x - lse) per logit, no reduction
      } else {
        // Online log-sum-exp in fp32 (two exps per logit; the label's logit is gathered, so
        // the row is read once), then the mean over the rows.
        c.kernels = 2.0;
        c.transcendentals = 2.0 * elems;
      }
      break;
  }
  return c;
}

}  // namespace

Cost row_op_cost(RowOp op, const RowOpShape& s) noexcept {
  switch (s.backend) {
    case RowBackend::fused: return fused_cost(op, s);
    case RowBackend::eager: return eager_cost(op, s);
    case RowBackend::compiled: return compiled_cost(op, s);
  }
  return fused_cost(op, s);
}

Cost elementwise_cost(const ElementwiseShape& s) noexcept {
  const double b = bytes_per_element(s.dtype);
  Cost c;
  c.kind = KernelKind::memory;
  c.math = PeakClass::fp32;
  c.flops = s.numel * s.flops_per_element;
  c.bytes_read = s.numel * s.reads * b;
  c.bytes_written = s.numel * s.writes * b;
  c.kernels = std::max(1.0, s.kernels);
  return c;
}

double aten_loop_floor_s(double numel, double sms, double threads_per_sm,
                         double step_s) noexcept {
  const double threads = sms * threads_per_sm;
  if (!(numel > 0) || !(threads > 0) || !(step_s > 0)) return 0.0;
  return std::ceil(numel / threads) * step_s;
}

double nll_loss_threads(double rows) noexcept {
  if (!(rows >= 16.0)) return 32.0;
  const double x = std::exp2(std::round(std::log2(std::floor(rows / 16.0))));
  return std::clamp(x, 32.0, 1024.0);
}

double nll_loss_chain_s(double rows, double round_trips, double step_s) noexcept {
  if (!(rows > 0) || !(round_trips > 0) || !(step_s > 0)) return 0.0;
  return std::ceil(rows / nll_loss_threads(rows)) * round_trips * step_s;
}

void row_op_sweep(RowOp op, const double* rows, const double* cols, std::size_t n_points,
                  const RowOpShape& flags, const Rates& rates, EstimateColumns out) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    RowOpShape s = flags;
    s.rows = rows[i];
    s.cols = cols[i];
    const Estimate e = estimate(row_op_cost(op, s), rates);
    out.set(i, e);
  }
}

}  // namespace roofline
