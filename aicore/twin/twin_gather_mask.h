// GatherMask (CANN's vec_gather_mask family): the elements of src0 whose gather-mask bit is 1,
// packed to the front of dst, their number in rsvdCnt. The mask is one of the built-in patterns
// 1..7 (the same bits every repeat) or a tensor whose bits are consumed in order within a repeat,
// src1RepeatStride data blocks apart between repeats. A repeat covers 256 bytes of src0 in normal
// mode (reduceMode false), or `mask` elements in counter mode (Atlas A2's "configuration one":
// repeatTimes x mask elements in all). src0's elements follow the block and repeat strides.
#ifndef MS_OPS_TWIN_GATHER_MASK_H_
#define MS_OPS_TWIN_GATHER_MASK_H_

#include <cstdint>
#include <type_traits>
#include <vector>

#include "twin_mask.h"
#include "twin_vector.h"

namespace AscendC {

enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;  // __NPU_ARCH__ 2201

struct GatherMaskParams {
  GatherMaskParams() = default;
  GatherMaskParams(uint8_t src0BlockStrideIn, uint16_t repeatTimesIn, uint16_t src0RepeatStrideIn,
                   uint8_t src1RepeatStrideIn)
      : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
        src1RepeatStride(src1RepeatStrideIn) {}
  uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
  uint16_t repeatTimes = 0;
  uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};

namespace twin_detail {

// The pattern's element size matches T's (uint16_t for 16-bit T, uint32_t for 32-bit T).
template <typename T>
using GatherBits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;

// bit(r, e): whether element e of repeat r is kept.
template <typename T, class Bit>
inline void GatherMaskRun(const LocalTensor<T> &dst, const LocalTensor<T> &src0, bool reduceMode, uint32_t mask,
                          const GatherMaskParams &p, uint64_t &rsvdCnt, Bit bit) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "GatherMask: 16- or 32-bit elements on Atlas A2");
  const char *call = "GatherMask";
  constexpr uint32_t per = ONE_BLK_SIZE / sizeof(T);
  if (reduceMode && mask == 0) Fail(call, "mask 0 in counter mode (documented range [1, 2^32 - 1])");
  const uint32_t n = reduceMode ? mask : ONE_REPEAT_BYTE_SIZE / sizeof(T);
  UbAligned(call, src0.TwinData());
  UbAligned(call, dst.TwinData());
  std::vector<T> kept;
  for (uint32_t r = 0; r < p.repeatTimes; ++r)
    for (uint32_t b = 0; b * per < n; ++b) {
      const uint64_t first = (uint64_t(r) * p.src0RepeatStride + uint64_t(b) * p.src0BlockStride) * per;
      if (first + per > src0.TwinCap()) UbOutOfRange(call, first + per, src0.TwinCap());
      UbRead(kPipeV, call, src0.TwinData() + first, ONE_BLK_SIZE);
      for (uint32_t e = b * per; e < n && e < (b + 1) * per; ++e)
        if (bit(r, e)) kept.push_back(src0.TwinData()[first + e % per]);
    }
  T *d = VecOut(call, dst, static_cast<int64_t>(kept.size()));
  for (size_t i = 0; i < kept.size(); ++i) d[i] = kept[i];
  rsvdCnt = kept.size();
  // The instruction leaves the vector unit in normal mask mode.
  ::ms_ops::twin::Current().maskCounter = false;
}

}  // namespace twin_detail

template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<U> &src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams &gatherMaskParams,
                       uint64_t &rsvdCnt) {
  using namespace twin_detail;
  static_assert(std::is_same_v<U, GatherBits<T>>, "GatherMask: the pattern is uint16_t for 16-bit T, uint32_t for 32-bit T");
  const char *call = "GatherMask";
  constexpr uint64_t bits = sizeof(U) * 8;
  const uint32_t n = reduceMode ? mask : ONE_REPEAT_BYTE_SIZE / sizeof(T);
  const uint64_t stride = uint64_t(gatherMaskParams.src1RepeatStride) * ONE_BLK_SIZE / sizeof(U);
  const uint64_t words = (n + bits - 1) / bits;
  UbAligned(call, src1Pattern.TwinData());
  for (uint32_t r = 0; r < gatherMaskParams.repeatTimes; ++r) {
    if (r * stride + words > src1Pattern.TwinCap()) UbOutOfRange(call, r * stride + words, src1Pattern.TwinCap());
    UbRead(kPipeV, call, src1Pattern.TwinData() + r * stride, words * sizeof(U));
  }
  const U *m = src1Pattern.TwinData();
  GatherMaskRun(dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt,
                [&](uint32_t r, uint32_t e) { return (m[r * stride + e / bits] >> (e % bits)) & 1; });
}

// Built-in patterns: 1 even elements, 2 odd elements, 3..6 element 0..3 of every four, 7 all.
template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams &gatherMaskParams,
                       uint64_t &rsvdCnt) {
  if (src1Pattern < 1 || src1Pattern > 7)
    twin_detail::Fail("GatherMask", "src1Pattern " + twin_detail::Str(src1Pattern) + " is outside [1, 7]");
  auto bit = [src1Pattern](uint32_t, uint32_t e) {
    if (src1Pattern == 7) return true;
    if (src1Pattern <= 2) return e % 2 == uint32_t(src1Pattern - 1);
    return e % 4 == uint32_t(src1Pattern - 3);
  };
  twin_detail::GatherMaskRun(dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt, bit);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_GATHER_MASK_H_
