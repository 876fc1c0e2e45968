// Axpy (CANN's compound vector family): dst = src * scalar + dst, in the count form and the
// level-0 mask/repeat forms; FusedMulAdd's and MulAddDst's count forms. Atlas A2 pairs: half into half, float into float, half into float
// (a repeat then covers 64 lanes: 256 bytes of dst, 128 of src). The product and the sum are
// taken in float and rounded once to dst's type.
#ifndef MS_OPS_TWIN_COMPOUND_H_
#define MS_OPS_TWIN_COMPOUND_H_

#include <cstdint>
#include <type_traits>

#include "twin_vector_repeat.h"

namespace AscendC {
namespace twin_detail {

template <typename T, typename U>
constexpr bool kAxpyPair = (std::is_same_v<T, U> && (std::is_same_v<T, half> || std::is_same_v<T, float>)) ||
                           (std::is_same_v<T, float> && std::is_same_v<U, half>);

template <typename T, typename U>
inline T AxpyOf(U x, float s, T d) {
  return static_cast<T>(static_cast<float>(x) * s + static_cast<float>(d));
}

template <typename T, typename U>
inline void Axpy0(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalar, const Lanes &l,
                  const UnaryRepeatParams &p) {
  static_assert(kAxpyPair<T, U>, "Axpy: Atlas A2 supports half -> half, float -> float and half -> float");
  const char *call = "Axpy";
  const Strided<U> x = Operand(call, src, l, p.srcBlkStride, p.srcRepStride, false);
  Operand(call, dst, l, p.dstBlkStride, p.dstRepStride, false);
  const Strided<T> d = Operand(call, dst, l, p.dstBlkStride, p.dstRepStride, true);
  Disjoint(call, d.base, d.end * sizeof(T), x.base, x.end * sizeof(U));
  const float s = static_cast<float>(scalar);
  ForLanes(l, [&](uint32_t r, uint32_t e) { d.At(r, e) = AxpyOf(x.At(r, e), s, d.At(r, e)); });
}

}  // namespace twin_detail

template <typename T, typename U>
inline void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalarValue, const int32_t &count) {
  using namespace twin_detail;
  static_assert(kAxpyPair<T, U>, "Axpy: Atlas A2 supports half -> half, float -> float and half -> float");
  VecCount("Axpy", count);
  const U *x = VecIn("Axpy", src, count);
  VecIn("Axpy", dst, count);
  T *d = VecOut("Axpy", dst, count);
  Disjoint("Axpy", d, uint64_t(count) * sizeof(T), x, uint64_t(count) * sizeof(U));
  const float s = static_cast<float>(scalarValue);
  for (int32_t i = 0; i < count; ++i) d[i] = AxpyOf(x[i], s, d[i]);
}

// FusedMulAdd (count form): dst = src0 * dst + src1 for half or float, the product and the sum
// taken in float as Axpy's are.
template <typename T>
inline void FusedMulAdd(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                        const int32_t &count) {
  using namespace twin_detail;
  static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "FusedMulAdd: Atlas A2 supports half and float");
  VecCount("FusedMulAdd", count);
  const T *a = VecIn("FusedMulAdd", src0, count), *b = VecIn("FusedMulAdd", src1, count);
  VecIn("FusedMulAdd", dst, count);
  T *d = VecOut("FusedMulAdd", dst, count);
  Disjoint("FusedMulAdd", d, uint64_t(count) * sizeof(T), a, uint64_t(count) * sizeof(T));
  Disjoint("FusedMulAdd", d, uint64_t(count) * sizeof(T), b, uint64_t(count) * sizeof(T));
  for (int32_t i = 0; i < count; ++i)
    d[i] = static_cast<T>(static_cast<float>(a[i]) * static_cast<float>(d[i]) + static_cast<float>(b[i]));
}

// MulAddDst (count form): dst = src0 * src1 + dst, for Axpy's type pairs, in float as Axpy.
template <typename T, typename U>
inline void MulAddDst(const LocalTensor<T> &dst, const LocalTensor<U> &src0, const LocalTensor<U> &src1,
                      const int32_t &count) {
  using namespace twin_detail;
  static_assert(kAxpyPair<T, U>, "MulAddDst: Atlas A2 supports half -> half, float -> float and half -> float");
  VecCount("MulAddDst", count);
  const U *a = VecIn("MulAddDst", src0, count), *b = VecIn("MulAddDst", src1, count);
  VecIn("MulAddDst", dst, count);
  T *d = VecOut("MulAddDst", dst, count);
  Disjoint("MulAddDst", d, uint64_t(count) * sizeof(T), a, uint64_t(count) * sizeof(U));
  Disjoint("MulAddDst", d, uint64_t(count) * sizeof(T), b, uint64_t(count) * sizeof(U));
  for (int32_t i = 0; i < count; ++i)
    d[i] = static_cast<T>(static_cast<float>(a[i]) * static_cast<float>(b[i]) + static_cast<float>(d[i]));
}

template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalarValue, const uint64_t mask[],
                 const uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  twin_detail::Axpy0(dst, src, scalarValue, twin_detail::MaskOf<T, isSetMask>("Axpy", mask, repeatTime), repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalarValue, uint64_t mask,
                 const uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  twin_detail::Axpy0(dst, src, scalarValue, twin_detail::MaskOf<T, isSetMask>("Axpy", mask, repeatTime), repeatParams);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_COMPOUND_H_
