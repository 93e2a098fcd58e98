#pragma once
// Eight doubles computed together: the number type of batched sweeps. Formulas written once as
// templates over their number type run on `double` (one shape) and on `Lanes` (eight shapes):
// every operation is the same IEEE operation per lane, so each lane's result is bit for bit the
// scalar one (build without FP contraction: -ffp-contract=off). The loops compile to SIMD code.
#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__GNUC__)
/// Inline every call in the function's body, recursively (kernel formulas into a final sink:
/// the Cost a formula builds then lives in registers and unused fields are never written).
#define ROOFLINE_FLATTEN __attribute__((flatten))
/// Never inline this function (keeps a flattened caller's large branches out of line).
#define ROOFLINE_NOINLINE __attribute__((noinline))
#else
#define ROOFLINE_FLATTEN
#define ROOFLINE_NOINLINE
#endif

namespace roofline {

/// Shapes a Lanes value holds.
inline constexpr std::size_t kLaneCount = 8;

/// One true/false per lane (the result of comparing Lanes).
struct LaneMask {
  std::int64_t v[kLaneCount];  ///< 0: false, -1: true
};

/// Eight doubles, one per shape of a batch.
struct alignas(64) Lanes {
  double v[kLaneCount];  ///< one value per lane

  /// Uninitialized lanes.
  Lanes() = default;
  /// Every lane `x` (implicit: constants mix with lanes as with doubles).
  Lanes(double x) noexcept {  // NOLINT(google-explicit-constructor)
    for (std::size_t i = 0; i < kLaneCount; ++i) v[i] = x;
  }
  /// Lane i.
  double operator[](std::size_t i) const noexcept { return v[i]; }
  /// Lane i, writable.
  double& operator[](std::size_t i) noexcept { return v[i]; }
};

#define ROOFLINE_LANES_BINARY(op)                                                      \
  inline Lanes operator op(const Lanes& a, const Lanes& b) noexcept {                  \
    Lanes r;                                                                           \
    for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = a.v[i] op b.v[i];            \
    return r;                                                                          \
  }                                                                                    \
  inline Lanes operator op(const Lanes& a, double b) noexcept {                        \
    Lanes r;                                                                           \
    for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = a.v[i] op b;                 \
    return r;                                                                          \
  }                                                                                    \
  inline Lanes operator op(double a, const Lanes& b) noexcept {                        \
    Lanes r;                                                                           \
    for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = a op b.v[i];                 \
    return r;                                                                          \
  }                                                                                    \
  inline Lanes& operator op##=(Lanes& a, const Lanes& b) noexcept { return a = a op b; }
ROOFLINE_LANES_BINARY(+)
ROOFLINE_LANES_BINARY(-)
ROOFLINE_LANES_BINARY(*)
ROOFLINE_LANES_BINARY(/)
#undef ROOFLINE_LANES_BINARY

#if defined(__GNUC__)
// GCC / Clang vector extensions for comparisons, masks and selects: the plain loops below
// compile to a compare and a branch per lane on x86-64's baseline (SSE2); these compile to
// packed compares and bitwise blends (whatever the ISA: SSE2, AVX2, AVX-512), same results.
namespace lanes_detail {
/// Two doubles as one GCC vector (SSE2's width: wider generic vectors are split lane by lane).
typedef double Vec __attribute__((vector_size(2 * sizeof(double))));
/// Two 64-bit masks (0 or -1) as one GCC vector.
typedef std::int64_t Mask __attribute__((vector_size(2 * sizeof(std::int64_t))));
/// Pairs of lanes a vector op covers.
inline constexpr std::size_t kPairs = kLaneCount / 2;
/// Lanes 2p and 2p + 1 of `a`.
inline Vec pair(const Lanes& a, std::size_t p) noexcept {
  Vec r;
  __builtin_memcpy(&r, a.v + 2 * p, sizeof r);
  return r;
}
/// Masks 2p and 2p + 1 of `m`.
inline Mask pair(const LaneMask& m, std::size_t p) noexcept {
  Mask r;
  __builtin_memcpy(&r, m.v + 2 * p, sizeof r);
  return r;
}
/// Writes lanes 2p and 2p + 1 of `out`.
inline void put(Lanes& out, std::size_t p, const Vec& v) noexcept {
  __builtin_memcpy(out.v + 2 * p, &v, sizeof v);
}
/// Writes masks 2p and 2p + 1 of `out`.
inline void put(LaneMask& out, std::size_t p, const Mask& v) noexcept {
  __builtin_memcpy(out.v + 2 * p, &v, sizeof v);
}
/// Bits of `a` where `m` holds, else bits of `b`.
inline Vec blend(const Mask& m, const Vec& a, const Vec& b) noexcept {
  return reinterpret_cast<Vec>((reinterpret_cast<Mask>(a) & m) |
                               (reinterpret_cast<Mask>(b) & ~m));
}
}  // namespace lanes_detail

#define ROOFLINE_LANES_COMPARE(op)                                                     \
  inline LaneMask operator op(const Lanes& a, const Lanes& b) noexcept {               \
    using namespace lanes_detail;                                                      \
    LaneMask r;                                                                        \
    for (std::size_t p = 0; p < kPairs; ++p) put(r, p, pair(a, p) op pair(b, p));      \
    return r;                                                                          \
  }                                                                                    \
  inline LaneMask operator op(const Lanes& a, double b) noexcept {                     \
    using namespace lanes_detail;                                                      \
    const Vec c = {b, b};                                                              \
    LaneMask r;                                                                        \
    for (std::size_t p = 0; p < kPairs; ++p) put(r, p, pair(a, p) op c);               \
    return r;                                                                          \
  }
#else
#define ROOFLINE_LANES_COMPARE(op)                                                     \
  inline LaneMask operator op(const Lanes& a, const Lanes& b) noexcept {               \
    LaneMask r;                                                                        \
    for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = a.v[i] op b.v[i] ? -1 : 0;   \
    return r;                                                                          \
  }                                                                                    \
  inline LaneMask operator op(const Lanes& a, double b) noexcept {                     \
    LaneMask r;                                                                        \
    for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = a.v[i] op b ? -1 : 0;        \
    return r;                                                                          \
  }
#endif
ROOFLINE_LANES_COMPARE(<)
ROOFLINE_LANES_COMPARE(<=)
ROOFLINE_LANES_COMPARE(>)
ROOFLINE_LANES_COMPARE(>=)
ROOFLINE_LANES_COMPARE(==)
#undef ROOFLINE_LANES_COMPARE

/// Lanes where both masks hold.
inline LaneMask operator&(const LaneMask& a, const LaneMask& b) noexcept {
  LaneMask r;
  for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = a.v[i] & b.v[i];
  return r;
}
/// Lanes where either mask holds.
inline LaneMask operator|(const LaneMask& a, const LaneMask& b) noexcept {
  LaneMask r;
  for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = a.v[i] | b.v[i];
  return r;
}
/// Lanes where the mask does not hold.
inline LaneMask operator~(const LaneMask& a) noexcept {
  LaneMask r;
  for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = ~a.v[i];
  return r;
}

/// `a` where the mask holds, else `b` (per lane).
inline Lanes select(const LaneMask& m, const Lanes& a, const Lanes& b) noexcept {
#if defined(__GNUC__)
  using namespace lanes_detail;
  Lanes r;
  for (std::size_t p = 0; p < kPairs; ++p) put(r, p, blend(pair(m, p), pair(a, p), pair(b, p)));
  return r;
#else
  Lanes r;
  for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = m.v[i] ? a.v[i] : b.v[i];
  return r;
#endif
}
/// `a` if `m`, else `b` (the scalar select of templated formulas).
inline double select(bool m, double a, double b) noexcept { return m ? a : b; }

/// True when the mask holds in some lane.
inline bool any(const LaneMask& m) noexcept {
  std::int64_t r = 0;
  for (std::size_t i = 0; i < kLaneCount; ++i) r |= m.v[i];
  return r != 0;
}
/// The scalar any().
inline bool any(bool m) noexcept { return m; }

/// Per-lane minimum, as std::min(a, b) (b only where b < a).
inline Lanes min(const Lanes& a, const Lanes& b) noexcept { return select(b < a, b, a); }
/// Per-lane maximum, as std::max(a, b) (b only where a < b).
inline Lanes max(const Lanes& a, const Lanes& b) noexcept { return select(a < b, b, a); }
/// Per-lane `a > b ? a : b` (select(a > b, a, b), the same bits, NaN and signed zeros
/// included): a plain loop, which compiles to one packed max per vector (x86 MAXPD has exactly
/// these semantics) instead of a compare and a three-op blend.
inline Lanes larger(const Lanes& a, const Lanes& b) noexcept {
  Lanes r;
  for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
  return r;
}
/// Per-lane ceiling (as std::ceil).
inline Lanes ceil(const Lanes& a) noexcept {
  Lanes r;
  for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = __builtin_ceil(a.v[i]);
  return r;
}
/// Per-lane floor (as std::floor).
inline Lanes floor(const Lanes& a) noexcept {
  Lanes r;
  for (std::size_t i = 0; i < kLaneCount; ++i) r.v[i] = __builtin_floor(a.v[i]);
  return r;
}

// The same names on doubles (exact matches: templated formulas call min(a, b) unqualified).
/// std::min(a, b).
inline double min(double a, double b) noexcept { return b < a ? b : a; }
/// std::max(a, b).
inline double max(double a, double b) noexcept { return a < b ? b : a; }
/// a > b ? a : b (the scalar larger()).
inline double larger(double a, double b) noexcept { return a > b ? a : b; }
/// std::ceil(a).
inline double ceil(double a) noexcept { return __builtin_ceil(a); }
/// std::floor(a).
inline double floor(double a) noexcept { return __builtin_floor(a); }

}  // namespace roofline
