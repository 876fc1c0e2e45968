// CANN's compound vector family: Axpy, dst = src * scalar + dst, in the count form and the level-0
// mask/repeat forms, and the count forms of FusedMulAdd and MulAddDst. Atlas A2 pairs: half into
// half, float into float, half into float (an Axpy repeat then covers 64 lanes: 256 bytes of dst,
// 128 of src). Products and sums are taken in float and rounded once to dst's type.
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

namespace twin_detail {

// dst[i] = f(src0[i], src1[i], dst[i]) over the first count elements, taken in float and rounded
// once to T: the count forms of FusedMulAdd and MulAddDst.
template <typename T, typename U, class F>
inline void MulAddCount(const char *call, const LocalTensor<T> &dst, const LocalTensor<U> &src0,
                        const LocalTensor<U> &src1, int32_t count, F f) {
  static_assert(kAxpyPair<T, U>, "Atlas A2 supports half -> half, float -> float and half -> float");
  VecCount(call, count);
  const U *a = VecIn(call, src0, count), *b = VecIn(call, src1, count);
  VecIn(call, dst, count);
  T *d = VecOut(call, dst, count);
  Disjoint(call, d, uint64_t(count) * sizeof(T), a, uint64_t(count) * sizeof(U));
  Disjoint(call, d, uint64_t(count) * sizeof(T), b, uint64_t(count) * sizeof(U));
  for (int32_t i = 0; i < count; ++i)
    d[i] = static_cast<T>(f(static_cast<float>(a[i]), static_cast<float>(b[i]), static_cast<float>(d[i])));
}

}  // namespace twin_detail

// FusedMulAdd (count form, half or float): dst = src0 * dst + src1.
template <typename T>
inline void FusedMulAdd(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                        const int32_t &count) {
  twin_detail::MulAddCount("FusedMulAdd", dst, src0, src1, count, [](float x, float y, float d) { return x * d + y; });
}

// MulAddDst (count form, Axpy's type pairs): dst = src0 * src1 + dst.
template <typename T, typename U>
inline void MulAddDst(const LocalTensor<T> &dst, const LocalTensor<U> &src0, const LocalTensor<U> &src1,
                      const int32_t &count) {
  twin_detail::MulAddCount("MulAddDst", dst, src0, src1, count, [](float x, float y, float d) { return x * y + d; });
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
