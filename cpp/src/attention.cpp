#include "roofline/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "roofline/ops/norm.hpp"
#include "roofline/parallel.hpp"

namespace roofline {

double attention_pairs(double q_len, double kv_len, bool causal) noexcept {
  if (!causal) return q_len * kv_len;
  // Query i (0-based) sees keys 0 .. kv - q + i (bottom-right alignment, as FlashAttention >= 2.1
  // and decode with a KV cache); with q == kv this is the usual lower triangle.
  if (q_len <= kv_len) return q_len * kv_len - q_len * (q_len - 1.0) / 2.0;
  return kv_len * (kv_len + 1.0) / 2.0;  // the first q - kv queries see no key
}

double sliding_window_visited_keys(double window) noexcept {
  // Query tile [a, a + T) needs keys [a - window, a + T): window + T of them, in the KV blocks
  // overlapping that band; the diagonal block is partly masked but computed whole.
  return window + kAttentionQueryTile;
}

double flex_visited_blocks(double q_len, double kv_len, double window, double block) noexcept {
  if (!(q_len > 0.0) || !(kv_len > 0.0) || !(block > 0.0)) return 0.0;
  const double offset = std::max(0.0, kv_len - q_len);  // bottom-right alignment (decode)
  const double q_blocks = std::ceil(q_len / block);
  const double kv_blocks = std::ceil(kv_len / block);
  double total = 0.0;
  for (double i = 0.0; i < q_blocks; i += 1.0) {
    const double first_q = offset + i * block;                           // first row's key index
    const double last_q = offset + std::min(q_len, (i + 1.0) * block) - 1.0;
    const double hi = std::min(kv_blocks - 1.0, std::floor(last_q / block));  // causal edge
    double lo = 0.0;
    if (window > 0.0) lo = std::max(0.0, std::floor((first_q - window + 1.0) / block));
    if (hi >= lo) total += hi - lo + 1.0;
  }
  return total;
}

Fa3Tile fa3_tile(double d, double dv, bool causal, double element_bytes,
                 bool paged_non_tma) noexcept {
  // Register and shared-memory budgets of two (three at head dim <= 96) consumer warpgroups
  // bound the tile: wider heads get fewer keys per block; a causal mask or paged loads without
  // TMA take the narrower block that keeps intra-warpgroup overlap.
  if (element_bytes >= 2.0) {
    if (d <= 64) {
      if (dv >= 512) return {64, 64};
      if (dv >= 256) return {128, 96};
      return {192, causal || paged_non_tma ? 128.0 : 192.0};
    }
    if (d <= 96) return {192, paged_non_tma ? 128.0 : 144.0};
    if (d <= 128) return {128, causal || paged_non_tma ? 128.0 : 176.0};
    if (d <= 192) return {128, paged_non_tma ? 96.0 : (dv <= 128 ? 128.0 : 112.0)};
    return {128, 80};
  }
  // fp8 (e4m3): half the bytes per element, so wider key blocks fit.
  if (d <= 64) return {192, 160};
  if (d <= 96) return {192, 128};
  if (d <= 128) return {128, paged_non_tma ? 160.0 : 224.0};
  if (d <= 192) return {128, 160};
  return {128, 128};
}

void OpKernels::push(const char* name, const Cost& c) noexcept {
  if (size < static_cast<int>(items.size())) items[static_cast<std::size_t>(size++)] = {name, c};
}

namespace {

Cost make(double flops, double read, double written, PeakClass math) noexcept {
  Cost c;
  c.flops = flops;
  c.bytes_read = read;
  c.bytes_written = written;
  c.math = math;
  return c;
}

// A streaming kernel (softmax, flash pre/post-processing).
Cost streaming(double read, double written) noexcept {
  Cost c = make(0.0, read, written, PeakClass::fp32);
  c.kind = KernelKind::memory;
  return c;
}

// A GEMM of `batch` independent m x k by k x n products.
Cost gemm(double batch, double m, double n, double k, double read, double written,
          PeakClass math) noexcept {
  Cost c = make(2.0 * batch * m * n * k, read, written, math);
  c.kind = KernelKind::gemm;
  c.pad_to_align = true;  // batched score GEMMs: see Cost::pad_to_align
  c.batch = batch;
  c.m = m;
  c.n = n;
  c.k = k;
  return c;
}

// The fused kernel, with the shape the efficiency model tiles.
Cost flash(const AttentionShape& s, double flops, double read, double written,
           PeakClass math) noexcept {
  Cost c = make(flops, read, written, math);
  c.kind = KernelKind::attention;
  c.batch = s.batch * s.heads;
  c.q_len = s.q_len;
  c.kv_len = s.kv_len;
  c.head_dim = s.head_dim;
  c.v_head_dim = s.v_head_dim;
  c.heads_per_kv = s.heads / s.kv_heads;
  c.causal = s.causal;
  c.backward = s.backward;
  c.dropout = s.dropout;
  c.attention_backend = s.backend;
  c.page_tokens = s.page_tokens;
  return c;
}

// SDPA's math path, _scaled_dot_product_attention_math (torch 2.11, aten/src/ATen/native/
// transformers/attention.cpp) on CUDA: 16-bit Q, K, V are upcast to fp32 (three .to(float)
// copies; allow_fp16_bf16_reduction_math_sdp is off by default) and every later kernel runs in
// fp32. q * sqrt(scale) and k^T * sqrt(scale) are two vectorized multiplies (TensorIterator
// keeps K's layout: no transposed copy); is_causal builds an [L, S] mask (ones, tril,
// where(mask, 0, -inf): three small kernels) that attn.add_ broadcasts over the batch and heads;
// at::matmul folds the batch into one bmm per GEMM; _safe_softmax = softmax, eq(-inf) against a
// 0-dim CUDA tensor, all() over each row, where(all_masked, 0, softmax); the output and the
// attention weights (attn.to(dtype), returned next to the output) are cast back.
// Kernels with a broadcast operand (mask add, eq, where) take aten's non-vectorized path, whose
// per-element offset arithmetic (strided_elements) bounds them below the DRAM rate.
// GQA / MQA (enable_gqa, kv_heads < heads): pre_process_group_query_attention_input copies the
// fp32 K and V to every query head (repeat_interleave = unsqueeze, expand, contiguous clone:
// one copy kernel each) before k^T * sqrt(scale), so every later kernel and GEMM runs per query
// head (matmul folds batch x heads into the bmm batch); the backward sums each group of
// heads / kv_heads gradients back onto its kv head (expand's backward: one reduction kernel
// for dK, one for dV). Equal head counts return K, V untouched: no copies, no reductions.
void math_kernels(const AttentionShape& s, OpKernels& out) noexcept {
  const double e = element_bytes(s.dtype);
  const double a = e < 4.0 ? 4.0 : e;               // accumulation format: fp32 at least
  const PeakClass math = e < 4.0 ? PeakClass::fp32 : peak_class(s.dtype);
  const bool upcast = e < 4.0;
  const double bhq = s.batch * s.heads * s.q_len;
  const double bgk = s.batch * s.kv_heads * s.kv_len;
  const double q_el = bhq * s.head_dim, k_el = bgk * s.head_dim, v_el = bgk * s.v_head_dim;
  const double o_el = bhq * s.v_head_dim;
  const double scores = bhq * s.kv_len;             // elements of the score matrix
  const bool gqa = s.heads > s.kv_heads;
  const double bhk = s.batch * s.heads * s.kv_len;  // key rows once K, V are expanded
  const double kx_el = gqa ? bhk * s.head_dim : k_el, vx_el = gqa ? bhk * s.v_head_dim : v_el;
  const double groups = s.batch * s.heads;          // bmm batch: one per (sequence, query head)
  const double rows = s.q_len;
  if (upcast) {
    Cost c = streaming((q_el + k_el + v_el) * e, (q_el + k_el + v_el) * a);
    c.kernels = 3.0;  // query.to(float), key.to(float), value.to(float)
    out.push("upcast Q, K, V", c);
  }
  if (gqa && !s.backward) {
    Cost c = streaming((k_el + v_el) * a, (kx_el + vx_el) * a);
    c.kernels = 2.0;  // key.repeat_interleave, value.repeat_interleave
    out.push("repeat K, V", c);
  }
  Cost scale = streaming((q_el + kx_el) * a, (q_el + kx_el) * a);
  scale.kernels = 2.0;
  out.push("scale Q, K", scale);
  if (!s.backward) {
    const bool masked = s.causal;
    const double mask_el = s.q_len * s.kv_len;      // the [L, S] causal mask, once
    if (masked) {
      // ones (bool), tril (bool -> bool), where(mask, 0, -inf) (bool -> fp32).
      Cost c = streaming(2.0 * mask_el, 2.0 * mask_el + mask_el * a);
      c.kernels = 3.0;
      out.push("causal mask", c);
    }
    out.push("QK^T", gemm(groups, rows, s.kv_len, s.head_dim, (q_el + kx_el) * a, scores * a,
                          math));
    if (masked) {
      Cost c = streaming(scores * a + mask_el * a, scores * a);
      c.strided_elements = scores;                  // mask broadcast over batch and heads
      out.push("mask add", c);
    }
    // aten's softmax: a warp per row up to 1024 fp32 columns, else CTAs of 256 threads (ILP 4,
    // half the row vectorized) holding the row in shared memory up to ~12 K columns: one read,
    // one write, several rows resident per SM; longer rows re-read it (max, sum, output).
    const double softmax_reads = s.kv_len * a < kAtenSoftmaxSmemBytes ? 1.0 : 3.0;
    out.push("softmax", streaming(softmax_reads * scores * a, scores * a));
    Cost eq = streaming(scores * a, scores);        // bool flags
    eq.strided_elements = scores;                   // -inf is a 0-dim CUDA tensor (stride 0)
    out.push("eq -inf", eq);
    out.push("all over rows", streaming(scores, bhq));
    Cost where = streaming(scores * a + bhq, scores * a);
    where.strided_elements = scores;                // row flags broadcast over the keys
    out.push("where", where);
    // at::dropout on the probabilities: aten's native_dropout writes them and a bool mask.
    if (s.dropout) out.push("dropout", streaming(scores * a, scores * a + scores));
    out.push("PV", gemm(groups, rows, s.v_head_dim, s.kv_len, scores * a + vx_el * a, o_el * a,
                        math));
    if (upcast) {
      out.push("downcast O", streaming(o_el * a, o_el * e));
      // The math op also returns the attention weights in the input format (attn.to(dtype)).
      out.push("downcast weights", streaming(scores * a, scores * e));
    }
    return;
  }
  // Autograd of the same graph: the materialized backward GEMMs and softmax backward in fp32.
  out.push("dV = P^T dO", gemm(groups, s.kv_len, s.v_head_dim, rows, (scores + o_el) * a,
                               vx_el * a, math));
  out.push("dP = dO V^T", gemm(groups, rows, s.kv_len, s.v_head_dim, (o_el + vx_el) * a,
                               scores * a, math));
  if (s.dropout) out.push("dropout bwd", streaming(scores * a + scores, scores * a));
  out.push("softmax bwd", streaming(2.0 * scores * a, scores * a));
  out.push("dQ = dS K", gemm(groups, rows, s.head_dim, s.kv_len, (scores + kx_el) * a, q_el * a,
                             math));
  out.push("dK = dS^T Q", gemm(groups, s.kv_len, s.head_dim, rows, (scores + q_el) * a,
                               kx_el * a, math));
  if (gqa) {
    Cost c = streaming((kx_el + vx_el) * a, (k_el + v_el) * a);
    c.kernels = 2.0;  // sum over each group of heads / kv_heads copies: dK, dV
    out.push("dK, dV group sum", c);
  }
  if (upcast) out.push("downcast dQ, dK, dV", streaming((q_el + k_el + v_el) * a,
                                                        (q_el + k_el + v_el) * e));
}

}  // namespace

void attention_kernels(const AttentionShape& s, OpKernels& out) noexcept {
  if (s.backend == AttentionBackend::math) {
    math_kernels(s, out);
    return;
  }
  const double e = element_bytes(s.dtype);          // Q, K, V elements
  const double oe = e < 2 ? 2.0 : e;                // outputs, scores, gradients: >= 16 bit
  const PeakClass math = peak_class(s.dtype);
  const double bhq = s.batch * s.heads * s.q_len;   // query rows
  const double bgk = s.batch * s.kv_heads * s.kv_len;  // key rows, once per kv head
  const double q_bytes = bhq * s.head_dim * e;
  const double k_bytes = bgk * s.head_dim * e;
  const double v_bytes = s.shared_kv ? 0.0 : bgk * s.v_head_dim * e;
  const double o_bytes = bhq * s.v_head_dim * oe;   // O and dO
  const double rowstat = bhq * 4.0;                 // fp32 log-sum-exp (or delta) per row

  if (s.flash) {
    const double pairs = s.batch * s.heads * attention_pairs(s.q_len, s.kv_len, s.causal);
    if (!s.backward) {
      out.push("flash attention fwd", flash(s, 2.0 * pairs * (s.head_dim + s.v_head_dim),
                                            q_bytes + k_bytes + v_bytes, o_bytes + rowstat, math));
      return;
    }
    // Gradients of K and V accumulate per kv head; with shared_kv both land in one latent.
    double dkv = bgk * s.head_dim * oe + (s.shared_kv ? 0.0 : bgk * s.v_head_dim * oe);
    const double dq_acc = bhq * s.head_dim * 4.0;  // fp32 dQ accumulator
    // cuDNN computes dK, dV per query head in fp32 and reduces each group of heads_per_kv
    // heads afterwards (its fmha_reduce_head kernel) when K, V are shared (GQA / MQA).
    // PyTorch's FlashAttention-2 (flash_api mha_bwd) does the same in the 16-bit format:
    // the kernel writes dk_expanded / dv_expanded per query head, then at::sum_out over each
    // group (two aten reduce kernels; the H200 profiler rows of session 6 show them for every
    // kv_heads < heads and not at kv_heads == heads).
    const bool gqa = s.heads > s.kv_heads;
    const bool head_reduce = s.backend == AttentionBackend::cudnn && gqa;
    const bool group_sum = s.backend == AttentionBackend::flash && gqa;
    const double per_head_el =
        s.batch * s.heads * s.kv_len * (s.head_dim + (s.shared_kv ? 0.0 : s.v_head_dim));
    const double dkv_per_head = per_head_el * (head_reduce ? 4.0 : oe);
    if (head_reduce || group_sum) dkv = dkv_per_head;
    out.push("flash bwd preprocess", streaming(2.0 * o_bytes, rowstat));
    // Recompute S = QK^T, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q.
    out.push("flash attention bwd",
             flash(s, 2.0 * pairs * (3.0 * s.head_dim + 2.0 * s.v_head_dim),
                   q_bytes + k_bytes + v_bytes + o_bytes + 2.0 * rowstat, dkv + dq_acc, math));
    out.push("dQ convert", streaming(dq_acc, bhq * s.head_dim * oe));
    const double dkv_out = bgk * s.head_dim * oe + (s.shared_kv ? 0.0 : bgk * s.v_head_dim * oe);
    if (head_reduce) out.push("dK, dV head reduce", streaming(dkv_per_head, dkv_out));
    if (group_sum) {
      Cost c = streaming(dkv_per_head, dkv_out);
      c.kernels = s.shared_kv ? 1.0 : 2.0;  // at::sum_out for dK, then for dV
      out.push("dK, dV group sum", c);
    }
    return;
  }

  // Materialized: every score is computed (a causal mask is applied after the GEMM) and the
  // score / probability matrices cross DRAM. GEMMs group the q heads sharing a kv head, so
  // K and V are read once per kv head.
  const double scores = bhq * s.kv_len * oe;
  const double v_read = bgk * s.v_head_dim * e;  // a separate kernel re-reads V even if shared
  // GEMMs batch the (sequence, kv head) groups; the H/G query heads of a group stack as rows.
  const double groups = s.batch * s.kv_heads;
  const double rows = s.q_len * s.heads / s.kv_heads;
  if (!s.backward) {
    out.push("QK^T", gemm(groups, rows, s.kv_len, s.head_dim, q_bytes + k_bytes, scores, math));
    out.push("softmax", streaming(scores, scores));
    // Dropout on the probabilities: a pass writing them and a one-byte mask per score.
    if (s.dropout) out.push("dropout", streaming(scores, scores + scores / oe));
    out.push("PV", gemm(groups, rows, s.v_head_dim, s.kv_len, scores + v_read, o_bytes, math));
    return;
  }
  out.push("dV = P^T dO", gemm(groups, s.kv_len, s.v_head_dim, rows, scores + o_bytes,
                               bgk * s.v_head_dim * oe, math));
  out.push("dP = dO V^T", gemm(groups, rows, s.kv_len, s.v_head_dim, o_bytes + v_read, scores,
                               math));
  if (s.dropout) out.push("dropout bwd", streaming(scores + scores / oe, scores));
  out.push("softmax bwd", streaming(2.0 * scores, scores));
  out.push("dQ = dS K", gemm(groups, rows, s.head_dim, s.kv_len, scores + k_bytes,
                             bhq * s.head_dim * oe, math));
  out.push("dK = dS^T Q", gemm(groups, s.kv_len, s.head_dim, rows, scores + q_bytes,
                               bgk * s.head_dim * oe, math));
}

Estimate attention_estimate(const AttentionShape& s, const Rates& rates) noexcept {
  OpKernels kernels;
  attention_kernels(s, kernels);
  Estimate total;
  for (int i = 0; i < kernels.size; ++i) {
    total += estimate(kernels.items[static_cast<std::size_t>(i)].cost, rates);
  }
  return total;
}

void attention_sweep(const double* batch, const double* heads, const double* kv_heads,
                     const double* q_len, const double* kv_len, const double* head_dim,
                     const double* v_head_dim, std::size_t n_points, const AttentionShape& flags,
                     const Rates& rates, EstimateColumns out) noexcept {
  for (std::size_t i = 0; i < n_points; ++i) {
    const AttentionShape s = with_dims(flags, batch[i], heads[i], kv_heads[i], q_len[i],
                                       kv_len[i], head_dim[i], v_head_dim[i]);
    const Estimate e = attention_estimate(s, rates);
    out.set(i, e);
  }
}

namespace {

// 16-bit formats SDPA's fused kernels take on arch (sm70 has no bf16 tensor cores).
bool half_format(DType d, SdpaArch arch) noexcept {
  if (arch == SdpaArch::volta) return d == DType::fp16;
  return d == DType::bf16 || d == DType::fp16;
}

// The standard kernel only: MLA's shared cache, formats without an SDPA kernel, no CUDA/ROCm.
bool standard_only(const AttentionShape& s, SdpaArch arch) noexcept {
  const bool sdpa_format = s.dtype == DType::bf16 || s.dtype == DType::fp16 ||
                           s.dtype == DType::fp32;
  return s.shared_kv || arch == SdpaArch::other || !sdpa_format;
}

bool cudnn_first(SdpaArch arch) noexcept {
  return arch == SdpaArch::hopper || arch == SdpaArch::blackwell;
}

bool multiple(double x, double step) noexcept { return std::fmod(x, step) == 0.0; }

constexpr unsigned bit(AttentionBackend b) noexcept { return 1u << static_cast<unsigned>(b); }

}  // namespace

AttentionBackend sdpa_backend(const AttentionShape& s, SdpaArch arch) noexcept {
  if (standard_only(s, arch)) return AttentionBackend::standard;
  const bool half = half_format(s.dtype, arch);
  const bool fp32 = s.dtype == DType::fp32;
  const double d = s.head_dim, dv = s.v_head_dim;
  const bool rocm = arch == SdpaArch::rocm;
  // A causal mask over a single query is no mask (bottom-right aligned). The model's causal
  // mask is bottom-right aligned; SDPA's is_causal is top-left, so with q_len != kv_len that
  // mask runs through torch.nn.attention.bias.CausalBias(LOWER_RIGHT), whose dispatch (torch
  // 2.13, bias.py _dispatch) checks with is_causal=False and tries flash (called with
  // is_causal=True: FA2's bottom-right mask), then efficient (custom_mask_type lower-right),
  // then math with the materialized mask; never cuDNN. Flash's non-square check
  // (check_flash_causal_non_square_seqlens) only guards the top-left is_causal mask.
  const bool masked = s.causal && s.q_len > 1;
  const bool lower_right = masked && s.q_len != s.kv_len;
  if (cudnn_first(arch) && half && !lower_right) {
    const bool limit = (d <= 128 && dv <= 128) || (d == 192 && dv == 128);
    if (limit && multiple(d, 8) && multiple(dv, 8) && s.kv_len != 1) {
      return AttentionBackend::cudnn;
    }
  }
  if (arch != SdpaArch::volta) {
    bool flash_ok = half && d == dv && d <= (rocm ? 512 : 256);
    if (s.backward && (arch == SdpaArch::ada || arch == SdpaArch::blackwell_consumer)) {
      flash_ok = flash_ok && !(d > 192 && d <= 224);  // sm89/120: no FA2 backward there
    }
    if (flash_ok) return AttentionBackend::flash;
  }
  const double align = half ? 8.0 : 4.0;
  bool eff_ok = multiple(d, align) && multiple(dv, align) && (half || fp32);
  // AOTriton: efficient shares flash's head-dim check on ROCm (sdp_utils.cpp,
  // check_head_dim_size_flash<caller_is_meff>): equal head dims up to 512, aligned.
  if (rocm) eff_ok = eff_ok && d == dv && d <= 512;
  return eff_ok ? AttentionBackend::efficient : AttentionBackend::math;
}

unsigned auto_candidates(const AttentionShape& s, SdpaArch arch) noexcept {
  if (standard_only(s, arch)) return bit(AttentionBackend::standard);
  const bool half = half_format(s.dtype, arch);
  const double d = s.head_dim, dv = s.v_head_dim;
  unsigned mask = bit(AttentionBackend::math);
  if (cudnn_first(arch) && half && d <= 192 && dv <= 128) mask |= bit(AttentionBackend::cudnn);
  if (arch != SdpaArch::volta && half &&
      std::max(d, dv) <= (arch == SdpaArch::rocm ? 512 : 256)) {
    mask |= bit(AttentionBackend::flash);
  }
  if (half || s.dtype == DType::fp32) {
    const double align = half ? 8.0 : 4.0;
    const bool ok = arch != SdpaArch::rocm || (std::ceil(d / align) * align <= 512 &&
                                               std::ceil(dv / align) * align <= 512);
    if (ok) mask |= bit(AttentionBackend::efficient);
  }
  return mask;
}

Estimate attention_auto_estimate(const AttentionShape& s, SdpaArch arch, const Rates& rates,
                                 AttentionBackend& winner) noexcept {
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr AttentionBackend order[] = {AttentionBackend::standard, AttentionBackend::cudnn,
                                        AttentionBackend::flash, AttentionBackend::efficient,
                                        AttentionBackend::math};
  if (arch == SdpaArch::rocm) {
    // ROCm: SDPA's dispatch picks one backend per call (AOTriton flash, then AOTriton
    // efficient, then math) and autograd runs that backend's backward: price both with it.
    AttentionShape one = s;
    one.backend = sdpa_backend(s, arch);
    if (one.backend != AttentionBackend::standard) {
      one.flash = one.backend != AttentionBackend::math;
    }
    winner = one.backend;
    return attention_estimate(one, rates);
  }
  const unsigned mask = auto_candidates(s, arch);
  Estimate best;
  best.time_s = best.compute_s = best.memory_s = best.overhead_s = inf;
  best.flops = best.bytes = inf;
  winner = AttentionBackend::math;
  for (const AttentionBackend b : order) {
    if ((mask & bit(b)) == 0) continue;
    AttentionShape one = s;
    one.backend = b;
    if (b != AttentionBackend::standard) one.flash = b != AttentionBackend::math;
    const Estimate e = attention_estimate(one, rates);
    if (e.time_s < best.time_s) {  // strict: the earlier backend keeps a tie
      best = e;
      winner = b;
    }
  }
  return best;
}

void attention_auto_sweep(const double* batch, const double* heads, const double* kv_heads,
                          const double* q_len, const double* kv_len, const double* head_dim,
                          const double* v_head_dim, std::size_t n_points,
                          const AttentionShape& flags, SdpaArch arch, const Rates& rates,
                          int threads, EstimateColumns out, std::uint8_t* winner) {
  // A point costs up to four kernel models (~microseconds): threads pay off from ~4k points.
  constexpr std::size_t kMinAttentionPoints = 1u << 12;
  parallel_for(n_points, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const AttentionShape s = with_dims(flags, batch[i], heads[i], kv_heads[i], q_len[i],
                                         kv_len[i], head_dim[i], v_head_dim[i]);
      AttentionBackend b = AttentionBackend::math;
      out.set(i, attention_auto_estimate(s, arch, rates, b));
      winner[i] = static_cast<std::uint8_t>(b);
    }
  }, kMinAttentionPoints);
}

double masked_attention_chain_s(double tiles, double sms, double kv_blocks,
                                double round_trips_per_block, double round_trips_per_tile,
                                double step_s) noexcept {
  if (tiles <= 0.0 || kv_blocks <= 0.0 || step_s <= 0.0) return 0.0;
  const double waves = sms > 0.0 ? std::ceil(tiles / sms) : 1.0;
  return waves * (kv_blocks * round_trips_per_block + round_trips_per_tile) * step_s;
}

}  // namespace roofline
