// Cast between float and half / bfloat16_t / int32_t, uint8_t -> half (and float -> float rounding
// to an integer; the other pairs of Atlas A2 in twin_cast_pairs.h),
// with the RoundMode semantics: CAST_NONE rounds to nearest even where the conversion loses
// precision, CAST_ROUND is half away from zero, CAST_ODD rounds to odd. float -> int32_t
// saturates at the int32 range and maps NaN to 0. The level-0 forms are in twin_cast0.h.
#ifndef MS_OPS_TWIN_CAST_H_
#define MS_OPS_TWIN_CAST_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "twin_cast_pairs.h"
#include "twin_intrin.h"
#include "twin_vector.h"

namespace AscendC {
namespace twin_detail {

template <typename>
constexpr bool kAlwaysFalse = false;

[[noreturn]] inline void BadMode(const char *conversion, RoundMode m) {
  Fail("Cast", "round mode " + Str(static_cast<unsigned>(m)) + " is not supported for " + conversion);
}

// Round half away from zero; x - trunc(x) is exact for floats.
inline float RoundAway(float x) {
  const float t = std::trunc(x);
  return std::fabs(x - t) >= 0.5f ? t + std::copysign(1.0f, x) : t;
}

template <class F>
inline void ToInt32(int32_t *d, const float *s, uint32_t n, F round) {
  for (uint32_t i = 0; i < n; ++i) {
    const float r = round(s[i]);
    d[i] = r != r ? 0 : (r >= 2147483648.0f ? INT32_MAX : (r < -2147483648.0f ? INT32_MIN : static_cast<int32_t>(r)));
  }
}

template <class F>
inline void ToFloat(float *d, const float *s, uint32_t n, F round) {
  for (uint32_t i = 0; i < n; ++i) d[i] = round(s[i]);
}

// Applies the rounding of mode m (to an integer value) through `apply(roundFn)`.
template <class Apply>
inline bool WithIntRounding(RoundMode m, Apply apply) {
  switch (m) {
    case RoundMode::CAST_NONE:
    case RoundMode::CAST_RINT: apply([](float x) { return std::rint(x); }); return true;
    case RoundMode::CAST_FLOOR: apply([](float x) { return std::floor(x); }); return true;
    case RoundMode::CAST_CEIL: apply([](float x) { return std::ceil(x); }); return true;
    case RoundMode::CAST_TRUNC: apply([](float x) { return std::trunc(x); }); return true;
    case RoundMode::CAST_ROUND: apply([](float x) { return RoundAway(x); }); return true;
    default: return false;
  }
}

// g++ 12 does not vectorize _Float16 conversions: F16C does 8 at a time where the CPU has it.
inline void HalfToFloat(float *d, const half *s, uint32_t n) {
  uint32_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i))));
#endif
  for (; i < n; ++i) d[i] = static_cast<float>(s[i]);
}

inline void FloatToHalf(half *d, const float *s, uint32_t n) {
  uint32_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) d[i] = static_cast<half>(s[i]);
}

// On the bit patterns, so that the loops vectorize as integer code.
inline void Bf16ToFloat(float *d, const bfloat16_t *s, uint32_t n) {
  const uint16_t *b = reinterpret_cast<const uint16_t *>(s);
  uint32_t *u = reinterpret_cast<uint32_t *>(d);
  for (uint32_t i = 0; i < n; ++i) u[i] = static_cast<uint32_t>(b[i]) << 16;
}

// With AVX512-BF16 sixteen at a time by VCVTNEPS2BF16, which gives FromFloat's bits for every
// input (NaN included: checked on all 2^32) but a subnormal, which it flushes to zero: a vector
// holding one goes element by element.
inline void FloatToBf16(bfloat16_t *d, const float *s, uint32_t n) {
  uint16_t *b = reinterpret_cast<uint16_t *>(d);
  uint32_t i = 0;
#ifdef __AVX512BF16__
  const __m512i exponent = _mm512_set1_epi32(0x7F800000), mantissa = _mm512_set1_epi32(0x007FFFFF);
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(s + i);
    const __m512i u = _mm512_castps_si512(v);
    if ((_mm512_testn_epi32_mask(u, exponent) & _mm512_test_epi32_mask(u, mantissa)) != 0) {
      for (uint32_t j = i; j < i + 16; ++j) b[j] = bfloat16_t::FromFloat(s[j]);
      continue;
    }
    const __m256bh r = _mm512_cvtneps_pbh(v);
    std::memcpy(b + i, &r, sizeof(r));
  }
#endif
  for (; i < n; ++i) b[i] = bfloat16_t::FromFloat(s[i]);
}

}  // namespace twin_detail

namespace twin_detail {

// n elements of s converted into d: the count form's work, and the level-0 form's (twin_cast0.h)
// on the active lanes gathered into one run.
template <typename T, typename U>
inline void Convert(T *d, const U *s, uint32_t count, RoundMode roundMode) {
  constexpr bool kToNarrow = std::is_same_v<U, float> && (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>);
  constexpr bool kFromNarrow = std::is_same_v<T, float> && (std::is_same_v<U, half> || std::is_same_v<U, bfloat16_t>);
  if constexpr (kToNarrow) {
    if (roundMode == RoundMode::CAST_NONE || roundMode == RoundMode::CAST_RINT) {
      if constexpr (std::is_same_v<T, half>) FloatToHalf(d, s, count);
      else FloatToBf16(d, s, count);
    } else {
      for (uint32_t i = 0; i < count; ++i) d[i] = NarrowDirected<T>(s[i], roundMode);
    }
  } else if constexpr (kFromNarrow) {
    if (roundMode != RoundMode::CAST_NONE) BadMode("an exact widening to float", roundMode);
    if constexpr (std::is_same_v<U, half>) HalfToFloat(d, s, count);
    else Bf16ToFloat(d, s, count);
  } else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, int32_t>) {
    if (!WithIntRounding(roundMode, [&](auto f) { ToInt32(d, s, count, f); })) BadMode("float -> int32", roundMode);
  } else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, float>) {
    if (roundMode == RoundMode::CAST_NONE || !WithIntRounding(roundMode, [&](auto f) { ToFloat(d, s, count, f); }))
      BadMode("float -> float", roundMode);
  } else if constexpr (std::is_same_v<U, uint8_t> && std::is_same_v<T, half>) {
    // Exact: every uint8 value is a half.
    if (roundMode != RoundMode::CAST_NONE) BadMode("uint8 -> half", roundMode);
    for (uint32_t i = 0; i < count; ++i) d[i] = static_cast<half>(s[i]);
  } else if constexpr (std::is_same_v<U, int32_t> && std::is_same_v<T, half>) {
    // Atlas A2 converts int32 to half by dequantising: x times the DEQSCALE register (SetDeqScale),
    // rounded to the nearest half. Exact in float wherever the result is a finite half.
    if (roundMode != RoundMode::CAST_NONE) BadMode("int32 -> half (a dequantisation)", roundMode);
    const ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
    if (!b.deqScaleSet)
      Fail("Cast", "int32 -> half multiplies by the DEQSCALE register, which no SetDeqScale has set on this core");
    for (uint32_t i = 0; i < count; ++i) d[i] = static_cast<half>(static_cast<float>(s[i]) * b.deqScale);
  } else if constexpr ((std::is_same_v<T, int4b_t> && std::is_same_v<U, half>) ||
                       (std::is_same_v<T, half> && std::is_same_v<U, int4b_t>)) {
    // Atlas A2 converts half <-> int4; the twin has no int4b_t tensors to convert (twin_tensor.h).
    Fail("Cast", "half <-> int4b_t is not modelled by the twin");
  } else if constexpr (PairModes<T, U>() != 0) {
    if ((PairModes<T, U>() & ModeBit(roundMode)) == 0) BadMode("this conversion on Atlas A2", roundMode);
    ConvertPair(d, s, count, roundMode);
  } else {
    static_assert(kAlwaysFalse<T>, "Cast: Atlas A2 has no such conversion");
  }
}

}  // namespace twin_detail

// One scalar converted as Cast converts a tensor's elements (the same pairs and round modes);
// ScalarCast is CANN's older name.
template <typename T, typename U, RoundMode roundMode>
inline U Cast(T valueIn) {
  U out;
  twin_detail::Convert(&out, &valueIn, 1, roundMode);
  return out;
}
template <typename T, typename U, RoundMode roundMode>
inline U ScalarCast(T valueIn) {
  return Cast<T, U, roundMode>(valueIn);
}

// The DEQSCALE register: the factor Cast applies to int32 -> half (the half-scale form of
// SetDeqScale; its quantisation forms with an offset or a vector of scales are not modelled).
inline void SetDeqScale(half scale) {
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  b.deqScale = static_cast<float>(scale);
  b.deqScaleSet = true;
}

template <typename T, typename U>
inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode, const uint32_t count) {
  using namespace twin_detail;
  const U *s = VecIn("Cast", src, count);
  T *d = VecOut("Cast", dst, count);
  // Elements of different widths overlapping in an allowed order (a narrow source in the back of
  // a wide destination) are read whole first, as the NPU's repeats read theirs before writing.
  const bool overlap = RepeatOrdered("Cast", d, sizeof(T), s, sizeof(U), count);
  if (overlap && sizeof(T) != sizeof(U) && static_cast<const void *>(d) != static_cast<const void *>(s)) {
    const std::vector<U> whole(s, s + count);
    return Convert(d, whole.data(), count, roundMode);
  }
  Convert(d, s, count, roundMode);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_CAST_H_
