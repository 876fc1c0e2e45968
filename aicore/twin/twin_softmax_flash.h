// SoftmaxFlash (the first flash form, which CANN 8.x keeps though deprecated in favour of
// SoftmaxFlashV2) and LogSoftMax, on the ND rows of twin_softmax.h, with CANN's signatures.
//   SoftmaxFlash, isUpdate false: SoftMax (dst normalised, max and sum written, expMax untouched);
//     isUpdate true, merging the statistics inMax / inSum of the row's earlier pieces:
//     max = max(inMax, row max), sum = exp(inMax - max) * inSum + sum(exp(x - max)),
//     dst = exp(x - max) / sum, expMax = exp(inMax - max) * inSum / sum (the factor that rescales
//     the earlier pieces' output to the new sum). Unlike SoftmaxFlashV2, dst is divided by the sum.
//   LogSoftMax: max and sum as SoftMax, dst = log10(exp(x - max) / sum): base 10, as CANN
//     documents and computes it.
#ifndef MS_OPS_TWIN_SOFTMAX_FLASH_H_
#define MS_OPS_TWIN_SOFTMAX_FLASH_H_

#include <cstdint>

#include "twin_softmax.h"

namespace AscendC {

#define MS_OPS_TWIN_FLASH1_TEMPLATE template <typename T, bool isReuseSource = false, bool isBasicBlock = false>

MS_OPS_TWIN_FLASH1_TEMPLATE
inline void SoftmaxFlash(const LocalTensor<T> &dstTensor, const LocalTensor<T> &sumTensor,
                         const LocalTensor<T> &maxTensor, const LocalTensor<T> &srcTensor,
                         const LocalTensor<T> &expMaxTensor, const LocalTensor<T> &inSumTensor,
                         const LocalTensor<T> &inMaxTensor, const SoftMaxTiling &tiling, bool isUpdate = false,
                         const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::SoftmaxRows<T, T>("SoftmaxFlash", isUpdate ? 4 : 0, dstTensor, &sumTensor, &maxTensor, srcTensor,
                                 &expMaxTensor, &inSumTensor, &inMaxTensor, tiling, softmaxShapeInfo);
}
MS_OPS_TWIN_FLASH1_TEMPLATE
inline void SoftmaxFlash(const LocalTensor<half> &dstTensor, const LocalTensor<float> &sumTensor,
                         const LocalTensor<float> &maxTensor, const LocalTensor<half> &srcTensor,
                         const LocalTensor<half> &expMaxTensor, const LocalTensor<float> &inSumTensor,
                         const LocalTensor<float> &inMaxTensor, const SoftMaxTiling &tiling, bool isUpdate = false,
                         const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::SoftmaxRows<half, float>("SoftmaxFlash", isUpdate ? 4 : 0, dstTensor, &sumTensor, &maxTensor, srcTensor,
                                        &expMaxTensor, &inSumTensor, &inMaxTensor, tiling, softmaxShapeInfo);
}
MS_OPS_TWIN_FLASH1_TEMPLATE
inline void SoftmaxFlash(const LocalTensor<T> &dstTensor, const LocalTensor<T> &sumTensor,
                         const LocalTensor<T> &maxTensor, const LocalTensor<T> &srcTensor,
                         const LocalTensor<T> &expMaxTensor, const LocalTensor<T> &inSumTensor,
                         const LocalTensor<T> &inMaxTensor, const LocalTensor<uint8_t> &sharedTmpBuffer,
                         const SoftMaxTiling &tiling, bool isUpdate = false,
                         const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::UbAligned("SoftmaxFlash", sharedTmpBuffer.TwinData());
  SoftmaxFlash<T, isReuseSource, isBasicBlock>(dstTensor, sumTensor, maxTensor, srcTensor, expMaxTensor, inSumTensor,
                                               inMaxTensor, tiling, isUpdate, softmaxShapeInfo);
}
MS_OPS_TWIN_FLASH1_TEMPLATE
inline void SoftmaxFlash(const LocalTensor<half> &dstTensor, const LocalTensor<float> &sumTensor,
                         const LocalTensor<float> &maxTensor, const LocalTensor<half> &srcTensor,
                         const LocalTensor<half> &expMaxTensor, const LocalTensor<float> &inSumTensor,
                         const LocalTensor<float> &inMaxTensor, const LocalTensor<uint8_t> &sharedTmpBuffer,
                         const SoftMaxTiling &tiling, bool isUpdate = false,
                         const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::UbAligned("SoftmaxFlash", sharedTmpBuffer.TwinData());
  SoftmaxFlash<T, isReuseSource, isBasicBlock>(dstTensor, sumTensor, maxTensor, srcTensor, expMaxTensor, inSumTensor,
                                               inMaxTensor, tiling, isUpdate, softmaxShapeInfo);
}

#undef MS_OPS_TWIN_FLASH1_TEMPLATE

template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void LogSoftMax(const LocalTensor<T> &dst, const LocalTensor<T> &sum, const LocalTensor<T> &max,
                       const LocalTensor<T> &src, const LocalTensor<uint8_t> &sharedTmpBuffer,
                       const LogSoftMaxTiling &tiling, const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::NdOnly<isDataFormatNZ>("LogSoftMax");
  twin_detail::UbAligned("LogSoftMax", sharedTmpBuffer.TwinData());
  twin_detail::SoftmaxRows<T, T>("LogSoftMax", 5, dst, &sum, &max, src, nullptr, nullptr, nullptr, tiling,
                                 softmaxShapeInfo);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_SOFTMAX_FLASH_H_
