// Bitwise And, Or and Not and the shifts ShiftLeft / ShiftRight on UB tensors: the count form and
// the level-0 mask/repeat forms. Atlas A2 has And/Or/Not for 16-bit integers, the shifts for 16-
// and 32-bit ones.
#ifndef MS_OPS_TWIN_LOGIC_H_
#define MS_OPS_TWIN_LOGIC_H_

#include <cstdint>
#include <type_traits>

#include "twin_vector_repeat.h"

namespace AscendC {
namespace twin_detail {

template <typename T>
constexpr bool kLogicType = std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t>;

}  // namespace twin_detail

#define MS_OPS_TWIN_LOGIC(Name, op)                                                                              \
  template <typename T>                                                                                          \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,           \
                   const int32_t &count) {                                                                       \
    static_assert(twin_detail::kLogicType<T>, #Name ": Atlas A2 supports int16_t and uint16_t");                 \
    twin_detail::Binary(#Name, dst, src0, src1, count, [](auto x, auto y) { return x op y; });                  \
  }                                                                                                              \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,           \
                   const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {    \
    static_assert(twin_detail::kLogicType<T>, #Name ": Atlas A2 supports int16_t and uint16_t");                 \
    twin_detail::Binary0(#Name, dst, src0, src1, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime),     \
                         repeatParams, [](auto x, auto y) { return x op y; });                                   \
  }                                                                                                              \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,           \
                   uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {            \
    static_assert(twin_detail::kLogicType<T>, #Name ": Atlas A2 supports int16_t and uint16_t");                 \
    twin_detail::Binary0(#Name, dst, src0, src1, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime),     \
                         repeatParams, [](auto x, auto y) { return x op y; });                                   \
  }
MS_OPS_TWIN_LOGIC(And, &)
MS_OPS_TWIN_LOGIC(Or, |)
#undef MS_OPS_TWIN_LOGIC

template <typename T>
inline void Not(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count) {
  static_assert(twin_detail::kLogicType<T>, "Not: Atlas A2 supports int16_t and uint16_t");
  twin_detail::Unary("Not", dst, src, count, [](auto x) { return ~x; });
}
template <typename T, bool isSetMask = true>
inline void Not(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[], const uint8_t repeatTime,
                const UnaryRepeatParams &repeatParams) {
  static_assert(twin_detail::kLogicType<T>, "Not: Atlas A2 supports int16_t and uint16_t");
  twin_detail::Unary0("Not", dst, src, twin_detail::MaskOf<T, isSetMask>("Not", mask, repeatTime), repeatParams,
                      [](auto x) { return ~x; });
}
template <typename T, bool isSetMask = true>
inline void Not(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask, const uint8_t repeatTime,
                const UnaryRepeatParams &repeatParams) {
  static_assert(twin_detail::kLogicType<T>, "Not: Atlas A2 supports int16_t and uint16_t");
  twin_detail::Unary0("Not", dst, src, twin_detail::MaskOf<T, isSetMask>("Not", mask, repeatTime), repeatParams,
                      [](auto x) { return ~x; });
}

namespace twin_detail {

template <typename T>
constexpr bool kShiftType = std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t> ||
                            std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>;

// The shift count s of a call, checked once: past the width it is the width.
template <typename T>
inline int ShiftBits(const char *call, T s) {
  constexpr int kBits = 8 * sizeof(T);
  if constexpr (std::is_signed_v<T>) {
    if (s < 0) Fail(call, "negative shift " + std::to_string(int64_t(s)));
  }
  return s >= kBits ? kBits : static_cast<int>(s);
}

// x shifted by n bits (0 <= n <= its width) as CANN documents it: unsigned types logically; signed
// ones arithmetically, the sign bit kept (left: the bit below it is the one dropped; right: copies
// of it shift in). Shifts by the whole width leave the sign's fill (or 0).
template <bool left, typename T>
inline T ShiftOf(T x, int n) {
  using U = std::make_unsigned_t<T>;
  constexpr int kBits = 8 * sizeof(T);
  if constexpr (std::is_signed_v<T>) {
    const U sign = U(1) << (kBits - 1), u = static_cast<U>(x);
    if constexpr (left) return static_cast<T>((u & sign) | (n >= kBits ? U(0) : U(u << n) & U(~sign)));
    else return static_cast<T>(x >> (n >= kBits ? kBits - 1 : n));
  } else {
    if (n >= kBits) return T(0);
    return static_cast<T>(left ? U(x << n) : U(x >> n));
  }
}

template <bool left, typename T>
inline void Shift(const char *call, const LocalTensor<T> &dst, const LocalTensor<T> &src, T s, int32_t count) {
  static_assert(kShiftType<T>, "ShiftLeft/ShiftRight: Atlas A2 supports 16- and 32-bit integers");
  const int n = ShiftBits(call, s);
  Unary(call, dst, src, count, [n](auto x) { return ShiftOf<left, T>(T(x), n); });
}
template <bool left, bool isSetMask, typename T, typename M>
inline void Shift0(const char *call, const LocalTensor<T> &dst, const LocalTensor<T> &src, T s, M mask,
                   uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  static_assert(kShiftType<T>, "ShiftLeft/ShiftRight: Atlas A2 supports 16- and 32-bit integers");
  const int n = ShiftBits(call, s);
  Unary0(call, dst, src, MaskOf<T, isSetMask>(call, mask, repeatTime), repeatParams,
         [n](auto x) { return ShiftOf<left, T>(T(x), n); });
}

}  // namespace twin_detail

template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, const int32_t &count) {
  twin_detail::Shift<true>("ShiftLeft", dst, src, scalarValue, count);
}
template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask[],
                      const uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  twin_detail::Shift0<true, isSetMask>("ShiftLeft", dst, src, scalarValue, mask, repeatTime, repeatParams);
}
template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask,
                      const uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  twin_detail::Shift0<true, isSetMask>("ShiftLeft", dst, src, scalarValue, mask, repeatTime, repeatParams);
}
template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,
                       const int32_t &count) {
  twin_detail::Shift<false>("ShiftRight", dst, src, scalarValue, count);
}
// The level-0 forms take roundEn; rounding the shifted-out bits is not modelled.
template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask[],
                       const uint8_t repeatTime, const UnaryRepeatParams &repeatParams, bool roundEn = false) {
  if (roundEn) twin_detail::Fail("ShiftRight", "roundEn = true is not modelled by the twin");
  twin_detail::Shift0<false, isSetMask>("ShiftRight", dst, src, scalarValue, mask, repeatTime, repeatParams);
}
template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask,
                       const uint8_t repeatTime, const UnaryRepeatParams &repeatParams, bool roundEn = false) {
  if (roundEn) twin_detail::Fail("ShiftRight", "roundEn = true is not modelled by the twin");
  twin_detail::Shift0<false, isSetMask>("ShiftRight", dst, src, scalarValue, mask, repeatTime, repeatParams);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_LOGIC_H_
