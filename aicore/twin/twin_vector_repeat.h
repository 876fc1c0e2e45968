// The level-0 forms of the vector ops of twin_vector.h: mask (bitwise uint64_t[2] or contiguous
// uint64_t), repeatTime and RepeatParams, with the isSetMask template parameter (twin_mask.h has
// the mask and stride rules). Half arithmetic is done in float and rounded per op, as in
// twin_vector.h.
#ifndef MS_OPS_TWIN_VECTOR_REPEAT_H_
#define MS_OPS_TWIN_VECTOR_REPEAT_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "twin_mask.h"
#include "twin_vector.h"

namespace AscendC {
namespace twin_detail {

template <typename T, class F>
inline void Binary0(const char *call, const LocalTensor<T> &dst, const LocalTensor<T> &a, const LocalTensor<T> &b,
                    const Lanes &l, const BinaryRepeatParams &p, F f) {
  const Strided<T> x = Operand(call, a, l, p.src0BlkStride, p.src0RepStride, false);
  const Strided<T> y = Operand(call, b, l, p.src1BlkStride, p.src1RepStride, false);
  const Strided<T> d = Operand(call, dst, l, p.dstBlkStride, p.dstRepStride, true);
  Disjoint(call, d.base, d.end * sizeof(T), x.base, x.end * sizeof(T));
  Disjoint(call, d.base, d.end * sizeof(T), y.base, y.end * sizeof(T));
  constexpr uint32_t per = Strided<T>::kPerBlock;
  if constexpr (std::is_same_v<T, float>) {
    // Leading whole blocks, the destination's adjacent and each source's adjacent or one block
    // read throughout (stride 0): the same 8-wide steps in the same order as below, without the
    // per-block walk.
    const uint32_t blocks = LeadingBlocks32(l);
    if (blocks != 0 && d.blk == 1 && x.blk <= 1 && y.blk <= 1) {
      for (uint32_t r = 0; r < l.repeats; ++r) {
        float *o = d.base + r * d.rep * per;
        const float *u = x.base + r * x.rep * per, *v = y.base + r * y.rep * per;
        for (uint32_t b = 0; b < blocks; ++b) {
          F8 a, c;
          std::memcpy(&a, u + b * x.blk * per, sizeof(a));
          std::memcpy(&c, v + b * y.blk * per, sizeof(c));
          const F8 e = f(a, c);
          std::memcpy(o + b * per, &e, sizeof(e));
        }
      }
      return;
    }
  }
  ForBlocks<T>(l, [&](uint32_t r, uint32_t e0, uint32_t n) {
    T *o = &d.At(r, e0);
    const T *u = &x.At(r, e0), *v = &y.At(r, e0);
    if constexpr (std::is_same_v<T, float>) {
      // A whole float block as one 8-wide vector (both loaded before the store: o may be u or v).
      if (n == per) {
        F8 a, b;
        std::memcpy(&a, u, sizeof(a));
        std::memcpy(&b, v, sizeof(b));
        const F8 c = f(a, b);
        std::memcpy(o, &c, sizeof(c));
        return;
      }
    }
    InBlock<per>(n, [&](uint32_t k) {
      o[k] = static_cast<T>(f(static_cast<Calc<T>>(u[k]), static_cast<Calc<T>>(v[k])));
    });
  });
}

template <typename T, class F>
inline void Unary0(const char *call, const LocalTensor<T> &dst, const LocalTensor<T> &a, const Lanes &l,
                   const UnaryRepeatParams &p, F f) {
  const Strided<T> x = Operand(call, a, l, p.srcBlkStride, p.srcRepStride, false);
  const Strided<T> d = Operand(call, dst, l, p.dstBlkStride, p.dstRepStride, true);
  Disjoint(call, d.base, d.end * sizeof(T), x.base, x.end * sizeof(T));
  constexpr uint32_t per = Strided<T>::kPerBlock;
  ForBlocks<T>(l, [&](uint32_t r, uint32_t e0, uint32_t n) {
    T *o = &d.At(r, e0);
    const T *u = &x.At(r, e0);
    InBlock<per>(n, [&](uint32_t k) { o[k] = static_cast<T>(f(static_cast<Calc<T>>(u[k]))); });
  });
}

}  // namespace twin_detail

#define MS_OPS_TWIN_BINARY0(Name, expr)                                                                          \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,           \
                   const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {    \
    twin_detail::Binary0(#Name, dst, src0, src1, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime),     \
                         repeatParams, [](auto x, auto y) { return expr; });                                     \
  }                                                                                                              \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,           \
                   uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {            \
    twin_detail::Binary0(#Name, dst, src0, src1, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime),     \
                         repeatParams, [](auto x, auto y) { return expr; });                                     \
  }
MS_OPS_TWIN_BINARY0(Add, x + y)
MS_OPS_TWIN_BINARY0(Sub, x - y)
MS_OPS_TWIN_BINARY0(Mul, x * y)
MS_OPS_TWIN_BINARY0(Div, x / y)
MS_OPS_TWIN_BINARY0(Max, x > y ? x : y)
MS_OPS_TWIN_BINARY0(Min, x < y ? x : y)
#undef MS_OPS_TWIN_BINARY0

#define MS_OPS_TWIN_UNARY0(Name, expr)                                                                           \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],                  \
                   const uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {                            \
    twin_detail::Unary0(#Name, dst, src, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime), repeatParams, \
                        [](auto x) { return expr; });                                                            \
  }                                                                                                              \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask, const uint8_t repeatTime, \
                   const UnaryRepeatParams &repeatParams) {                                                      \
    twin_detail::Unary0(#Name, dst, src, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime), repeatParams, \
                        [](auto x) { return expr; });                                                            \
  }
MS_OPS_TWIN_UNARY0(Exp, std::exp(x))
MS_OPS_TWIN_UNARY0(Ln, std::log(x))
MS_OPS_TWIN_UNARY0(Abs, std::abs(x))
MS_OPS_TWIN_UNARY0(Sqrt, std::sqrt(x))
MS_OPS_TWIN_UNARY0(Relu, x > 0 ? x : decltype(x)(0))
MS_OPS_TWIN_UNARY0(Reciprocal, decltype(x)(1) / x)
MS_OPS_TWIN_UNARY0(Rsqrt, decltype(x)(1) / std::sqrt(x))
#undef MS_OPS_TWIN_UNARY0

#define MS_OPS_TWIN_SCALAR0(Name, expr)                                                                          \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,                  \
                   const uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {     \
    const twin_detail::Calc<T> y = static_cast<twin_detail::Calc<T>>(scalarValue);                               \
    twin_detail::Unary0(#Name, dst, src, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime), repeatParams, \
                        [y](auto x) { return expr; });                                                           \
  }                                                                                                              \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask,    \
                   const uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {                            \
    const twin_detail::Calc<T> y = static_cast<twin_detail::Calc<T>>(scalarValue);                               \
    twin_detail::Unary0(#Name, dst, src, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime), repeatParams, \
                        [y](auto x) { return expr; });                                                           \
  }
MS_OPS_TWIN_SCALAR0(Adds, x + y)
MS_OPS_TWIN_SCALAR0(Muls, x * y)
MS_OPS_TWIN_SCALAR0(Maxs, x > y ? x : y)
MS_OPS_TWIN_SCALAR0(Mins, x < y ? x : y)
MS_OPS_TWIN_SCALAR0(LeakyRelu, x >= 0 ? x : x * y)
#undef MS_OPS_TWIN_SCALAR0

namespace twin_detail {

template <typename T>
inline void Duplicate0(const LocalTensor<T> &dst, T value, const Lanes &l, uint16_t blk, uint8_t rep) {
  const Strided<T> d = Operand("Duplicate", dst, l, blk, rep, true);
  constexpr uint32_t per = Strided<T>::kPerBlock;
  ForBlocks<T>(l, [&](uint32_t r, uint32_t e0, uint32_t n) {
    T *o = &d.At(r, e0);
    InBlock<per>(n, [&](uint32_t k) { o[k] = value; });
  });
}

}  // namespace twin_detail

// Strides in data blocks: dstBlockStride within a repeat, dstRepeatStride between repeats.
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, const uint64_t mask[], const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
  twin_detail::Duplicate0(dst, scalarValue, twin_detail::MaskOf<T, isSetMask>("Duplicate", mask, repeatTime),
                          dstBlockStride, dstRepeatStride);
}
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
  twin_detail::Duplicate0(dst, scalarValue, twin_detail::MaskOf<T, isSetMask>("Duplicate", mask, repeatTime),
                          dstBlockStride, dstRepeatStride);
}

// Copy between UB tensors on the vector unit: dstStride / srcStride are the block strides within a
// repeat, dstRepeatSize / srcRepeatSize the repeat strides, all in data blocks.
struct CopyRepeatParams {
  CopyRepeatParams() = default;
  CopyRepeatParams(uint16_t dstStrideIn, uint16_t srcStrideIn, uint16_t dstRepeatSizeIn, uint16_t srcRepeatSizeIn)
      : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn), srcRepeatSize(srcRepeatSizeIn) {}
  uint16_t dstStride = 0;
  uint16_t srcStride = 0;
  uint16_t dstRepeatSize = DEFAULT_REPEAT_STRIDE;
  uint16_t srcRepeatSize = DEFAULT_REPEAT_STRIDE;
};

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[], const uint8_t repeatTime,
                 const CopyRepeatParams &repeatParams) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Copy: 16- or 32-bit elements");
  twin_detail::Unary0("Copy", dst, src, twin_detail::MaskOf<T, isSetMask>("Copy", mask, repeatTime),
                      UnaryRepeatParams(repeatParams.dstStride, repeatParams.srcStride, repeatParams.dstRepeatSize,
                                        repeatParams.srcRepeatSize),
                      [](auto x) { return x; });
}
template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask, const uint8_t repeatTime,
                 const CopyRepeatParams &repeatParams) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Copy: 16- or 32-bit elements");
  twin_detail::Unary0("Copy", dst, src, twin_detail::MaskOf<T, isSetMask>("Copy", mask, repeatTime),
                      UnaryRepeatParams(repeatParams.dstStride, repeatParams.srcStride, repeatParams.dstRepeatSize,
                                        repeatParams.srcRepeatSize),
                      [](auto x) { return x; });
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_VECTOR_REPEAT_H_
