#include "roofline/ops/norm.hpp"

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
    case RowOp::softmax: return backward ? 4.0 : 5.0;
    // fwd: max, x - max, exp, sum = 4. bwd: x - lse, exp, - onehot, * dloss = 4.
    case RowOp::cross_entropy: return 4.0;
  }
  return 0.0;
}

Cost row_op_cost(RowOp op, const RowOpShape& s) noexcept {
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

void row_op_sweep(RowOp op, const double* rows, const double* cols, std::size_t n_points,
                  const RowOpShape& flags, const Rates& rates, EstimateColumns out) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    RowOpShape s = flags;
    s.rows = rows[i];
    s.cols = cols[i];
    const Estimate e = estimate(row_op_cost(op, s), rates);
    out.time_s[i] = e.time_s;
    out.compute_s[i] = e.compute_s;
    out.memory_s[i] = e.memory_s;
    out.overhead_s[i] = e.overhead_s;
    out.flops[i] = e.flops;
    out.bytes[i] = e.bytes;
  }
}

}  // namespace roofline
