// Data filling and gathering on UB: Brcb (each of 8 source elements a repeat broadcast to a data
// block), Gather (elements picked by byte offsets), CreateVecIndex (first, first + 1, ...) and
// ArithProgression (first, first + diff, ...).
#ifndef MS_OPS_TWIN_GATHER_H_
#define MS_OPS_TWIN_GATHER_H_

#include <cstdint>

#include "twin_mask.h"
#include "twin_vector.h"

namespace AscendC {

// Strides in data blocks: dstBlkStride between the 8 blocks of a repeat, dstRepStride between
// repeats.
struct BrcbRepeatParams {
  BrcbRepeatParams() = default;
  BrcbRepeatParams(uint16_t dstBlkStrideIn, uint16_t dstRepStrideIn)
      : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
  uint32_t blockNumber = DEFAULT_BLK_NUM;
  uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
  uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
};

// Repeat r reads src[8r .. 8r + 7] and fills dst's block j of that repeat with src[8r + j].
template <typename T>
inline void Brcb(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint8_t repeatTime,
                 const BrcbRepeatParams &repeatParams) {
  using namespace twin_detail;
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Brcb: 16- or 32-bit elements");
  const char *call = "Brcb";
  constexpr uint32_t per = ONE_BLK_SIZE / sizeof(T);
  const T *s = VecIn(call, src, int64_t(repeatTime) * DEFAULT_BLK_NUM);
  ::ms_ops::twin::ProfileVecRepeats(repeatTime);
  UbAligned(call, dst.TwinData());
  for (uint32_t r = 0; r < repeatTime; ++r)
    for (uint32_t j = 0; j < DEFAULT_BLK_NUM; ++j) {
      const uint64_t first = (uint64_t(r) * repeatParams.dstRepStride + uint64_t(j) * repeatParams.dstBlkStride) * per;
      if (first + per > dst.TwinCap()) UbOutOfRange(call, first + per, dst.TwinCap());
      UbWrite(kPipeV, call, dst.TwinData() + first, ONE_BLK_SIZE);
      for (uint32_t k = 0; k < per; ++k) dst.TwinData()[first + k] = s[r * DEFAULT_BLK_NUM + j];
    }
}

// dst[i] = src[(srcBaseAddr + srcOffset[i]) / sizeof(T)]: offsets in bytes, element-aligned.
template <typename T>
inline void Gather(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count) {
  using namespace twin_detail;
  const char *call = "Gather";
  const uint32_t *off = VecIn(call, srcOffset, count);
  UbAligned(call, src.TwinData());
  T *d = VecOut(call, dst, count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t byte = uint64_t(srcBaseAddr) + off[i];
    if (byte % sizeof(T) != 0)
      Fail(call, "offset " + Str(byte) + " of element " + Str(i) + " is not a multiple of the element size");
    const uint64_t k = byte / sizeof(T);
    if (k >= src.TwinCap()) UbOutOfRange(call, k + 1, src.TwinCap());
    UbRead(kPipeV, call, src.TwinData() + k, sizeof(T));
    d[i] = src.TwinData()[k];
  }
}

template <typename T>
inline void CreateVecIndex(const LocalTensor<T> &dst, const T &firstValue, uint32_t count) {
  using namespace twin_detail;
  T *d = VecOut("CreateVecIndex", dst, count);
  const Calc<T> first = static_cast<Calc<T>>(firstValue);
  for (uint32_t i = 0; i < count; ++i) d[i] = static_cast<T>(first + static_cast<Calc<T>>(i));
}

// dst[i] = firstValue + i * diffValue (the advanced API's index generator).
template <typename T>
inline void ArithProgression(const LocalTensor<T> &dst, const T firstValue, const T diffValue, const int32_t count) {
  using namespace twin_detail;
  VecCount("ArithProgression", count);
  T *d = VecOut("ArithProgression", dst, count);
  const Calc<T> first = static_cast<Calc<T>>(firstValue), diff = static_cast<Calc<T>>(diffValue);
  for (int32_t i = 0; i < count; ++i) d[i] = static_cast<T>(first + static_cast<Calc<T>>(i) * diff);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_GATHER_H_
