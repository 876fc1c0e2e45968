// The advanced API's elementwise math and reductions on UB tensors (CANN's adv_api math/,
// activation/ and reduce/ families): Log, Log2, Log10, the Taylor-expanded Exp, Sigmoid and Sum;
// and from its utils/ family InitGlobalMemory.
// The shared scratch buffer the NPU needs for intermediates is checked for alignment but not used:
// the twin computes each element in float directly. Forms without calCount take src's GetSize.
#ifndef MS_OPS_TWIN_ADVANCED_H_
#define MS_OPS_TWIN_ADVANCED_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
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
#undef MS_OPS_TWIN_ADV_UNARY

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

}  // namespace AscendC

#endif  // MS_OPS_TWIN_ADVANCED_H_
