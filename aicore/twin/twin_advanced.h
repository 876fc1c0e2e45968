// The advanced API's elementwise math and reductions on UB tensors (CANN's adv_api math/,
// activation/ and reduce/ families): Log, Log2, Log10, the Taylor-expanded Exp, Sigmoid, Tanh, the
// trigonometric and hyperbolic functions and their inverses, Erf/Erfc, Floor/Ceil/Trunc/Frac,
// Sign, Power and Sum;
// and from its utils/ family InitGlobalMemory.
// The shared scratch buffer the NPU needs for intermediates is checked for alignment but not used:
// the twin computes each element in float directly. Forms without calCount take src's GetSize.
#ifndef MS_OPS_TWIN_ADVANCED_H_
#define MS_OPS_TWIN_ADVANCED_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "twin_select.h"
#include "twin_vector.h"

namespace AscendC {

#define MS_OPS_TWIN_ADV_UNARY(Name, expr)                                                                        \
  template <typename T, bool isReuseSource = false>                                                              \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint8_t> &sharedTmpBuffer, \
                   const uint32_t calCount) {                                                                    \
    twin_detail::UbAligned(#Name, sharedTmpBuffer.TwinData());                                                   \
    twin_detail::Unary(#Name, dst, src, static_cast<int32_t>(calCount), [](auto x) { return expr; });             \
  }                                                                                                              \
  template <typename T, bool isReuseSource = false>                                                              \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t calCount) {              \
    twin_detail::Unary(#Name, dst, src, static_cast<int32_t>(calCount), [](auto x) { return expr; });             \
  }                                                                                                              \
  template <typename T, bool isReuseSource = false>                                                              \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src) {                                       \
    Name<T, isReuseSource>(dst, src, src.GetSize());                                                             \
  }
MS_OPS_TWIN_ADV_UNARY(Log, std::log(x))
MS_OPS_TWIN_ADV_UNARY(Log2, std::log2(x))
MS_OPS_TWIN_ADV_UNARY(Log10, std::log10(x))
MS_OPS_TWIN_ADV_UNARY(Sigmoid, decltype(x)(1) / (decltype(x)(1) + std::exp(-x)))
MS_OPS_TWIN_ADV_UNARY(Tanh, std::tanh(x))
MS_OPS_TWIN_ADV_UNARY(Sin, std::sin(x))
MS_OPS_TWIN_ADV_UNARY(Cos, std::cos(x))
MS_OPS_TWIN_ADV_UNARY(Tan, std::tan(x))
MS_OPS_TWIN_ADV_UNARY(Asin, std::asin(x))
MS_OPS_TWIN_ADV_UNARY(Acos, std::acos(x))
MS_OPS_TWIN_ADV_UNARY(Atan, std::atan(x))
MS_OPS_TWIN_ADV_UNARY(Sinh, std::sinh(x))
MS_OPS_TWIN_ADV_UNARY(Cosh, std::cosh(x))
MS_OPS_TWIN_ADV_UNARY(Asinh, std::asinh(x))
MS_OPS_TWIN_ADV_UNARY(Acosh, std::acosh(x))
MS_OPS_TWIN_ADV_UNARY(Atanh, std::atanh(x))
MS_OPS_TWIN_ADV_UNARY(Erf, std::erf(x))
MS_OPS_TWIN_ADV_UNARY(Erfc, std::erfc(x))
MS_OPS_TWIN_ADV_UNARY(Floor, std::floor(x))
MS_OPS_TWIN_ADV_UNARY(Ceil, std::ceil(x))
MS_OPS_TWIN_ADV_UNARY(Trunc, std::trunc(x))
MS_OPS_TWIN_ADV_UNARY(Frac, x - std::trunc(x))
// -1 for x < 0, 1 for x > 0, else 0.
MS_OPS_TWIN_ADV_UNARY(Sign, decltype(x)((x > 0) - (x < 0)))
#undef MS_OPS_TWIN_ADV_UNARY

// Power: dst = base ^ exponent elementwise, each operand a tensor or a scalar (CANN's three forms),
// over calCount elements (src0's size, or src1's when src0 is the scalar, without it). Integer
// types are raised exactly in double and converted back.
namespace twin_detail {

template <typename T>
inline T PowerOf(T base, T exponent) {
  return static_cast<T>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
}

template <typename T, class A, class B>
inline void PowerRun(const LocalTensor<T> &dst, const A &base, const B &exponent, uint32_t calCount) {
  const char *call = "Power";
  const int32_t n = static_cast<int32_t>(calCount);
  VecCount(call, n);
  T *d = VecOut(call, dst, n);
  auto operand = [&](const auto &x) {
    if constexpr (std::is_same_v<std::decay_t<decltype(x)>, T>) {
      return [v = x](int32_t) { return v; };
    } else {
      const T *p = VecIn(call, x, n);
      Disjoint(call, d, uint64_t(n) * sizeof(T), p, uint64_t(n) * sizeof(T));
      return [p](int32_t i) { return p[i]; };
    }
  };
  const auto a = operand(base);
  const auto b = operand(exponent);
  for (int32_t i = 0; i < n; ++i) d[i] = PowerOf<T>(a(i), b(i));
}

}  // namespace twin_detail

#define MS_OPS_TWIN_POWER(A, B, sizeOf)                                                                            \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void Power(const LocalTensor<T> &dst, A src0, B src1, const LocalTensor<uint8_t> &sharedTmpBuffer,        \
                    uint32_t calCount) {                                                                           \
    twin_detail::UbAligned("Power", sharedTmpBuffer.TwinData());                                                   \
    twin_detail::PowerRun(dst, src0, src1, calCount);                                                              \
  }                                                                                                                \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void Power(const LocalTensor<T> &dst, A src0, B src1, uint32_t calCount) {                                \
    twin_detail::PowerRun(dst, src0, src1, calCount);                                                              \
  }                                                                                                                \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void Power(const LocalTensor<T> &dst, A src0, B src1) {                                                   \
    twin_detail::PowerRun(dst, src0, src1, sizeOf.GetSize());                                                      \
  }
MS_OPS_TWIN_POWER(const LocalTensor<T> &, const LocalTensor<T> &, src0)
MS_OPS_TWIN_POWER(const LocalTensor<T> &, const T &, src0)
MS_OPS_TWIN_POWER(const T &, const LocalTensor<T> &, src1)
#undef MS_OPS_TWIN_POWER

// The advanced Exp (taylorExpandLevel > 0: the NPU refines its result by that many Taylor terms;
// the twin's exp is already accurate to about 1 ulp).
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
inline void Exp(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint8_t> &sharedTmpBuffer,
                const uint32_t calCount) {
  twin_detail::UbAligned("Exp", sharedTmpBuffer.TwinData());
  Exp(dst, src, static_cast<int32_t>(calCount));
}
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
inline void Exp(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t calCount) {
  Exp(dst, src, static_cast<int32_t>(calCount));
}

// outter rows of inner elements (inner * sizeof(T) a multiple of 32 bytes); row i's first n
// elements summed into dst[i].
struct SumParams {
  uint32_t outter = 1;
  uint32_t inner;
  uint32_t n;
};

namespace twin_detail {

template <typename T>
inline void SumRows(const LocalTensor<T> &dst, const LocalTensor<T> &src, const SumParams &p) {
  const char *call = "Sum";
  if ((uint64_t(p.inner) * sizeof(T)) % ONE_BLK_SIZE != 0)
    Fail(call, "inner " + Str(p.inner) + " x " + Str(sizeof(T)) + " bytes is not a multiple of 32 bytes");
  if (p.n == 0 || p.n > p.inner) Fail(call, "n " + Str(p.n) + " is outside [1, inner = " + Str(p.inner) + "]");
  const T *x = VecIn(call, src, int64_t(p.outter) * p.inner);
  T *d = VecOut(call, dst, p.outter);
  for (uint32_t i = 0; i < p.outter; ++i) d[i] = static_cast<T>(SumOf(x + uint64_t(i) * p.inner, p.n));
}

}  // namespace twin_detail

template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint8_t> &sharedTmpBuffer,
                const SumParams &sumParams) {
  twin_detail::UbAligned("Sum", sharedTmpBuffer.TwinData());
  twin_detail::SumRows(dst, src, sumParams);
}
template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const SumParams &sumParams) {
  twin_detail::SumRows(dst, src, sumParams);
}

// size elements of GM set to value, as the NPU does it: the AIVs fill a UB stack buffer with the
// vector unit and store it with MTE3 (honouring a store atomic that is set, as DataCopyPad does);
// on an AIC it does nothing. Ordered before later MTE3 stores (CANN ends it with
// PipeBarrier<PIPE_MTE3>); other blocks see it after a SyncAll.
template <typename T>
inline void InitGlobalMemory(GlobalTensor<T> &gmWorkspaceAddr, const uint64_t size, const T value) {
  if ASCEND_IS_AIC {
    return;
  }
  constexpr uint64_t kChunk = 4096;
  twin_detail::GmSpan("InitGlobalMemory", gmWorkspaceAddr, size * sizeof(T));
  const std::vector<T> fill(std::min(size, kChunk), value);
  for (uint64_t done = 0; done < size; done += kChunk) {
    const uint64_t n = std::min(kChunk, size - done);
    twin_detail::StoreRows("InitGlobalMemory", gmWorkspaceAddr[done], reinterpret_cast<const uint8_t *>(fill.data()),
                           1, n * sizeof(T), n * sizeof(T), n * sizeof(T));
  }
}

// CANN's older name of InitGlobalMemory, kept there (deprecated) for the kernels that call it.
template <typename T>
inline void InitOutput(GlobalTensor<T> gmWorkspaceAddr, uint32_t size, T value = 0) {
  InitGlobalMemory(gmWorkspaceAddr, uint64_t(size), value);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_ADVANCED_H_
