#pragma once

namespace roofline {

/// Fitted terms of one attention implementation; a zero field falls back to the idealized
/// (standard) model's value, so an all-zero struct reproduces it.
struct AttentionBackendTerms {
  double fraction = 0.0;         ///< forward rate as a fraction of the GEMM rate (0: standard)
  double bwd_fraction = 0.0;     ///< backward rate as a fraction of the GEMM rate (0: fraction)
  double decode_fraction = 0.0;  ///< decode (few queries) rate vs the GEMM rate (0: standard)
  double q_tile = 0.0;           ///< query rows of a forward work unit (0: 128)
  double kv_tile = 0.0;          ///< keys per inner-loop block (0: 128, 64 above head dim 128)
  double decode_rows = 0.0;      ///< query rows of a decode tile (0: 64)
  double no_split_kv = 0.0;      ///< 1: the kernel never splits the KV loop over idle SMs
  double no_pack_gqa = 0.0;      ///< 1: decode tiles hold one query head (GQA not packed)
  double bwd_tile_overhead = 0.0;  ///< backward: fixed cost of a work unit in blocks (0: standard)
  double call_s = 0.0;           ///< fixed GPU time per call: launch gaps, memsets, combine
  double bwd_call_s = 0.0;       ///< fixed GPU time of a backward call (0: call_s)
  double decode_call_s = 0.0;    ///< fixed GPU time of a call on a decode schedule (0: call_s)
  double bandwidth_scale = 0.0;  ///< DRAM rate of its loads vs the streaming rate (TMA bulk
                                 ///< copies beat element-wise streams; 0: 1)
  double cta_bytes_per_s = 0.0;  ///< bandwidth one work unit sustains on its own (loads not
                                 ///< overlapped with its math: tile bytes in flight / DRAM
                                 ///< latency); bounds a unit's time below (0: no bound)
  double softmax_flops = 0.0;    ///< softmax work per score left exposed (exp on the special
                                 ///< function units, row max / sum, conversion), in bf16 GEMM
                                 ///< FLOP-equivalents: it does not speed up with fp8 inputs
                                 ///< (0: the standard model's attention_softmax_flops)
  double paged_bandwidth_scale = 0.0;  ///< DRAM rate of paged-KV loads that go through the page
                                       ///< table (cp.async gathers, not TMA) vs streaming (0: 1)
  double kernel_latency_s = 0.0;  ///< fixed GPU time of the fused kernel itself, in place of
                                  ///< the GEMM's gemm_latency_s (0: gemm_latency_s)
  double separate_dq = 0.0;  ///< 1: the backward computes dQ in its own kernel over query tiles
                             ///< looping over every key (AOTriton's bwd_kernel_dq on ROCm), next
                             ///< to the dK/dV kernel over KV tiles; both recompute P and dP
};

/// Terms of the attention implementations SDPA dispatches to (flash, cuDNN, efficient, math).
struct AttentionTerms {
  AttentionBackendTerms flash{};      ///< FlashAttention-2 inside PyTorch
  AttentionBackendTerms cudnn{};      ///< cuDNN fused attention
  AttentionBackendTerms efficient{};  ///< memory-efficient (CUTLASS) attention
  AttentionBackendTerms fa3{};        ///< FlashAttention-3 (Hopper); tiles from fa3_tiles
  AttentionBackendTerms flashinfer{};  ///< FlashInfer: decode kernel terms (prefill: fa3's on
                                       ///< Hopper, FA2's elsewhere)
  AttentionBackendTerms flash_triton{};  ///< Triton FlashAttention: FA2's work units at a
                                         ///< measured share of FA2's rate
  AttentionBackendTerms flex{};  ///< FlexAttention (Triton template): FA2's work units at the
                                 ///< published H100 share of FA2's rate, per pass
  double strided_element_flops = 0.0;  ///< math path: fp32 FLOP-equivalents of one element of
                                       ///< aten's non-vectorized (broadcast / strided)
                                       ///< TensorIterator kernel (0: bandwidth-bound only)
};

/// Tile of a FlashAttention-3 forward kernel: kBlockM query rows x kBlockN keys per block.
struct Fa3Tile {
  double block_m = 128;  ///< query rows of a work unit (two 64-row consumer warpgroups, or three)
  double block_n = 128;  ///< keys per inner-loop block
};

/// FlashAttention-3's sm90 forward tile for head dims d / dv, causal mask, element size
/// (2: bf16/fp16, 1: fp8) and paged KV loaded without TMA (hopper/tile_size.h's choice, as
/// read from Dao-AILab/flash-attention at 0251105a; no local/sliding window, no softcap).
Fa3Tile fa3_tile(double head_dim, double v_head_dim, bool causal, double element_bytes,
                 bool paged_non_tma) noexcept;

}  // namespace roofline
