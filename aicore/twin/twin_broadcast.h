// Broadcast (CANN's adv_api pad/broadcast family; BroadCast is the older spelling of the same
// call): a 1-D or 2-D tensor repeated along the axis whose source extent is 1, into a dense
// row-major destination. The NPU builds it from Brcb, Copy and GatherMask in sharedTmpBuffer;
// the twin checks the scratch's alignment and writes the result directly.
#ifndef MS_OPS_TWIN_BROADCAST_H_
#define MS_OPS_TWIN_BROADCAST_H_

#include <cstdint>

#include "twin_vector.h"

namespace AscendC {
namespace twin_detail {

template <typename T, int32_t dim, int32_t axis>
inline void BroadcastRows(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t dstShape[dim],
                          const uint32_t srcShape[dim]) {
  static_assert(dim == 1 || dim == 2, "Broadcast: dim is 1 or 2");
  static_assert(axis == 0 || axis == 1, "Broadcast: axis is 0 or 1");
  static_assert(axis < dim, "Broadcast: axis must be a dimension of the tensor");
  const char *call = "Broadcast";
  const uint64_t rows = dim == 2 ? dstShape[0] : 1, cols = dstShape[dim - 1];
  for (int32_t i = 0; i < dim; ++i) {
    const bool ok = i == axis ? srcShape[i] == 1 : srcShape[i] == dstShape[i];
    if (!ok)
      Fail(call, "srcShape[" + Str(i) + "] = " + Str(srcShape[i]) + " does not broadcast to dstShape[" + Str(i) +
                     "] = " + Str(dstShape[i]) + " along axis " + Str(axis));
  }
  const uint64_t n = rows * cols, srcN = dim == 2 ? uint64_t(srcShape[0]) * srcShape[1] : 1;
  const T *s = VecIn(call, src, int64_t(srcN));
  T *d = VecOut(call, dst, int64_t(n));
  Disjoint(call, d, n * sizeof(T), s, srcN * sizeof(T));
  for (uint64_t i = 0; i < rows; ++i)
    for (uint64_t j = 0; j < cols; ++j) d[i * cols + j] = dim == 1 ? s[0] : axis == 1 ? s[i] : s[j];
}

}  // namespace twin_detail

template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void Broadcast(const LocalTensor<T> &dstLocal, const LocalTensor<T> &srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], LocalTensor<uint8_t> &sharedTmpBuffer) {
  twin_detail::UbAligned("Broadcast", sharedTmpBuffer.TwinData());
  twin_detail::BroadcastRows<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape);
}

template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void Broadcast(const LocalTensor<T> &dstLocal, const LocalTensor<T> &srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim]) {
  twin_detail::BroadcastRows<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape);
}

template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void BroadCast(const LocalTensor<T> &dstLocal, const LocalTensor<T> &srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], LocalTensor<uint8_t> &sharedTmpBuffer) {
  Broadcast<T, dim, axis, isReuseSource>(dstLocal, srcLocal, dstShape, srcShape, sharedTmpBuffer);
}

template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void BroadCast(const LocalTensor<T> &dstLocal, const LocalTensor<T> &srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim]) {
  Broadcast<T, dim, axis, isReuseSource>(dstLocal, srcLocal, dstShape, srcShape);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_BROADCAST_H_
