// Sorting in the region-proposal layout top-k kernels use on Atlas A2: Sort32 sorts each repeat's
// 32 scores in descending order into 8-byte (score, index) structures (float: score in the low
// 4 bytes; half: score in the low 2 bytes, 2 reserved bytes; the uint32 index in the high 4
// bytes); MrgSort merges up to 4 such sorted queues into one, descending; GetMrgSortResult tells
// how much of each queue a merge stopped by ifExhaustedSuspension consumed. Equal scores keep
// their order: the earlier element (and, in a merge, the earlier queue) comes first.
#ifndef MS_OPS_TWIN_SORT_H_
#define MS_OPS_TWIN_SORT_H_

#include <cstdint>
#include <cstring>
#include <vector>

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

// The descending order as unsigned keys (a larger key comes first): numbers keep their float
// order with -0 equal to +0; NaN, which the device documentation leaves unspecified, ranks below
// every number. Comparing keys instead of floats lets Sort32 rank a repeat with vector compares
// and MrgSort pick its queue without branches.
inline uint32_t SortKey(float s) {
  if (s != s) return 0;
  if (s == 0.0f) s = 0.0f;
  uint32_t u;
  std::memcpy(&u, &s, 4);
  return (u & 0x80000000u) != 0 ? ~u : u | 0x80000000u;
}

template <typename T>
inline uint32_t KeyAt(const uint8_t *p) {
  T s;
  std::memcpy(&s, p, sizeof(T));
  return SortKey(static_cast<float>(s));
}

// (score, index) with the score in the low bytes and, for half, 2 reserved zero bytes after it.
template <typename T>
inline void PutProposal(uint8_t *p, T score, uint32_t index) {
  uint32_t low = 0;
  std::memcpy(&low, &score, sizeof(T));
  const uint64_t word = uint64_t(index) << 32 | low;
  std::memcpy(p, &word, kProposalBytes);
}

// What the last MrgSort with ifExhaustedSuspension consumed of each queue: the block's, not the
// thread's (a thread runs other blocks while one waits at SyncAll).
inline uint16_t *MrgSortCounts() { return ::ms_ops::twin::Current().mrgSortCounts; }

// key[e] = SortKey(score of structure e) + 1 for the n structures at q: for float, the same
// ranking from the score's bits without branches, so that the loop vectorizes.
template <typename T>
inline void QueueKeys(const uint8_t *q, uint32_t n, uint32_t *key) {
  if constexpr (std::is_same_v<T, float>) {
    for (uint32_t e = 0; e < n; ++e) {
      uint32_t u;
      std::memcpy(&u, q + uint64_t(e) * kProposalBytes, 4);
      const uint32_t mag = u & 0x7FFFFFFFu;
      const uint32_t bits = mag == 0 ? 0u : u;  // -0 ranks as +0
      const uint32_t k = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
      key[e] = mag > 0x7F800000u ? 1u : k + 1;  // NaN below every number
    }
  } else {
    for (uint32_t e = 0; e < n; ++e) key[e] = KeyAt<T>(q + uint64_t(e) * kProposalBytes) + 1;
  }
}

// The merges of MrgSort: `total` structures from the queues q (key[j]: the SortKey + 1 of queue j's
// structures, then a 0, so an exhausted queue never wins) into o, the largest head first, the
// earlier queue on equal keys; pos[j]: what each queue gave. Which queue wins is data-dependent:
// the loops select by arithmetic on the winner, not by branches, and keep the chain from one
// step's winner to the next step's heads short (the heads are reloaded, not stored).
inline void MergeTwo(uint8_t *o, uint64_t total, const uint8_t *const q[4], uint32_t *const key[4], uint32_t pos[4]) {
  const uint64_t *w0 = reinterpret_cast<const uint64_t *>(q[0]), *w1 = reinterpret_cast<const uint64_t *>(q[1]);
  const uint32_t *key0 = key[0], *key1 = key[1];
  uint32_t i0 = 0, i1 = 0;
  for (uint64_t step = 0; step < total; ++step, o += kProposalBytes) {
    const uint32_t take1 = key1[i1] > key0[i0];
    // Only the winner is read: an exhausted queue's index points past its end.
    std::memcpy(o, take1 ? w1 + i1 : w0 + i0, kProposalBytes);
    i1 += take1;
    i0 += take1 ^ 1u;
  }
  pos[0] = i0;
  pos[1] = i1;
}

inline void MergeFour(uint8_t *o, uint64_t total, const uint8_t *const q[4], uint32_t *const key[4], uint32_t pos[4]) {
  const uint64_t *w[4];
  for (int j = 0; j < 4; ++j) w[j] = reinterpret_cast<const uint64_t *>(q[j]);
  const uint32_t *key0 = key[0], *key1 = key[1], *key2 = key[2], *key3 = key[3];
  uint32_t i0 = 0, i1 = 0, i2 = 0, i3 = 0;
  for (uint64_t step = 0; step < total; ++step, o += kProposalBytes) {
    const uint32_t h0 = key0[i0], h1 = key1[i1], h2 = key2[i2], h3 = key3[i3];
    const uint32_t b1 = h1 > h0, b3 = h3 > h2;
    const uint32_t high = (b3 ? h3 : h2) > (b1 ? h1 : h0);
    const uint32_t b = high * 2 + (high ? b3 : b1);
    const uint32_t s0 = b == 0, s1 = b == 1, s2 = b == 2, s3 = b == 3;
    std::memcpy(o, w[b] + (i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3), kProposalBytes);
    i0 += s0;
    i1 += s1;
    i2 += s2;
    i3 += s3;
  }
  pos[0] = i0;
  pos[1] = i1;
  pos[2] = i2;
  pos[3] = i3;
}

// With ifExhaustedSuspension: the merge stops as soon as one of the queues is exhausted.
inline void MergeUntilExhausted(uint8_t *o, uint64_t total, int queues, const uint8_t *const q[4],
                                uint32_t *const key[4], const uint32_t len[4], uint32_t pos[4]) {
  for (uint64_t step = 0; step < total; ++step, o += kProposalBytes) {
    bool exhausted = false;
    for (int j = 0; j < queues; ++j) exhausted |= pos[j] == len[j];
    if (exhausted) break;
    int b = 0;
    for (int j = 1; j < queues; ++j)
      if (key[j][pos[j]] > key[b][pos[b]]) b = j;
    std::memcpy(o, q[b] + uint64_t(pos[b]) * kProposalBytes, kProposalBytes);
    ++pos[b];
  }
}

}  // namespace twin_detail

// Each repeat places element i at its rank: the elements with a larger score plus the earlier
// elements with an equal one (so equal scores keep their element order).
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
  uint32_t key[32];
  for (int32_t r = 0; r < repeatTime; ++r) {
    const T *s = score + r * 32;
    for (uint32_t i = 0; i < 32; ++i) key[i] = SortKey(static_cast<float>(s[i]));
    for (uint32_t i = 0; i < 32; ++i) {
      const uint32_t ki = key[i];
      uint32_t rank = 0;
      for (uint32_t j = 0; j < 32; ++j) rank += (key[j] > ki) | ((key[j] == ki) & (j < i));
      PutProposal<T>(out + (uint64_t(r) * 32 + rank) * kProposalBytes, s[i], index[r * 32 + i]);
    }
  }
}

// Each step takes the head with the largest score, the earliest queue on equal scores.
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
  const uint8_t *in[4] = {nullptr, nullptr, nullptr, nullptr};
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
  // Each queue's keys (SortKey + 1) with a 0 after its last: a queue without a head never wins.
  // Scratch of this call alone (no block switch happens inside an API call).
  thread_local std::vector<uint32_t> keys;
  if (keys.size() < total + 4) keys.resize(total + 4);
  for (uint32_t r = 0; r < params.repeatTimes; ++r) {
    const uint8_t *q[4];
    uint32_t len[4], *key[4];
    for (int j = 0, at = 0; j < 4; ++j) {
      len[j] = j < queues ? params.elementLengths[j] : 0;
      q[j] = j < queues ? in[j] + uint64_t(r) * total * kProposalBytes : nullptr;
      key[j] = keys.data() + at;
      QueueKeys<T>(q[j], len[j], key[j]);
      key[j][len[j]] = 0;
      at += len[j] + 1;
    }
    uint8_t *o = out + uint64_t(r) * total * kProposalBytes;
    uint32_t pos[4] = {0, 0, 0, 0};
    if (params.ifExhaustedSuspension)
      MergeUntilExhausted(o, total, queues, q, key, len, pos);
    else if (queues == 2)
      MergeTwo(o, total, q, key, pos);
    else
      MergeFour(o, total, q, key, pos);
    for (int j = 0; j < 4; ++j) counts[j] = static_cast<uint16_t>(pos[j]);
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
