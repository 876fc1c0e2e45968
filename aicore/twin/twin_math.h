// Elementary functions for the hot vector ops, written with GCC vector extensions (8 floats at a
// time) because g++ does not vectorize loops over libm's expf/sqrtf without -ffast-math, and its
// jump threading turns the clamps of a scalar exp into branches that block auto-vectorization.
#ifndef MS_OPS_TWIN_MATH_H_
#define MS_OPS_TWIN_MATH_H_

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace AscendC {
namespace twin_detail {

typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
typedef uint32_t U8 __attribute__((vector_size(32)));

inline F8 Splat(float v) { return F8{} + v; }

// exp(x) = 2^n * e^r with n = round(x / ln2), |r| <= ln2/2: ln2 split in two so n*ln2 is exact,
// e^r by its degree-7 Taylor polynomial (truncation ~1e-8 relative), 2^n applied in two halves so
// that results down to the subnormals and up to overflow come out right. About 1 ulp. NaN passes
// through the clamps and the arithmetic; n is read from the bits of x/ln2 + 1.5*2^23. Lane-wise
// (each lane the same operations in the same order), so any vector width gives the same bits.
template <class F, class I, class U>
inline F ExpLanes(F x) {
  const F lo = F{} - 104.0f, hi = F{} + 89.0f, kRound = F{} + 12582912.0f;
  F xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  const F t = xc * 1.44269504088896341f + kRound;
  const F n = t - kRound;
  const F r = (xc - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
  F p = F{} + 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I ni = (I)((U)t - 0x4B400000u);  // 0x4B400000: the bits of 1.5*2^23
  const I h = ni >> 1;
  return p * (F)((U)(h + 127) << 23) * (F)((U)(ni - h + 127) << 23);
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

inline FW ExpWide(FW x) { return ExpLanes<FW, IW, UW>(x); }

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
