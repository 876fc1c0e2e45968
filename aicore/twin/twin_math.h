// Elementary functions written so that g++ vectorizes the loops calling them (libm's scalar
// expf does not vectorize without -ffast-math, and Exp is the hot op of softmax kernels).
#ifndef MS_OPS_TWIN_MATH_H_
#define MS_OPS_TWIN_MATH_H_

#include <cstdint>
#include <cstring>

namespace AscendC {
namespace twin_detail {

inline float FloatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// exp(x) = 2^n * e^r with n = round(x / ln2), |r| <= ln2/2: ln2 split in two so n*ln2 is exact,
// e^r by its degree-7 Taylor polynomial (truncation ~1e-8 relative), 2^n applied in two halves so
// that results down to the subnormals and up to overflow come out right. About 1 ulp.
inline float ExpF(float x) {
  const float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (xc * 1.44269504088896341f + kRound) - kRound;
  const float r = (xc - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t h = ni / 2;
  const float y = p * FloatFromBits(static_cast<uint32_t>(h + 127) << 23) *
                  FloatFromBits(static_cast<uint32_t>(ni - h + 127) << 23);
  return x != x ? x : y;
}

}  // namespace twin_detail
}  // namespace AscendC

#endif  // MS_OPS_TWIN_MATH_H_
