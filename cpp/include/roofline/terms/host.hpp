#pragma once

namespace roofline {

/// Host-side launch terms: CPU and driver costs of issuing kernels, and the GPU's minimum time
/// per launched kernel. They are properties of the CPU, the driver and PyTorch, not of the GPU's
/// peaks; every field at 0 means "no launch overhead" (wall time = sum of kernel times).
struct HostTerms {
  double eager_launch_s = 0;     ///< host time per eagerly dispatched op (Python, dispatcher, launch)
  double compiled_launch_s = 0;  ///< host time per kernel launched from a torch.compile wrapper
  double compiled_call_s = 0;    ///< host time per compiled-region call (guards, runtime wrappers)
  double compiled_region_s = 0;  ///< host time per call of a no-grad compiled region (guards, wrapper)
  double compiled_forward_s = 0;  ///< host time per inference call of a compiled nn.Module forward
  double torchao_call_s = 0;      ///< extra host time per region of a torchao low-precision linear
  double graph_launch_s = 0;     ///< minimum wall time of one CUDA graph replay
  double kernel_gap_s = 0;       ///< minimum GPU time of a kernel run back to back with others
  double kernel_latency_s = 0;   ///< minimum wall time of one kernel launched on an idle stream
  // Host time of an eager program, per call as it runs on the CPU (see ops/host.hpp, HostOp),
  // in units of eager_launch_s (the machine's bare per-op cost), so a calibrated host speed
  // carries over: seconds = value x eager_launch_s.
  double op_view_launches = 0;       ///< per aten op that launches nothing (view, metadata, alias)
  double op_kernel_launches = 0;     ///< per aten op launching elementwise / reduction / copy kernels
  double op_gemm_launches = 0;       ///< per GEMM call (aten::linear / matmul: cuBLAS(Lt) heuristics)
  double op_attention_launches = 0;  ///< per scaled_dot_product_attention call (backend selection)
  double module_call_launches = 0;   ///< per nn.Module call (its forward's own Python code)
  double op_backward_launches = 0;   ///< per backward kernel (one autograd node's evaluation)
  double step_call_launches = 0;     ///< per eager program step: the entry call's own Python
};

}  // namespace roofline
