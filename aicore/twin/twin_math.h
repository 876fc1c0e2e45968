// Elementary functions for the hot vector ops, written with GCC vector extensions (8 floats at a
// time) because g++ does not vectorize loops over libm's expf/sqrtf without -ffast-math, and its
// jump threading turns the clamps of a scalar exp into branches that block auto-vectorization.
#ifndef MS_OPS_TWIN_MATH_H_
#define MS_OPS_TWIN_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "twin_intrin.h"

namespace AscendC {
namespace twin_detail {

typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
typedef uint32_t U8 __attribute__((vector_size(32)));

inline F8 Splat(float v) { return F8{} + v; }

// The exponential's input range: below kExpLow the result rounds to +0, above kExpHigh it is +inf.
constexpr float kExpLow = -104.0f, kExpHigh = 89.0f;

// ExpReduced: e^r of the clamped xc = n ln2 + r, with n and t = xc / ln2 + 1.5*2^23.
template <class F>
inline F ExpReduced(F xc, F &n, F &t) {
  const F kRound = F{} + 12582912.0f;
  t = xc * 1.44269504088896341f + kRound;
  n = t - kRound;
  const F r = (xc - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
  F p = F{} + 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p;
}

// exp(x) = 2^n * e^r with n = round(x / ln2), |r| <= ln2/2: ln2 split in two so n*ln2 is exact,
// e^r by its degree-7 Taylor polynomial (truncation ~1e-8 relative), 2^n applied in two halves so
// that results down to the subnormals and up to overflow come out right. About 1 ulp. NaN passes
// through the clamps and the arithmetic; n is read from the bits of x/ln2 + 1.5*2^23. Lane-wise
// (each lane the same operations in the same order), so any vector width gives the same bits.
template <class F, class I, class U>
inline F ExpScaled(F x) {
  F xc = x < F{} + kExpLow ? F{} + kExpLow : x;
  xc = xc > F{} + kExpHigh ? F{} + kExpHigh : xc;
  F n, t;
  const F p = ExpReduced(xc, n, t);
  const I ni = (I)((U)t - 0x4B400000u);  // 0x4B400000: the bits of 1.5*2^23
  const I h = ni >> 1;
  return p * (F)((U)(h + 127) << 23) * (F)((U)(ni - h + 127) << 23);
}

// Whether any lane of a comparison's result (0 or -1 a lane) is set.
template <class I>
inline bool AnyLane(I m) {
  if constexpr (sizeof(I) == 32) {
    return _mm256_movemask_ps((__m256)m) != 0;
  } else {
    return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) != 0;
  }
}

// Results below 2^-126 cost an Intel core a microcode assist each (with FTZ off, as here): about
// 75 cycles, twenty times the exponential itself, and every masked score (kFaLowest) is one. x <=
// -104 gives +0 (x clamped to -104 is 0.97 * 2^-150, which rounds to 0), so a vector whose small
// lanes are all that low takes them as +0 and computes the rest from an input that cannot
// underflow; only a lane whose result is a subnormal goes through the slow products.
constexpr float kExpNormalFrom = -87.0f;  // e^-87 = 1.6e-38 > 2^-126
template <class F, class I, F (*Exp)(F)>
inline F ExpUnderflowFree(F x) {
  const I small = (I)(x < F{} + kExpNormalFrom);
  if (!AnyLane(small)) return Exp(x);
  const I zero = (I)(x <= F{} + kExpLow);
  if (AnyLane(small & ~zero)) return Exp(x);
  return small ? F{} : Exp(small ? F{} : x);
}

template <class F, class I, class U>
inline F ExpLanes(F x) {
  return ExpUnderflowFree<F, I, ExpScaled<F, I, U>>(x);
}

inline F8 Exp8(F8 x) { return ExpLanes<F8, I8, U8>(x); }

// f over n floats, a vector V at a time; the tail goes through a zero-padded vector.
template <class V, class F>
inline void MapLanes(float *d, const float *s, int32_t n, F f) {
  constexpr int32_t w = sizeof(V) / sizeof(float);
  int32_t i = 0;
  for (; i + w <= n; i += w) {
    V v;
    std::memcpy(&v, s + i, sizeof(v));
    v = f(v);
    std::memcpy(d + i, &v, sizeof(v));
  }
  if (i < n) {
    V v{};
    std::memcpy(&v, s + i, (n - i) * sizeof(float));
    v = f(v);
    std::memcpy(d + i, &v, (n - i) * sizeof(float));
  }
}

template <class F>
inline void Map8(float *d, const float *s, int32_t n, F f) {
  MapLanes<F8>(d, s, n, f);
}

// The build's widest float vector: 16 lanes where AVX-512 is there, 8 otherwise.
#ifdef __AVX512F__
typedef float FW __attribute__((vector_size(64)));
typedef int32_t IW __attribute__((vector_size(64)));
typedef uint32_t UW __attribute__((vector_size(64)));
#else
typedef F8 FW;
typedef I8 IW;
typedef U8 UW;
#endif
constexpr int32_t kWide = sizeof(FW) / sizeof(float);

#ifdef __AVX512F__
// ExpScaled's bits in 14 instructions instead of 25: vmaxps(lo, x) and vminps(hi, x) are its
// clamps lane for lane (NaN passes: each returns its second operand when the comparison fails),
// and vscalefps rounds p * 2^n once, as ExpScaled's second product does (the first is exact).
inline FW ExpScaledWide(FW x) {
  const __m512 low = _mm512_max_ps(_mm512_set1_ps(kExpLow), (__m512)x);
  const FW xc = (FW)_mm512_min_ps(_mm512_set1_ps(kExpHigh), low);
  FW n, t;
  const FW p = ExpReduced(xc, n, t);
  return (FW)_mm512_scalef_ps((__m512)p, (__m512)n);
}
inline FW ExpWide(FW x) { return ExpUnderflowFree<FW, IW, ExpScaledWide>(x); }
#else
inline FW ExpWide(FW x) { return ExpLanes<FW, IW, UW>(x); }
#endif

// exp over n floats at the widest vectors (with AVX-512 the Exp API's share of the flash-attention
// forward halves).
inline void MapExp(float *d, const float *s, int32_t n) { MapLanes<FW>(d, s, n, ExpWide); }

inline F8 Sqrt8(F8 x) {
#ifdef __AVX__
  return _mm256_sqrt_ps(x);
#else
  for (int k = 0; k < 8; ++k) x[k] = std::sqrt(x[k]);
  return x;
#endif
}

}  // namespace twin_detail
}  // namespace AscendC

#endif  // MS_OPS_TWIN_MATH_H_
