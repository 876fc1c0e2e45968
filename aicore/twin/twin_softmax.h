// The advanced API's softmax family on ND [srcM, srcK] tensors (srcK elements a row, 32-byte
// aligned; the first oriSrcK of them, when given, are the row's data). Row statistics (max, sum)
// are stored one data block per row, the value repeated across the block, as CANN stores them.
//   SoftMax:         dst = exp(x - max) / sum, with max and sum written out when asked for;
//   SimpleSoftMax:   the same with max and sum given;
//   SoftmaxFlashV2:  dst = exp(x - max) (not divided); with isUpdate the running statistics of a
//                    row seen in earlier pieces are merged: max = max(inMax, row max),
//                    expMax = exp(inMax - max), sum = inSum * expMax + row sum.
// Shapes come from softmaxShapeInfo, or from the tiling where it is all zero. Exponentials are
// computed in float; the scratch buffer is checked for alignment but not needed by the twin.
// SoftmaxFlash and LogSoftMax, on the same rows, are in twin_softmax_flash.h.
#ifndef MS_OPS_TWIN_SOFTMAX_H_
#define MS_OPS_TWIN_SOFTMAX_H_

#include <cmath>
#include <cstdint>

#include "twin_vector.h"

namespace AscendC {

enum class SoftmaxMode { SOFTMAX_NORMAL = 0, SOFTMAX_OUTPUT_WITHOUT_BRC = 1 };

struct SoftmaxConfig {
  constexpr SoftmaxConfig(const bool isCheckTilingIn) : isCheckTiling(isCheckTilingIn) {}
  constexpr SoftmaxConfig(const bool isCheckTilingIn, const uint32_t oriSrcMIn, const uint32_t oriSrcKIn)
      : isCheckTiling(isCheckTilingIn), oriSrcM(oriSrcMIn), oriSrcK(oriSrcKIn) {}
  constexpr SoftmaxConfig(const bool isCheckTilingIn, const uint32_t oriSrcMIn, const uint32_t oriSrcKIn,
                          const SoftmaxMode modeIn)
      : isCheckTiling(isCheckTilingIn), oriSrcM(oriSrcMIn), oriSrcK(oriSrcKIn), mode(modeIn) {}
  bool isCheckTiling = true;
  uint32_t oriSrcM = 0;
  uint32_t oriSrcK = 0;
  SoftmaxMode mode = SoftmaxMode::SOFTMAX_NORMAL;
};
inline constexpr SoftmaxConfig SOFTMAX_DEFAULT_CFG = {true, 0, 0, SoftmaxMode::SOFTMAX_NORMAL};

struct SoftMaxShapeInfo {
  uint32_t srcM{0};
  uint32_t srcK{0};
  uint32_t oriSrcM{0};
  uint32_t oriSrcK{0};
};

// The kernel-side softmax tiling (host: SoftMaxTilingFunc); the twin reads srcM and srcK.
struct SoftMaxTiling {
  uint32_t srcM, srcK, srcSize, outMaxM, outMaxK, outMaxSize, splitM, splitK, splitSize, reduceM, reduceK, reduceSize,
      rangeM, tailM, tailSplitSize, tailReduceSize;
};

namespace twin_detail {

struct SoftmaxShape {
  uint32_t m, k, valid;
};

// Tiling: SoftMaxTiling or LogSoftMaxTiling (the same fields).
template <typename T, typename Tiling>
inline SoftmaxShape ShapeOf(const char *call, const Tiling &t, const SoftMaxShapeInfo &s) {
  const bool given = s.srcM != 0 || s.srcK != 0;
  SoftmaxShape r{given ? s.srcM : t.srcM, given ? s.srcK : t.srcK, 0};
  r.valid = given && s.oriSrcK != 0 ? s.oriSrcK : r.k;
  if (r.m == 0 || r.k == 0) Fail(call, "srcM and srcK must be positive (from the shape info or the tiling)");
  if ((uint64_t(r.k) * sizeof(T)) % ONE_BLK_SIZE != 0)
    Fail(call, "srcK " + Str(r.k) + " x " + Str(sizeof(T)) + " bytes is not a multiple of 32 bytes");
  if (r.valid > r.k) Fail(call, "oriSrcK " + Str(r.valid) + " exceeds srcK " + Str(r.k));
  return r;
}

// Per-row statistics tensors: one data block of S per row.
template <typename S>
constexpr uint32_t kStatWidth = ONE_BLK_SIZE / sizeof(S);

template <typename S>
inline void PutStat(S *p, uint32_t row, float v) {
  for (uint32_t j = 0; j < kStatWidth<S>; ++j) p[uint64_t(row) * kStatWidth<S> + j] = static_cast<S>(v);
}

// The rows of src (or of src after merging with the statistics in inMax / inSum): mode 0 SoftMax,
// 1 SimpleSoftMax (max, sum given), 2 SoftmaxFlashV2, 3 SoftmaxFlashV2 update, 4 SoftmaxFlash
// update (twin_softmax_flash.h), 5 LogSoftMax. Every form of the family is this call; its shape
// comes from the shape info or the tiling (ShapeOf).
template <typename T, typename S, typename Tiling>
inline void SoftmaxRows(const char *call, int mode, const LocalTensor<T> &dst, const LocalTensor<S> *sum,
                        const LocalTensor<S> *max, const LocalTensor<T> &src, const LocalTensor<T> *expMax,
                        const LocalTensor<S> *inSum, const LocalTensor<S> *inMax, const Tiling &tiling,
                        const SoftMaxShapeInfo &info) {
  const SoftmaxShape sh = ShapeOf<T>(call, tiling, info);
  const uint64_t n = uint64_t(sh.m) * sh.k, stats = uint64_t(sh.m) * kStatWidth<S>;
  const bool merge = mode == 3 || mode == 4, divide = mode <= 1 || mode >= 4;
  const T *x = VecIn(call, src, n);
  const S *givenMax = mode == 1 ? VecIn(call, *max, stats) : (merge ? VecIn(call, *inMax, stats) : nullptr);
  const S *givenSum = mode == 1 ? VecIn(call, *sum, stats) : (merge ? VecIn(call, *inSum, stats) : nullptr);
  T *d = VecOut(call, dst, n);
  S *outMax = mode != 1 && max != nullptr ? VecOut(call, *max, stats) : nullptr;
  S *outSum = mode != 1 && sum != nullptr ? VecOut(call, *sum, stats) : nullptr;
  T *outExpMax = merge ? VecOut(call, *expMax, uint64_t(sh.m) * kStatWidth<T>) : nullptr;
  for (uint32_t r = 0; r < sh.m; ++r) {
    const T *row = x + uint64_t(r) * sh.k;
    float mx = -INFINITY;
    if (mode == 1) {
      mx = static_cast<float>(givenMax[uint64_t(r) * kStatWidth<S>]);
    } else {
      for (uint32_t c = 0; c < sh.valid; ++c) mx = std::fmax(mx, static_cast<float>(row[c]));
    }
    const float before = merge ? static_cast<float>(givenMax[uint64_t(r) * kStatWidth<S>]) : mx;
    if (merge) mx = std::fmax(mx, before);
    float total = 0;
    for (uint32_t c = 0; c < sh.valid; ++c) total += std::exp(static_cast<float>(row[c]) - mx);
    if (mode == 1) total = static_cast<float>(givenSum[uint64_t(r) * kStatWidth<S>]);
    // The earlier pieces' sum, rescaled to the new max.
    const float e = merge ? std::exp(before - mx) : 1.0f;
    const float earlier = merge ? static_cast<float>(givenSum[uint64_t(r) * kStatWidth<S>]) * e : 0.0f;
    total += earlier;
    const float scale = divide ? 1.0f / total : 1.0f;
    T *out = d + uint64_t(r) * sh.k;
    if (mode == 5) {
      for (uint32_t c = 0; c < sh.valid; ++c)
        out[c] = static_cast<T>(std::log10(std::exp(static_cast<float>(row[c]) - mx) * scale));
    } else {
      for (uint32_t c = 0; c < sh.valid; ++c)
        out[c] = static_cast<T>(std::exp(static_cast<float>(row[c]) - mx) * scale);
    }
    if (merge) {
      const float factor = mode == 3 ? e : earlier / total;
      for (uint32_t j = 0; j < kStatWidth<T>; ++j) outExpMax[uint64_t(r) * kStatWidth<T> + j] = static_cast<T>(factor);
    }
    if (outMax != nullptr) PutStat(outMax, r, mx);
    if (outSum != nullptr) PutStat(outSum, r, total);
  }
}

template <bool isDataFormatNZ>
inline void NdOnly(const char *call) {
  if (isDataFormatNZ) Fail(call, "the NZ data format is not modelled by the twin (ND only)");
}

}  // namespace twin_detail

#define MS_OPS_TWIN_SOFTMAX_TEMPLATE                                                                             \
  template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,     \
            const SoftmaxConfig &config = SOFTMAX_DEFAULT_CFG>

MS_OPS_TWIN_SOFTMAX_TEMPLATE
inline void SoftMax(const LocalTensor<T> &dstTensor, const LocalTensor<T> &sumTensor, const LocalTensor<T> &maxTensor,
                    const LocalTensor<T> &srcTensor, const SoftMaxTiling &tiling,
                    const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::NdOnly<isDataFormatNZ>("SoftMax");
  twin_detail::SoftmaxRows<T, T>("SoftMax", 0, dstTensor, &sumTensor, &maxTensor, srcTensor, nullptr, nullptr, nullptr,
                                 tiling, softmaxShapeInfo);
}
MS_OPS_TWIN_SOFTMAX_TEMPLATE
inline void SoftMax(const LocalTensor<half> &dstTensor, const LocalTensor<float> &sumTensor,
                    const LocalTensor<float> &maxTensor, const LocalTensor<half> &srcTensor,
                    const SoftMaxTiling &tiling, const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::NdOnly<isDataFormatNZ>("SoftMax");
  twin_detail::SoftmaxRows<half, float>("SoftMax", 0, dstTensor, &sumTensor, &maxTensor, srcTensor, nullptr, nullptr,
                                        nullptr, tiling, softmaxShapeInfo);
}
MS_OPS_TWIN_SOFTMAX_TEMPLATE
inline void SoftMax(const LocalTensor<T> &dstTensor, const LocalTensor<T> &srcTensor, const SoftMaxTiling &tiling,
                    const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::NdOnly<isDataFormatNZ>("SoftMax");
  twin_detail::SoftmaxRows<T, T>("SoftMax", 0, dstTensor, nullptr, nullptr, srcTensor, nullptr, nullptr, nullptr,
                                 tiling, softmaxShapeInfo);
}
MS_OPS_TWIN_SOFTMAX_TEMPLATE
inline void SoftMax(const LocalTensor<T> &dstTensor, const LocalTensor<T> &srcTensor,
                    const LocalTensor<uint8_t> &sharedTmpBuffer, const SoftMaxTiling &tiling,
                    const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::UbAligned("SoftMax", sharedTmpBuffer.TwinData());
  SoftMax<T, isReuseSource, isBasicBlock, isDataFormatNZ, config>(dstTensor, srcTensor, tiling, softmaxShapeInfo);
}
MS_OPS_TWIN_SOFTMAX_TEMPLATE
inline void SoftMax(const LocalTensor<T> &dstTensor, const LocalTensor<T> &sumTensor, const LocalTensor<T> &maxTensor,
                    const LocalTensor<T> &srcTensor, const LocalTensor<uint8_t> &sharedTmpBuffer,
                    const SoftMaxTiling &tiling, const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::UbAligned("SoftMax", sharedTmpBuffer.TwinData());
  SoftMax<T, isReuseSource, isBasicBlock, isDataFormatNZ, config>(dstTensor, sumTensor, maxTensor, srcTensor, tiling,
                                                                  softmaxShapeInfo);
}

MS_OPS_TWIN_SOFTMAX_TEMPLATE
inline void SimpleSoftMax(const LocalTensor<T> &dstTensor, const LocalTensor<T> &inSumTensor,
                          const LocalTensor<T> &inMaxTensor, const LocalTensor<T> &srcTensor,
                          const SoftMaxTiling &tiling, const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::NdOnly<isDataFormatNZ>("SimpleSoftMax");
  twin_detail::SoftmaxRows<T, T>("SimpleSoftMax", 1, dstTensor, &inSumTensor, &inMaxTensor, srcTensor, nullptr, nullptr,
                                 nullptr, tiling, softmaxShapeInfo);
}
MS_OPS_TWIN_SOFTMAX_TEMPLATE
inline void SimpleSoftMax(const LocalTensor<half> &dstTensor, const LocalTensor<float> &inSumTensor,
                          const LocalTensor<float> &inMaxTensor, const LocalTensor<half> &srcTensor,
                          const SoftMaxTiling &tiling, const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::NdOnly<isDataFormatNZ>("SimpleSoftMax");
  twin_detail::SoftmaxRows<half, float>("SimpleSoftMax", 1, dstTensor, &inSumTensor, &inMaxTensor, srcTensor, nullptr,
                                        nullptr, nullptr, tiling, softmaxShapeInfo);
}

#undef MS_OPS_TWIN_SOFTMAX_TEMPLATE

#define MS_OPS_TWIN_FLASH_TEMPLATE                                                                               \
  template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,            \
            bool isDataFormatNZ = false, const SoftmaxConfig &config = SOFTMAX_DEFAULT_CFG>

MS_OPS_TWIN_FLASH_TEMPLATE
inline void SoftmaxFlashV2(const LocalTensor<T> &dstTensor, const LocalTensor<T> &expSumTensor,
                           const LocalTensor<T> &maxTensor, const LocalTensor<T> &srcTensor,
                           const LocalTensor<T> &expMaxTensor, const LocalTensor<T> &inExpSumTensor,
                           const LocalTensor<T> &inMaxTensor, const SoftMaxTiling &tiling,
                           const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::NdOnly<isDataFormatNZ>("SoftmaxFlashV2");
  twin_detail::SoftmaxRows<T, T>("SoftmaxFlashV2", isUpdate ? 3 : 2, dstTensor, &expSumTensor, &maxTensor, srcTensor,
                                 &expMaxTensor, &inExpSumTensor, &inMaxTensor, tiling, softmaxShapeInfo);
}
MS_OPS_TWIN_FLASH_TEMPLATE
inline void SoftmaxFlashV2(const LocalTensor<half> &dstTensor, const LocalTensor<float> &expSumTensor,
                           const LocalTensor<float> &maxTensor, const LocalTensor<half> &srcTensor,
                           const LocalTensor<half> &expMaxTensor, const LocalTensor<float> &inExpSumTensor,
                           const LocalTensor<float> &inMaxTensor, const SoftMaxTiling &tiling,
                           const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::NdOnly<isDataFormatNZ>("SoftmaxFlashV2");
  twin_detail::SoftmaxRows<half, float>("SoftmaxFlashV2", isUpdate ? 3 : 2, dstTensor, &expSumTensor, &maxTensor,
                                        srcTensor, &expMaxTensor, &inExpSumTensor, &inMaxTensor, tiling,
                                        softmaxShapeInfo);
}

#undef MS_OPS_TWIN_FLASH_TEMPLATE

}  // namespace AscendC

#endif  // MS_OPS_TWIN_SOFTMAX_H_
