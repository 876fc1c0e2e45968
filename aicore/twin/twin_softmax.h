// The advanced API's softmax family on ND [srcM, srcK] tensors (srcK elements a row, 32-byte
// aligned; the first oriSrcK of them, when given, are the row's data). Row statistics (max, sum)
// are stored one data block per row, the value repeated across the block, as CANN stores them.
//   SoftMax:         dst = exp(x - max) / sum, with max and sum written out when asked for;
//   SimpleSoftMax:   the same with max and sum given;
//   SoftmaxFlashV2:  dst = exp(x - max) (not divided); with isUpdate the running statistics of a
//                    row seen in earlier pieces are merged: max = max(inMax, row max),
//                    expMax = exp(inMax - max), sum = inSum * expMax + row sum.
// Shapes come from softmaxShapeInfo, or from the tiling where it is all zero. Exponentials are
// computed in float, as the Exp API computes them (twin_math.h), and summed in an order that does
// not depend on the machine; the scratch buffer is checked for alignment but not needed by the twin.
// SoftmaxFlash and LogSoftMax, on the same rows, are in twin_softmax_flash.h.
#ifndef MS_OPS_TWIN_SOFTMAX_H_
#define MS_OPS_TWIN_SOFTMAX_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "twin_math.h"
#include "twin_softmax_tiling.h"
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

// Row max and exponentials of float rows at the widest vectors (twin_math.h), the exponential the
// Exp API's. The sum's order does not depend on the width: element c goes to lane c % 8 of an
// 8-lane running sum (a wide vector added half by half), whose lanes are combined pairwise at the
// end. A tail shorter than a vector is padded with lanes that take no part (-inf for the max, 0 for
// the sum).
inline float RowMax(const float *x, uint32_t n) {
  const FW lowest = FW{} - INFINITY;
  // Four running maxima: one waits on the previous compare's latency every vector.
  FW m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
  uint32_t c = 0;
  for (; c + 4 * kWide <= n; c += 4 * kWide) {
    FW v0, v1, v2, v3;
    std::memcpy(&v0, x + c, sizeof(v0));
    std::memcpy(&v1, x + c + kWide, sizeof(v1));
    std::memcpy(&v2, x + c + 2 * kWide, sizeof(v2));
    std::memcpy(&v3, x + c + 3 * kWide, sizeof(v3));
    m0 = v0 > m0 ? v0 : m0;
    m1 = v1 > m1 ? v1 : m1;
    m2 = v2 > m2 ? v2 : m2;
    m3 = v3 > m3 ? v3 : m3;
  }
  m0 = m1 > m0 ? m1 : m0;
  m2 = m3 > m2 ? m3 : m2;
  FW m = m2 > m0 ? m2 : m0;
  for (; c + kWide <= n; c += kWide) {
    FW v;
    std::memcpy(&v, x + c, sizeof(v));
    m = v > m ? v : m;
  }
  if (c < n) {
    FW v = lowest;
    std::memcpy(&v, x + c, (n - c) * sizeof(float));
    m = v > m ? v : m;
  }
  // The lanes hold no NaN (the comparisons above never keep one), so plain comparisons give
  // fmax's result without a library call per lane.
  float r = -INFINITY;
  for (int32_t l = 0; l < kWide; ++l) r = m[l] > r ? m[l] : r;
  return r;
}

// acc += the 8-lane pieces of v, in order. The halves are taken in registers: copied out through
// memory, a 64-byte store read back as two 32-byte loads cannot be forwarded from the store.
inline void AddEights(F8 &acc, const FW &v) {
#ifdef __AVX512F__
  acc += __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  acc += __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
#else
  acc += v;
#endif
}

// out[c] = exp(x[c] - mx) for c < n (out may be x); returns their sum.
inline float ExpRow(float *out, const float *x, uint32_t n, float mx) {
  const FW shift = FW{} + mx;
  F8 acc{};
  uint32_t c = 0;
  for (; c + kWide <= n; c += kWide) {
    FW v;
    std::memcpy(&v, x + c, sizeof(v));
    v = ExpWide(v - shift);
    AddEights(acc, v);
    std::memcpy(out + c, &v, sizeof(v));
  }
  if (c < n) {
    FW v{};
    std::memcpy(&v, x + c, (n - c) * sizeof(float));
    v = ExpWide(v - shift);
    for (uint32_t l = n - c; l < uint32_t(kWide); ++l) v[l] = 0.0f;
    AddEights(acc, v);
    std::memcpy(out + c, &v, (n - c) * sizeof(float));
  }
  const float s01 = acc[0] + acc[1], s23 = acc[2] + acc[3], s45 = acc[4] + acc[5], s67 = acc[6] + acc[7];
  return (s01 + s23) + (s45 + s67);
}

// The rows of src (or of src after merging with the statistics in inMax / inSum): mode 0 SoftMax,
// 1 SimpleSoftMax (max, sum given), 2 SoftmaxFlashV2, 3 SoftmaxFlashV2 update, 4 SoftmaxFlash
// update (twin_softmax_flash.h), 5 LogSoftMax. Every form of the family is this call; its shape
// comes from the shape info or the tiling (ShapeOf). Exponentials and sums as ExpRow computes them
// (float data through it directly, half widened a row at a time). dst may be src.
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
  std::vector<float> wide(std::is_same_v<T, float> ? 0 : sh.valid);
  for (uint32_t r = 0; r < sh.m; ++r) {
    const T *row = x + uint64_t(r) * sh.k;
    T *out = d + uint64_t(r) * sh.k;
    const float *xf;
    float *ef;
    if constexpr (std::is_same_v<T, float>) {
      xf = row;
      ef = out;
    } else {
      for (uint32_t c = 0; c < sh.valid; ++c) wide[c] = static_cast<float>(row[c]);
      xf = ef = wide.data();
    }
    float mx = mode == 1 ? static_cast<float>(givenMax[uint64_t(r) * kStatWidth<S>]) : RowMax(xf, sh.valid);
    const float before = merge ? static_cast<float>(givenMax[uint64_t(r) * kStatWidth<S>]) : mx;
    if (merge) mx = std::fmax(mx, before);
    float total = ExpRow(ef, xf, sh.valid, mx);
    if (mode == 1) total = static_cast<float>(givenSum[uint64_t(r) * kStatWidth<S>]);
    // The earlier pieces' sum, rescaled to the new max.
    const float e = merge ? Exp8(Splat(before - mx))[0] : 1.0f;
    const float earlier = merge ? static_cast<float>(givenSum[uint64_t(r) * kStatWidth<S>]) * e : 0.0f;
    total += earlier;
    const float scale = divide ? 1.0f / total : 1.0f;
    // Float rows hold their exponentials already; only division, log and narrowing remain.
    for (uint32_t c = 0; (divide || !std::is_same_v<T, float>) && c < sh.valid; ++c) {
      const float y = ef[c] * scale;
      out[c] = static_cast<T>(mode == 5 ? std::log10(y) : y);
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

MS_OPS_TWIN_FLASH_TEMPLATE
inline void SoftmaxFlashV2(const LocalTensor<T> &dstTensor, const LocalTensor<T> &expSumTensor,
                           const LocalTensor<T> &maxTensor, const LocalTensor<T> &srcTensor,
                           const LocalTensor<T> &expMaxTensor, const LocalTensor<T> &inExpSumTensor,
                           const LocalTensor<T> &inMaxTensor, const LocalTensor<uint8_t> &sharedTmpBuffer,
                           const SoftMaxTiling &tiling, const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::UbAligned("SoftmaxFlashV2", sharedTmpBuffer.TwinData());
  SoftmaxFlashV2<T, isUpdate, isReuseSource, isBasicBlock, isDataFormatNZ, config>(
      dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor, inExpSumTensor, inMaxTensor, tiling,
      softmaxShapeInfo);
}
MS_OPS_TWIN_FLASH_TEMPLATE
inline void SoftmaxFlashV2(const LocalTensor<half> &dstTensor, const LocalTensor<float> &expSumTensor,
                           const LocalTensor<float> &maxTensor, const LocalTensor<half> &srcTensor,
                           const LocalTensor<half> &expMaxTensor, const LocalTensor<float> &inExpSumTensor,
                           const LocalTensor<float> &inMaxTensor, const LocalTensor<uint8_t> &sharedTmpBuffer,
                           const SoftMaxTiling &tiling, const SoftMaxShapeInfo &softmaxShapeInfo = {}) {
  twin_detail::UbAligned("SoftmaxFlashV2", sharedTmpBuffer.TwinData());
  SoftmaxFlashV2<T, isUpdate, isReuseSource, isBasicBlock, isDataFormatNZ, config>(
      dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor, inExpSumTensor, inMaxTensor, tiling,
      softmaxShapeInfo);
}

#undef MS_OPS_TWIN_FLASH_TEMPLATE

// The kernel-side tiling of SoftmaxFlashV2 for a [srcM, srcK] shape (CANN's constexpr form, for
// tilings made on the device). CANN's splits the rows to fit localWorkSpaceSize; the twin reads
// only srcM and srcK, and a call whose shape info differs from them is retiled, as CANN's is.
inline constexpr SoftMaxTiling SoftMaxFlashV2TilingFunc(const SoftMaxShapeInfo &shapeInfo,
                                                        const uint32_t dataTypeSize1, const uint32_t dataTypeSize2,
                                                        const uint32_t localWorkSpaceSize, const bool isUpdate = false,
                                                        const bool isBasicBlock = false,
                                                        const bool isDataFormatNZ = false,
                                                        const bool isFlashOutputBrc = false) {
  SoftMaxTiling t{};
  t.srcM = shapeInfo.srcM;
  t.srcK = shapeInfo.srcK;
  t.srcSize = shapeInfo.srcM * shapeInfo.srcK;
  (void)dataTypeSize1;
  (void)dataTypeSize2;
  (void)localWorkSpaceSize;
  (void)isUpdate;
  (void)isBasicBlock;
  (void)isDataFormatNZ;
  (void)isFlashOutputBrc;
  return t;
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_SOFTMAX_H_
