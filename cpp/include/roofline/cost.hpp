#pragma once
#include <cstdint>

#include "roofline/dtype.hpp"

namespace roofline {

/// What kind of kernel a cost describes: the shape-aware model treats each differently.
enum class KernelKind : std::uint8_t {
  generic,  ///< plain roofline: max(compute, memory)
  gemm,     ///< tiled matrix multiply: tile and wave quantization over the SMs
  memory,   ///< streaming, memory-bound kernel (elementwise, norm, cast)
  attention ///< fused (flash) attention: Q tiles against KV tiles, decode as split-KV reads
};

/// Which attention implementation a fused attention kernel models (kind == attention).
enum class AttentionBackend : std::uint8_t {
  standard,   ///< idealized fused kernel (FlashAttention-2 README / FlashMLA calibration)
  flash,      ///< FlashAttention-2 as PyTorch's SDPA runs it (mma.sync tensor-core code)
  cudnn,      ///< cuDNN fused attention (wgmma kernels on Hopper)
  efficient,  ///< memory-efficient attention (xformers / CUTLASS kernels)
  math,       ///< SDPA's math path: separate kernels, scores through DRAM (fp32 compute)
  fa3,        ///< FlashAttention-3 (sm90: warp-specialized wgmma, ping-pong softmax, TMA loads)
  flashinfer,  ///< FlashInfer paged-KV kernels (decode: mma.sync split-KV; prefill: its sm90 path)
  flash_triton,  ///< Tri Dao's Triton FlashAttention (2022; llm-foundry's attn_impl triton)
  flex  ///< PyTorch FlexAttention: Inductor's Triton template over a BlockMask (torch 2.8)
};

/// How a streaming kernel maps rows onto the SMs (shape-aware model, kind == memory).
enum class RowKernel : std::uint8_t {
  none,        ///< grid-stride streaming or a good fused row kernel: compute overlaps traffic
  aten_rows,   ///< aten row kernel holding the row in registers: transcendentals follow the loads
  aten_stream, ///< aten block-per-row kernel looping over a long row: compute overlaps traffic
  aten_cta,    ///< aten block-per-row kernel, one 1024-thread CTA per SM (row in shared memory)
  inductor     ///< Inductor (Triton) reduction: loads, then transcendentals, per row block
};

/// Hardware-free work of one kernel (or of `kernels` identical launches): what a formula returns.
/// T is the number type: double (one shape) or Lanes (eight shapes, the same kernel of each).
template <class T>
struct CostT {
  T flops = 0;                        ///< floating-point operations (a count)
  T bytes_read = 0;                   ///< bytes read from DRAM
  T bytes_written = 0;                ///< bytes written to DRAM
  T kernels = 1;                      ///< kernel launches
  PeakClass math = PeakClass::bf16;   ///< which peak the flops run at
  KernelKind kind = KernelKind::generic; ///< how the efficiency model treats it
  T m = 0;                            ///< GEMM rows (kind == gemm)
  T n = 0;                            ///< GEMM columns (kind == gemm)
  T k = 0;                            ///< GEMM reduction length (kind == gemm)
  T batch = 1;                        ///< independent GEMMs / (sequence, q head) pairs
  // Attention kernels are formulas of one shape (attention_kernels: no eight-lane form), so
  // their fields are plain doubles: an eight-lane Cost stays ~20 % smaller to build.
  double q_len = 0;                   ///< queries per sequence (kind == attention)
  double kv_len = 0;                  ///< keys per sequence (kind == attention)
  double head_dim = 0;                ///< query/key head dimension (kind == attention)
  double v_head_dim = 0;              ///< value head dimension (kind == attention)
  double heads_per_kv = 1;            ///< query heads sharing a kv head (kind == attention)
  bool causal = false;                ///< causal mask, bottom-right aligned (kind == attention)
  bool backward = false;              ///< backward pass: work split over KV tiles (kind == attention)
  bool dropout = false;               ///< dropout's random bits drawn per score (kind == attention)
  Scaling scaling = Scaling::none;    ///< scaling of a low-precision GEMM's inputs (kind == gemm)
  bool grouped = false;               ///< a grouped GEMM kernel (torch._grouped_mm; kind == gemm)
  bool fused_moe = false;             ///< vLLM / SGLang's Triton fused_moe kernel (kind == gemm):
                                      ///< its own compute rate, kFusedMoeComputeFraction
  bool a_transposed = false;          ///< A is a transposed view (stored k x m, e.g. X^T of a
                                      ///< weight gradient): its rows are m elements, not k
                                      ///< (kind == gemm; sets which extents TMA alignment needs)
  bool pad_to_align = false;          ///< may also run on k, n padded to TMA alignment (faster
                                      ///< taken): monotone in every size (attention math path)
  T bandwidth_fraction = 1.0;         ///< fraction of the streaming bandwidth this kernel's access
                                      ///< pattern reaches (kind == memory; transposes, one block per
                                      ///< row); shape-aware model only
  T sm_bytes_per_s = 0;               ///< DRAM bytes/s one SM reaches with this kernel's access
                                      ///< pattern when its loads, not the HBM, set the rate
                                      ///< (kind == memory; 0: none); shape-aware model only
  AttentionBackend attention_backend = AttentionBackend::standard; ///< implementation of a
                                      ///< fused attention kernel (kind == attention)
  double page_tokens = 0;             ///< tokens per KV-cache page (0: contiguous cache;
                                      ///< kind == attention)
  RowKernel row_kernel = RowKernel::none; ///< kind == memory: how rows map onto the SMs
  T rows = 0;                         ///< row kernels: rows, one CTA (or warp) each (0 = no wave model)
  T ctas_per_sm = 0;                  ///< row kernels: CTAs resident per SM (0 = enough: no waves)
  T row_bytes = 0;                    ///< row kernels: bytes of one row of one tensor (a re-read's unit)
  T reread_bytes = 0;                 ///< row kernels: bytes read again after a reduction (L2 or DRAM)
  T transcendentals = 0;              ///< row kernels: exp / log / division per launch (special units)
  T issue_lane_ops = 0;               ///< row kernels: lane instructions the SMs issue (a warp
                                      ///< instruction is 32), a floor at kIssueLanesPerSm per SM
                                      ///< per clock when the SMs, not the DRAM, set the pace
                                      ///< (0: not counted)
  T strided_elements = 0;             ///< kind == memory: elements of aten's non-vectorized
                                      ///< TensorIterator path (broadcast operands), instruction-bound

  /// Total DRAM traffic in bytes.
  T bytes() const noexcept { return bytes_read + bytes_written; }
};

/// The work of one kernel of one shape.
using Cost = CostT<double>;

}  // namespace roofline
