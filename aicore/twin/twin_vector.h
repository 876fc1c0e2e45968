// Vector compute on UB tensors, "first count elements" forms. Every operand must start 32-byte
// aligned with count elements inside its buffer. The loops are plain element loops that g++ -O3
// vectorizes (Exp and Sqrt: explicit 8-wide code, see twin_math.h);
// half arithmetic is done in float and rounded back per op, as the NPU's fp16 ALU rounds per op.
#ifndef MS_OPS_TWIN_VECTOR_H_
#define MS_OPS_TWIN_VECTOR_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "twin_copy.h"
#include "twin_math.h"

namespace AscendC {
namespace twin_detail {

template <typename T>
using Calc = std::conditional_t<std::is_same_v<T, half>, float, T>;

template <typename T>
inline T *VecArg(const char *call, const LocalTensor<T> &t, int64_t count) {
  UbAligned(call, t.TwinData());
  if (__builtin_expect(count > t.TwinCap(), 0)) UbOutOfRange(call, count, t.TwinCap());
  return t.TwinData();
}

// Vector operands as accesses of the V pipe: sources read, the destination written.
template <typename T>
inline const T *VecIn(const char *call, const LocalTensor<T> &t, int64_t count) {
  const T *p = VecArg(call, t, count);
  UbRead(kPipeV, call, p, uint64_t(count) * sizeof(T));
  ::ms_ops::twin::ProfileVecSource(uint64_t(count) * sizeof(T));
  return p;
}

template <typename T>
inline T *VecOut(const char *call, const LocalTensor<T> &t, int64_t count) {
  T *p = VecArg(call, t, count);
  UbWrite(kPipeV, call, p, uint64_t(count) * sizeof(T));
  ::ms_ops::twin::ProfileVec(uint64_t(count) * sizeof(T));
  return p;
}

[[noreturn]] __attribute__((noinline, cold)) inline void PartialOverlap(const char *call, const void *d, uint64_t dBytes,
                                                                        const void *s, uint64_t sBytes) {
  Fail(call, "the destination (UB offset " + Str(UbOffset(d)) + ", " + Str(dBytes) + " bytes) partially overlaps a " +
                 "source (UB offset " + Str(UbOffset(s)) + ", " + Str(sBytes) + " bytes): operands must start at " +
                 "the same address or not overlap");
}

// The destination of a vector op and a source coincide or are disjoint: the hardware reads and
// writes in 256-byte repeats, so a shifted overlap reads elements it has already overwritten.
inline void Disjoint(const char *call, const void *d, uint64_t dBytes, const void *s, uint64_t sBytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(d), b = reinterpret_cast<uintptr_t>(s);
  if (__builtin_expect(a != b && a < b + sBytes && b < a + dBytes, 0)) PartialOverlap(call, d, dBytes, s, sBytes);
}

[[noreturn]] __attribute__((noinline, cold)) inline void LaterRepeatReads(const char *call, const void *d,
                                                                          uint64_t dBytes, const void *s,
                                                                          uint64_t sBytes, uint64_t repeat) {
  Fail(call, "the destination (UB offset " + Str(UbOffset(d)) + ", " + Str(dBytes) + " bytes) overlaps a source (UB " +
                 "offset " + Str(UbOffset(s)) + ", " + Str(sBytes) + " bytes) so that repeat " + Str(repeat) +
                 " writes bytes a later repeat reads: the NPU reads them already overwritten");
}

// A count-form op of `count` elements (destination elements dSize bytes, source elements sSize)
// whose destination and a source may overlap. The NPU runs it in repeats of 256 bytes of its wider
// operand, each reading its sources before writing its results (CANN's vector instruction rules):
// one repeat must not partially overlap, and over several, no repeat may write bytes that a later
// repeat reads. So an op may work in place, write behind its source, or widen a narrow source kept
// in the back of its destination, as shipped kernels do. Returns whether they overlap.
inline bool RepeatOrdered(const char *call, const void *d, uint64_t dSize, const void *s, uint64_t sSize,
                          uint64_t count) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(d), b = reinterpret_cast<uintptr_t>(s);
  const uint64_t dBytes = count * dSize, sBytes = count * sSize;
  if (__builtin_expect(a >= b + sBytes || b >= a + dBytes, 1)) return false;
  const uint64_t per = 256 / (dSize > sSize ? dSize : sSize), repeats = (count + per - 1) / per;
  if (repeats <= 1) {
    if (a != b || dBytes != sBytes) PartialOverlap(call, d, dBytes, s, sBytes);
    return true;
  }
  for (uint64_t i = 0; i + 1 < repeats; ++i) {
    const uintptr_t wLo = a + i * per * dSize, wHi = a + (i + 1) * per * dSize;
    const uintptr_t rLo = b + (i + 1) * per * sSize, rHi = b + sBytes;
    if (wLo < rHi && rLo < wHi) LaterRepeatReads(call, d, dBytes, s, sBytes, i);
  }
  return true;
}

[[noreturn]] __attribute__((noinline, cold)) inline void NegativeCount(const char *call, int64_t count) {
  Fail(call, "negative count " + std::to_string(count));
}

inline void VecCount(const char *call, int64_t count) {
  if (__builtin_expect(count < 0, 0)) NegativeCount(call, count);
}

template <typename T, class F>
inline void Binary(const char *call, const LocalTensor<T> &dst, const LocalTensor<T> &a, const LocalTensor<T> &b,
                   int32_t count, F f) {
  VecCount(call, count);
  const T *x = VecIn(call, a, count), *y = VecIn(call, b, count);
  T *d = VecOut(call, dst, count);
  // An allowed overlap writes only what the loop has read: in place or behind the source.
  RepeatOrdered(call, d, sizeof(T), x, sizeof(T), count);
  RepeatOrdered(call, d, sizeof(T), y, sizeof(T), count);
  for (int32_t i = 0; i < count; ++i) d[i] = static_cast<T>(f(static_cast<Calc<T>>(x[i]), static_cast<Calc<T>>(y[i])));
}

template <typename T, class F>
inline void Unary(const char *call, const LocalTensor<T> &dst, const LocalTensor<T> &a, int32_t count, F f) {
  VecCount(call, count);
  const T *x = VecIn(call, a, count);
  T *d = VecOut(call, dst, count);
  RepeatOrdered(call, d, sizeof(T), x, sizeof(T), count);
  for (int32_t i = 0; i < count; ++i) d[i] = static_cast<T>(f(static_cast<Calc<T>>(x[i])));
}

}  // namespace twin_detail

#define MS_OPS_TWIN_BINARY(Name, expr)                                                                           \
  template <typename T>                                                                                          \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,           \
                   const int32_t &count) {                                                                       \
    twin_detail::Binary(#Name, dst, src0, src1, count, [](auto x, auto y) { return expr; });                     \
  }
MS_OPS_TWIN_BINARY(Add, x + y)
MS_OPS_TWIN_BINARY(Sub, x - y)
MS_OPS_TWIN_BINARY(Mul, x * y)
MS_OPS_TWIN_BINARY(Div, x / y)
MS_OPS_TWIN_BINARY(Max, x > y ? x : y)
MS_OPS_TWIN_BINARY(Min, x < y ? x : y)
#undef MS_OPS_TWIN_BINARY

#define MS_OPS_TWIN_SCALAR(Name, expr)                                                                           \
  template <typename T>                                                                                          \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,                  \
                   const int32_t &count) {                                                                       \
    const twin_detail::Calc<T> y = static_cast<twin_detail::Calc<T>>(scalarValue);                               \
    twin_detail::Unary(#Name, dst, src, count, [y](auto x) { return expr; });                                    \
  }
MS_OPS_TWIN_SCALAR(Adds, x + y)
MS_OPS_TWIN_SCALAR(Muls, x * y)
MS_OPS_TWIN_SCALAR(Maxs, x > y ? x : y)
MS_OPS_TWIN_SCALAR(Mins, x < y ? x : y)
MS_OPS_TWIN_SCALAR(LeakyRelu, x >= 0 ? x : x * y)
#undef MS_OPS_TWIN_SCALAR

#define MS_OPS_TWIN_UNARY(Name, expr)                                                                            \
  template <typename T>                                                                                          \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count) {                 \
    twin_detail::Unary(#Name, dst, src, count, [](auto x) { return expr; });                                     \
  }
MS_OPS_TWIN_UNARY(Ln, std::log(x))
MS_OPS_TWIN_UNARY(Abs, std::abs(x))
MS_OPS_TWIN_UNARY(Relu, x > 0 ? x : decltype(x)(0))
MS_OPS_TWIN_UNARY(Reciprocal, decltype(x)(1) / x)
MS_OPS_TWIN_UNARY(Rsqrt, decltype(x)(1) / std::sqrt(x))
#undef MS_OPS_TWIN_UNARY

// Exp and Sqrt on float go through the explicit vector forms of twin_math.h (map: their loop over
// the floats, f8: one 8-wide vector, for the other types' elements one at a time).
#define MS_OPS_TWIN_UNARY8(Name, map, f8)                                                                        \
  template <typename T>                                                                                          \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count) {                 \
    if constexpr (std::is_same_v<T, float>) {                                                                    \
      twin_detail::VecCount(#Name, count);                                                                       \
      const float *s = twin_detail::VecIn(#Name, src, count);                                                    \
      float *d = twin_detail::VecOut(#Name, dst, count);                                                         \
      twin_detail::RepeatOrdered(#Name, d, 4, s, 4, count);                                                      \
      map;                                                                                                       \
    } else {                                                                                                     \
      twin_detail::Unary(#Name, dst, src, count, [](auto x) { return f8(twin_detail::Splat(x))[0]; });           \
    }                                                                                                            \
  }
MS_OPS_TWIN_UNARY8(Exp, twin_detail::MapExp(d, s, count), twin_detail::Exp8)
MS_OPS_TWIN_UNARY8(Sqrt, twin_detail::Map8(d, s, count, twin_detail::Sqrt8), twin_detail::Sqrt8)
#undef MS_OPS_TWIN_UNARY8

template <typename T>
inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, const int32_t &count) {
  twin_detail::VecCount("Duplicate", count);
  T *d = twin_detail::VecOut("Duplicate", dst, count);
  for (int32_t i = 0; i < count; ++i) d[i] = scalarValue;
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_VECTOR_H_
