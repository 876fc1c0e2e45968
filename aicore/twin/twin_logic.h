// Bitwise And and Or on UB tensors (CANN's vec_binary family): the count form and the level-0
// mask/repeat forms. Atlas A2 has them for 16-bit integers only.
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

}  // namespace AscendC

#endif  // MS_OPS_TWIN_LOGIC_H_
