// Sorting in the region-proposal layout top-k kernels use on Atlas A2: Sort32 sorts each repeat's
// 32 scores in descending order into 8-byte (score, index) structures (float: score in the low
// 4 bytes; half: score in the low 2 bytes, 2 reserved bytes; the uint32 index in the high 4
// bytes); MrgSort merges up to 4 such sorted queues into one, descending; GetMrgSortResult tells
// how much of each queue a merge stopped by ifExhaustedSuspension consumed. Equal scores keep
// their order: the earlier element (and, in a merge, the earlier queue) comes first.
#ifndef MS_OPS_TWIN_SORT_H_
#define MS_OPS_TWIN_SORT_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "twin_vector.h"

namespace AscendC {

// Queue lengths in 8-byte structures ([0, 4095]); validBit 3, 7 or 15: the first 2, 3 or 4 queues.
struct MrgSort4Info {
  MrgSort4Info() = default;
  MrgSort4Info(const uint16_t elementLengthsIn[4], bool ifExhaustedSuspensionIn, uint16_t validBitIn,
               uint16_t repeatTimesIn)
      : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes(repeatTimesIn) {
    for (int i = 0; i < 4; ++i) elementLengths[i] = elementLengthsIn[i];
  }
  uint16_t elementLengths[4] = {0, 0, 0, 0};
  bool ifExhaustedSuspension = false;
  uint16_t validBit = 0;
  uint16_t repeatTimes = 1;
};

template <typename T>
struct MrgSortSrcList {
  MrgSortSrcList() = default;
  MrgSortSrcList(const LocalTensor<T> &src1In, const LocalTensor<T> &src2In, const LocalTensor<T> &src3In,
                 const LocalTensor<T> &src4In)
      : src1(src1In), src2(src2In), src3(src3In), src4(src4In) {}
  LocalTensor<T> src1, src2, src3, src4;
};

namespace twin_detail {

constexpr uint32_t kProposalBytes = 8;

template <typename T>
inline float ScoreAt(const uint8_t *p) {
  T s;
  std::memcpy(&s, p, sizeof(T));
  return static_cast<float>(s);
}

template <typename T>
inline void PutProposal(uint8_t *p, T score, uint32_t index) {
  std::memset(p, 0, 4);
  std::memcpy(p, &score, sizeof(T));
  std::memcpy(p + 4, &index, 4);
}

// What the last MrgSort with ifExhaustedSuspension consumed of each queue, per block thread.
inline uint16_t *MrgSortCounts() {
  static thread_local uint16_t counts[4];
  return counts;
}

}  // namespace twin_detail

template <typename T>
inline void Sort32(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<uint32_t> &src1,
                   const int32_t repeatTime) {
  using namespace twin_detail;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>, "Sort32: half or float scores");
  const char *call = "Sort32";
  if (repeatTime < 0 || repeatTime > 255) Fail(call, "repeatTime " + Str(repeatTime) + " is outside [0, 255]");
  const int64_t n = int64_t(repeatTime) * 32;
  const T *score = VecIn(call, src0, n);
  const uint32_t *index = VecIn(call, src1, n);
  T *d = VecOut(call, dst, n * kProposalBytes / sizeof(T));
  uint8_t *out = reinterpret_cast<uint8_t *>(d);
  uint32_t order[32];
  for (int32_t r = 0; r < repeatTime; ++r) {
    const T *s = score + r * 32;
    for (uint32_t i = 0; i < 32; ++i) order[i] = i;
    std::stable_sort(order, order + 32,
                     [s](uint32_t a, uint32_t b) { return static_cast<float>(s[a]) > static_cast<float>(s[b]); });
    for (uint32_t i = 0; i < 32; ++i)
      PutProposal<T>(out + (uint64_t(r) * 32 + i) * kProposalBytes, s[order[i]], index[r * 32 + order[i]]);
  }
}

template <typename T>
inline void MrgSort(const LocalTensor<T> &dst, const MrgSortSrcList<T> &src, const MrgSort4Info &params) {
  using namespace twin_detail;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>, "MrgSort: half or float scores");
  const char *call = "MrgSort";
  const int queues = params.validBit == 3 ? 2 : params.validBit == 7 ? 3 : params.validBit == 15 ? 4 : 0;
  if (queues == 0) Fail(call, "validBit " + Str(params.validBit) + " is not 3, 7 or 15");
  if (params.repeatTimes > 255) Fail(call, "repeatTimes " + Str(params.repeatTimes) + " is outside [0, 255]");
  if (params.repeatTimes > 1 && (queues != 4 || params.ifExhaustedSuspension))
    Fail(call, "repeatTimes above 1 needs 4 queues and ifExhaustedSuspension false");
  const LocalTensor<T> *list[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
  uint64_t total = 0;
  for (int q = 0; q < queues; ++q) {
    if (params.elementLengths[q] > 4095)
      Fail(call, "elementLengths[" + Str(q) + "] " + Str(params.elementLengths[q]) + " is outside [0, 4095]");
    total += params.elementLengths[q];
  }
  const uint64_t elemsPer = kProposalBytes / sizeof(T);
  const uint8_t *in[4];
  for (int q = 0; q < queues; ++q) {
    if ((reinterpret_cast<uintptr_t>(list[q]->TwinData()) & 7) != 0)
      Fail(call, "queue " + Str(q + 1) + " does not start 8-byte aligned");
    const uint64_t span = (uint64_t(params.repeatTimes) - 1) * total + params.elementLengths[q];
    if (params.repeatTimes == 0) continue;
    if (span * elemsPer > list[q]->TwinCap()) UbOutOfRange(call, span * elemsPer, list[q]->TwinCap());
    UbRead(kPipeV, call, list[q]->TwinData(), span * kProposalBytes);
    in[q] = reinterpret_cast<const uint8_t *>(list[q]->TwinData());
  }
  T *d = VecOut(call, dst, int64_t(params.repeatTimes) * total * elemsPer);
  uint8_t *out = reinterpret_cast<uint8_t *>(d);
  uint16_t *counts = MrgSortCounts();
  for (uint32_t r = 0; r < params.repeatTimes; ++r) {
    uint32_t at[4] = {0, 0, 0, 0};
    uint64_t written = 0;
    for (;;) {
      int best = -1;
      bool exhausted = false;
      for (int q = 0; q < queues; ++q) {
        if (at[q] == params.elementLengths[q]) {
          exhausted = true;
          continue;
        }
        const float s = ScoreAt<T>(in[q] + (uint64_t(r) * total + at[q]) * kProposalBytes);
        if (best < 0 || s > ScoreAt<T>(in[best] + (uint64_t(r) * total + at[best]) * kProposalBytes)) best = q;
      }
      if (best < 0 || (exhausted && params.ifExhaustedSuspension)) break;
      std::memcpy(out + (uint64_t(r) * total + written++) * kProposalBytes,
                  in[best] + (uint64_t(r) * total + at[best]++) * kProposalBytes, kProposalBytes);
    }
    for (int q = 0; q < 4; ++q) counts[q] = static_cast<uint16_t>(q < queues ? at[q] : 0);
  }
}

// The structures of each queue the last MrgSort took (meaningful after ifExhaustedSuspension).
inline void GetMrgSortResult(uint16_t &mrgSortList1, uint16_t &mrgSortList2, uint16_t &mrgSortList3,
                             uint16_t &mrgSortList4) {
  const uint16_t *c = twin_detail::MrgSortCounts();
  mrgSortList1 = c[0];
  mrgSortList2 = c[1];
  mrgSortList3 = c[2];
  mrgSortList4 = c[3];
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_SORT_H_
