#pragma once

namespace roofline {

/// Terms of the norm, softmax, cross-entropy and elementwise implementations (fused, eager,
/// compiled). Every term at 0 is the idealized model (no re-read cost, no per-SM cap, free
/// transcendentals, full latency for every kernel); see docs/model.md.
struct RowOpTerms {
  double small_kernel_ramp_s = 0;   ///< latency a streaming kernel (not a PyTorch row kernel) with
                                    ///< no traffic does not pay (its drain overlaps what follows);
                                    ///< tapers to 0 at half an L2 of traffic
  double follow_on_s = 0;           ///< latency a kernel launched right after another kernel of
                                    ///< the same call does not pay (launch and fill overlap the
                                    ///< previous kernel's drain)
  double aten_reread = 0;           ///< cost of an aten kernel's L2-resident re-read, per DRAM pass
  double inductor_reread = 0;       ///< cost of an Inductor looped re-read, per DRAM pass
  double cta_sm_bytes_per_s = 0;    ///< bytes/s one SM moves with one 1024-thread CTA per row
  double transcendental_flops = 0;  ///< fp32 FLOP-equivalents of one exp / log / division
  double l2_bytes = 0;              ///< L2 size: re-reads go to DRAM when the rows in flight (all
                                    ///< tensors) exceed half; the ramp saving ends at half (0:
                                    ///< re-reads hit, the ramp ends at its own traffic time)
};

}  // namespace roofline
