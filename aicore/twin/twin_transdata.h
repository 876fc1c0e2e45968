// TransDataTo5HD and the basic Transpose. TransDataTo5HD: one repeat reads a data block (32 bytes) at each of 16 source addresses and
// writes the 16 blocks transposed to 16 destination addresses (NCHW -> NC1HWC0, or a transpose):
//   16-bit: dst[j][i] = src[i][j] (a 16 x 16 transpose);
//   32-bit: dst[k][e] = src[8 (k % 2) + e][k / 2] (a source column's 16 values fill two blocks);
//   8-bit:  dst[j][16 h_d + i] = src[i][16 h_s + j] (16 of each block's 32 bytes, the halves h_s and
//           h_d chosen by srcHighHalf / dstHighHalf).
// Repeat r moves every address on by r x the repeat stride (in data blocks), except that a single
// repeat moves them by one stride (Atlas A2's rule: with repeatTimes 1 a start at the list's own
// addresses needs strides of 0). repeatTimes 0 does nothing. Addresses are UB offsets
// (LocalTensor::GetPhyAddr), 32-byte aligned; the reads and writes are V-pipe accesses.
#ifndef MS_OPS_TWIN_TRANSDATA_H_
#define MS_OPS_TWIN_TRANSDATA_H_

#include <cstdint>
#include <cstring>

#include "twin_vector.h"

namespace AscendC {

constexpr int32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

struct TransDataTo5HDParams {
  constexpr TransDataTo5HDParams() = default;
  constexpr TransDataTo5HDParams(const bool dstHighHalfIn, const bool srcHighHalfIn, const uint8_t repeatTimesIn,
                                 const uint16_t dstRepStrideIn, const uint16_t srcRepStrideIn)
      : dstHighHalf(dstHighHalfIn),
        srcHighHalf(srcHighHalfIn),
        repeatTimes(repeatTimesIn),
        dstRepStride(dstRepStrideIn),
        srcRepStride(srcRepStrideIn) {}
  bool dstHighHalf = false;
  bool srcHighHalf = false;
  uint8_t repeatTimes = 1;
  uint16_t dstRepStride = 0;
  uint16_t srcRepStride = 0;
};

namespace twin_detail {

// The block at UB offset `offset`, checked to be aligned and inside the usable UB.
inline uint8_t *TransBlock(uint64_t offset) {
  constexpr const char *call = "TransDataTo5HD";
  if (offset + ONE_BLK_SIZE > ::ms_ops::kAtlasA2.ubSize)
    Fail(call, "UB address " + Str(offset) + " puts a data block past the usable " +
                   Str(uint64_t(::ms_ops::kAtlasA2.ubSize)) + " bytes");
  uint8_t *p = ::ms_ops::twin::Current().ub + offset;
  UbAligned(call, p);
  return p;
}

template <typename T>
inline void TransTo5HD(const uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], const uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                       const TransDataTo5HDParams &p) {
  constexpr const char *call = "TransDataTo5HD";
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "TransDataTo5HD: 8-, 16- or 32-bit elements");
  constexpr uint32_t kLists = NCHW_CONV_ADDR_LIST_SIZE, kPer = ONE_BLK_SIZE / sizeof(T);
  for (uint32_t r = 0; r < p.repeatTimes; ++r) {
    const uint64_t step = p.repeatTimes == 1 ? 1 : r;
    T in[kLists][kPer], out[kLists][kPer];
    uint8_t *dst[kLists];
    // Every source block is read before any destination is written (a repeat reads its 512 bytes first).
    for (uint32_t i = 0; i < kLists; ++i) {
      const uint8_t *src = TransBlock(srcList[i] + step * p.srcRepStride * ONE_BLK_SIZE);
      UbRead(kPipeV, call, src, ONE_BLK_SIZE);
      std::memcpy(in[i], src, ONE_BLK_SIZE);
      dst[i] = TransBlock(dstList[i] + step * p.dstRepStride * ONE_BLK_SIZE);
      std::memcpy(out[i], dst[i], ONE_BLK_SIZE);
    }
    for (uint32_t j = 0; j < kLists; ++j) {
      if constexpr (sizeof(T) == 2) {
        for (uint32_t i = 0; i < kLists; ++i) out[j][i] = in[i][j];
      } else if constexpr (sizeof(T) == 4) {
        for (uint32_t e = 0; e < kPer; ++e) out[j][e] = in[8 * (j % 2) + e][j / 2];
      } else {
        const uint32_t hs = p.srcHighHalf ? 16 : 0, hd = p.dstHighHalf ? 16 : 0;
        for (uint32_t i = 0; i < kLists; ++i) out[j][hd + i] = in[i][hs + j];
      }
    }
    for (uint32_t j = 0; j < kLists; ++j) {
      UbWrite(kPipeV, call, dst[j], ONE_BLK_SIZE);
      std::memcpy(dst[j], out[j], ONE_BLK_SIZE);
    }
    ::ms_ops::twin::ProfileVec(kLists * ONE_BLK_SIZE);
  }
}

}  // namespace twin_detail

template <typename T>
inline void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams &nchwconvParams) {
  twin_detail::TransTo5HD<T>(dstList, srcList, nchwconvParams);
}

// The 16 addresses of each list held in a uint64_t tensor.
template <typename T>
inline void TransDataTo5HD(const LocalTensor<uint64_t> &dst, const LocalTensor<uint64_t> &src,
                           const TransDataTo5HDParams &nchwconvParams) {
  uint64_t d[NCHW_CONV_ADDR_LIST_SIZE], s[NCHW_CONV_ADDR_LIST_SIZE];
  std::memcpy(d, twin_detail::VecIn("TransDataTo5HD", dst, NCHW_CONV_ADDR_LIST_SIZE), sizeof(d));
  std::memcpy(s, twin_detail::VecIn("TransDataTo5HD", src, NCHW_CONV_ADDR_LIST_SIZE), sizeof(s));
  twin_detail::TransTo5HD<T>(d, s, nchwconvParams);
}

template <typename T>
inline void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams &nchwconvParams) {
  uint64_t d[NCHW_CONV_ADDR_LIST_SIZE], s[NCHW_CONV_ADDR_LIST_SIZE];
  for (int32_t i = 0; i < NCHW_CONV_ADDR_LIST_SIZE; ++i) {
    d[i] = dstList[i].GetPhyAddr();
    s[i] = srcList[i].GetPhyAddr();
  }
  twin_detail::TransTo5HD<T>(d, s, nchwconvParams);
}

// The basic Transpose: one 16 x 16 matrix of 16-bit elements (512 bytes), dst = src^T. dst and
// src must not overlap, as the NPU reads and writes in 32-byte blocks.
template <typename T>
inline void Transpose(const LocalTensor<T> &dst, const LocalTensor<T> &src) {
  static_assert(sizeof(T) == 2, "Transpose: the basic form takes 16-bit elements (int16_t, uint16_t, half)");
  using namespace twin_detail;
  constexpr int64_t kN = 16;
  const T *s = VecIn("Transpose", src, kN * kN);
  T *d = VecOut("Transpose", dst, kN * kN);
  const uintptr_t a = reinterpret_cast<uintptr_t>(d), b = reinterpret_cast<uintptr_t>(s);
  if (a < b + kN * kN * sizeof(T) && b < a + kN * kN * sizeof(T))
    Fail("Transpose", "the destination overlaps the source");
  for (int64_t i = 0; i < kN; ++i)
    for (int64_t j = 0; j < kN; ++j) d[j * kN + i] = s[i * kN + j];
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_TRANSDATA_H_
