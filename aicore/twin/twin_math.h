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
// through the clamps and the arithmetic; n is read from the bits of x/ln2 + 1.5*2^23.
inline F8 Exp8(F8 x) {
  const F8 lo = Splat(-104.0f), hi = Splat(89.0f), kRound = Splat(12582912.0f);
  F8 xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  const F8 t = xc * 1.44269504088896341f + kRound;
  const F8 n = t - kRound;
  const F8 r = (xc - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
  F8 p = Splat(1.0f / 5040.0f);
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I8 ni = (I8)((U8)t - 0x4B400000u);  // 0x4B400000: the bits of 1.5*2^23
  const I8 h = ni >> 1;
  return p * (F8)((U8)(h + 127) << 23) * (F8)((U8)(ni - h + 127) << 23);
}

// f over n floats, 8 at a time; the tail goes through a zero-padded vector.
template <class F>
inline void Map8(float *d, const float *s, int32_t n, F f) {
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    F8 v;
    std::memcpy(&v, s + i, sizeof(v));
    v = f(v);
    std::memcpy(d + i, &v, sizeof(v));
  }
  if (i < n) {
    F8 v{};
    std::memcpy(&v, s + i, (n - i) * sizeof(float));
    v = f(v);
    std::memcpy(d + i, &v, (n - i) * sizeof(float));
  }
}

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
