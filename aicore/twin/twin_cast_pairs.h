// The Cast pairs of Atlas A2 beyond float <-> half / bfloat16_t / int32_t (twin_cast.h), and the
// directed rounding to 16-bit floats both use. Each pair takes the round modes CANN's Cast table
// allows for it: to an integer type the value is rounded by the mode (CAST_NONE: to nearest even)
// and saturated to the type's range, NaN giving 0; from an integer type to half or float it is
// rounded to a representable value in the mode's direction.
#ifndef MS_OPS_TWIN_CAST_PAIRS_H_
#define MS_OPS_TWIN_CAST_PAIRS_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "twin_types.h"

namespace AscendC {
namespace twin_detail {

constexpr uint32_t ModeBit(RoundMode m) { return 1u << static_cast<uint32_t>(m); }
constexpr uint32_t kNone = ModeBit(RoundMode::CAST_NONE);
constexpr uint32_t kDirected = ModeBit(RoundMode::CAST_RINT) | ModeBit(RoundMode::CAST_FLOOR) |
                               ModeBit(RoundMode::CAST_CEIL) | ModeBit(RoundMode::CAST_ROUND) |
                               ModeBit(RoundMode::CAST_TRUNC);

// The modes Atlas A2 allows for src U -> dst T among the pairs this header converts (0: none).
template <typename T, typename U>
constexpr uint32_t PairModes() {
  auto is = [](auto a, auto b) { return std::is_same_v<decltype(a), decltype(b)>; };
  const T t{};
  const U u{};
  if (is(u, int8_t{}) && is(t, half{})) return kNone;  // uint8 -> half: twin_cast.h
  if (is(u, int16_t{}) && is(t, half{})) return kDirected | kNone;
  if (is(u, int16_t{}) && is(t, float{})) return kNone;
  if (is(u, half{}) && (is(t, int8_t{}) || is(t, uint8_t{}))) return kDirected | kNone;
  if (is(u, half{}) && (is(t, int16_t{}) || is(t, int32_t{}))) return kDirected;
  if (is(u, bfloat16_t{}) && is(t, int32_t{})) return kDirected;
  if (is(u, int32_t{}) && (is(t, int16_t{}) || is(t, int64_t{}))) return kNone;
  if (is(u, int32_t{}) && is(t, float{})) return kDirected | kNone;
  if (is(u, float{}) && (is(t, int16_t{}) || is(t, int64_t{}))) return kDirected;
  if (is(u, int64_t{}) && is(t, int32_t{})) return kNone;
  if (is(u, int64_t{}) && is(t, float{})) return kDirected;
  return 0;
}

inline double RoundBy(double x, RoundMode m) {
  switch (m) {
    case RoundMode::CAST_FLOOR: return std::floor(x);
    case RoundMode::CAST_CEIL: return std::ceil(x);
    case RoundMode::CAST_TRUNC: return std::trunc(x);
    case RoundMode::CAST_ROUND: return std::round(x);
    default: return std::nearbyint(x);
  }
}

template <typename T>
inline T ToInteger(double x, RoundMode m) {
  if (x != x) return 0;
  const double r = RoundBy(x, m);
  if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

// Neighbour of a 16-bit float pattern one step up (towards +inf) or down.
inline uint16_t Step16(uint16_t b, bool up) {
  const bool neg = (b & 0x8000u) != 0;
  if ((b & 0x7FFFu) == 0) return up ? 0x0001u : 0x8001u;
  return (neg == up) ? b - 1 : b + 1;
}

// float -> half / bfloat16_t with a directed mode: start from the nearest-even result and move
// to the neighbour the mode asks for when x lies strictly between two representable values.
template <typename N>
inline N NarrowDirected(float x, RoundMode m) {
  const N c = static_cast<N>(x);
  const float back = static_cast<float>(c);
  if (x != x || back == x) return c;
  uint16_t cb, lb, hb;
  std::memcpy(&cb, &c, 2);
  if (back < x) {
    lb = cb;
    hb = Step16(cb, true);
  } else {
    hb = cb;
    lb = Step16(cb, false);
  }
  N lo, hi;
  std::memcpy(&lo, &lb, 2);
  std::memcpy(&hi, &hb, 2);
  switch (m) {
    case RoundMode::CAST_FLOOR: return lo;
    case RoundMode::CAST_CEIL: return hi;
    case RoundMode::CAST_TRUNC: return x > 0 ? lo : hi;
    case RoundMode::CAST_ODD: return (lb & 1u) ? lo : hi;
    case RoundMode::CAST_ROUND: {
      const double mid = (static_cast<double>(static_cast<float>(lo)) + static_cast<float>(hi)) / 2;
      if (static_cast<double>(x) != mid) return c;
      return x > 0 ? hi : lo;
    }
    default: return c;
  }
}

// An integer value as float or half, rounded in the mode's direction (CAST_NONE: nearest even).
// Sources narrower than 24 bits are exact in float, so half goes through NarrowDirected; int32 /
// int64 to float step from the nearest float to its neighbour when that rounded the wrong way.
template <typename T>
inline T FromInteger(double x, RoundMode m) {
  if (m == RoundMode::CAST_NONE) m = RoundMode::CAST_RINT;
  if constexpr (std::is_same_v<T, half>) {
    return m == RoundMode::CAST_RINT ? static_cast<half>(static_cast<float>(x))
                                     : NarrowDirected<half>(static_cast<float>(x), m);
  } else {
    const float c = static_cast<float>(x);
    if (static_cast<double>(c) == x || m == RoundMode::CAST_RINT) return c;
    const bool above = static_cast<double>(c) > x;
    const float lo = above ? std::nextafter(c, -INFINITY) : c, hi = above ? c : std::nextafter(c, INFINITY);
    switch (m) {
      case RoundMode::CAST_FLOOR: return lo;
      case RoundMode::CAST_CEIL: return hi;
      case RoundMode::CAST_TRUNC: return x > 0 ? lo : hi;
      default: {  // CAST_ROUND: ties away from zero
        const double mid = (static_cast<double>(lo) + static_cast<double>(hi)) / 2;
        if (x != mid) return c;
        return x > 0 ? hi : lo;
      }
    }
  }
}

template <typename T, typename U>
inline void ConvertPair(T *d, const U *s, uint32_t n, RoundMode m) {
  for (uint32_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(static_cast<std::conditional_t<std::is_integral_v<U>, U, float>>(s[i]));
    if constexpr (std::is_integral_v<T>) d[i] = ToInteger<T>(x, m);
    else d[i] = FromInteger<T>(x, m);
  }
}

}  // namespace twin_detail
}  // namespace AscendC

#endif  // MS_OPS_TWIN_CAST_PAIRS_H_
