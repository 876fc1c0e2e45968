// The vector unit's mask register and the repeat geometry of the level-0 ("high-dimensional")
// vector calls. One instruction handles repeatTime repeats of 256 bytes: 8 data blocks of 32
// bytes each, block b of repeat r of an operand at (r * repStride + b * blkStride) * 32 bytes from
// its start (strides in data blocks). Which lanes of a repeat take part is the mask:
//   normal mode: a 128-bit mask, lane e on when its bit is set (bitwise form: mask[0] lanes 0..63,
//     mask[1] lanes 64..127, and 0 for 32-bit types; contiguous form: the first `mask` lanes);
//   counter mode (SetMaskCount): the mask is an element count over all repeats, repeatTime is
//     ignored and the repeats follow from the count.
// A call with isSetMask = true writes its mask argument into the register; with false it ignores
// the argument (MASK_PLACEHOLDER) and uses what SetVectorMask left there. Masked-off lanes of the
// destination keep their contents.
#ifndef MS_OPS_TWIN_MASK_H_
#define MS_OPS_TWIN_MASK_H_

#include <algorithm>
#include <cstdint>

#include "twin_copy.h"

namespace AscendC {

struct UnaryRepeatParams {
  UnaryRepeatParams() = default;
  UnaryRepeatParams(uint16_t dstBlkStrideIn, uint16_t srcBlkStrideIn, uint8_t dstRepStrideIn, uint8_t srcRepStrideIn)
      : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
        srcRepStride(srcRepStrideIn) {}
  UnaryRepeatParams(uint16_t dstBlkStrideIn, uint16_t srcBlkStrideIn, uint8_t dstRepStrideIn, uint8_t srcRepStrideIn,
                    bool halfBlockIn)
      : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
        srcRepStride(srcRepStrideIn), halfBlock(halfBlockIn) {}
  uint32_t blockNumber = DEFAULT_BLK_NUM;
  uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
  uint16_t srcBlkStride = DEFAULT_BLK_STRIDE;
  uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
  bool halfBlock = false;
};

struct BinaryRepeatParams {
  BinaryRepeatParams() = default;
  BinaryRepeatParams(uint8_t dstBlkStrideIn, uint8_t src0BlkStrideIn, uint8_t src1BlkStrideIn, uint8_t dstRepStrideIn,
                     uint8_t src0RepStrideIn, uint8_t src1RepStrideIn)
      : dstBlkStride(dstBlkStrideIn), src0BlkStride(src0BlkStrideIn), src1BlkStride(src1BlkStrideIn),
        dstRepStride(dstRepStrideIn), src0RepStride(src0RepStrideIn), src1RepStride(src1RepStrideIn) {}
  uint32_t blockNumber = DEFAULT_BLK_NUM;
  uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
};

inline void SetMaskCount() { ::ms_ops::twin::Current().maskCounter = true; }
inline void SetMaskNorm() { ::ms_ops::twin::Current().maskCounter = false; }
inline void ResetMask() {
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  b.vecMask[0] = b.vecMask[1] = ~0ull;
}

namespace twin_detail {

// The first n of 128 lanes as (low, high) bits.
inline void FirstLanes(uint32_t n, uint64_t bits[2]) {
  bits[0] = n >= 64 ? ~0ull : (1ull << n) - 1;
  bits[1] = n >= 128 ? ~0ull : (n <= 64 ? 0 : (1ull << (n - 64)) - 1);
}

}  // namespace twin_detail

// Normal mode: the bit mask (maskHigh: lanes 64..127); counter mode: maskLow is the element count.
template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow) {
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  b.vecMask[0] = maskLow;
  b.vecMask[1] = mode == MaskMode::COUNTER ? 0 : maskHigh;
}

// Normal mode: the first len lanes of each repeat; counter mode: len elements in all.
template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(int32_t len) {
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  if (len < 0) twin_detail::Fail("SetVectorMask", "negative len " + std::to_string(len));
  if (mode == MaskMode::COUNTER) {
    b.vecMask[0] = static_cast<uint64_t>(len);
    b.vecMask[1] = 0;
    return;
  }
  constexpr int32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  if (len > lanes)
    twin_detail::Fail("SetVectorMask", "len " + std::to_string(len) + " exceeds the " + std::to_string(lanes) +
                                           " lanes of one repeat");
  twin_detail::FirstLanes(static_cast<uint32_t>(len), b.vecMask);
}

namespace twin_detail {

// The lanes one level-0 call works on: `repeats` repeats of `lanes` lanes each.
struct Lanes {
  uint32_t lanes, repeats;
  bool counter;
  uint64_t bits[2];  // normal mode
  uint64_t count;    // counter mode

  bool On(uint32_t r, uint32_t e) const {
    return counter ? uint64_t(r) * lanes + e < count : ((bits[e >> 6] >> (e & 63)) & 1) != 0;
  }
  // Any lane of [e0, e1) of repeat r on.
  bool AnyOn(uint32_t r, uint32_t e0, uint32_t e1) const {
    for (uint32_t e = e0; e < e1; ++e)
      if (On(r, e)) return true;
    return false;
  }
};

[[noreturn]] __attribute__((noinline, cold)) inline void BadRepeat(const char *call, int64_t repeat) {
  Fail(call, "repeatTime " + Str(static_cast<uint64_t>(repeat)) + " is outside [0, 255]");
}

// The register after a call that sets it (isSetMask) or as it is (not), in the block's mode.
inline Lanes Resolve(const char *call, uint32_t lanes, int64_t repeatTime, bool set, const uint64_t bits[2]) {
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  if (set) {
    b.vecMask[0] = bits[0];
    b.vecMask[1] = bits[1];
  }
  Lanes l{lanes, 0, b.maskCounter, {b.vecMask[0], b.vecMask[1]}, b.vecMask[0]};
  if (l.counter) {
    l.repeats = static_cast<uint32_t>((l.count + lanes - 1) / lanes);
    if (l.repeats > MAX_REPEAT_TIMES) Fail(call, "counter-mode count " + Str(l.count) + " needs more than 255 repeats");
  } else {
    if (repeatTime < 0 || repeatTime > MAX_REPEAT_TIMES) BadRepeat(call, repeatTime);
    l.repeats = static_cast<uint32_t>(repeatTime);
    if (lanes <= 64) l.bits[1] = 0;
  }
  ::ms_ops::twin::ProfileVecRepeats(l.repeats);
  return l;
}

// Bitwise mask form; T is the widest operand type, which sets the lanes per repeat.
template <typename T, bool isSetMask>
inline Lanes MaskOf(const char *call, const uint64_t mask[], int64_t repeatTime) {
  constexpr uint32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  uint64_t bits[2] = {0, 0};
  if (isSetMask) {
    bits[0] = mask[0];
    bits[1] = mask[1];
    if (!::ms_ops::twin::Current().maskCounter && lanes <= 64 && bits[1] != 0)
      Fail(call, "mask[1] must be 0 for " + Str(sizeof(T) * 8) + "-bit operands (" + Str(lanes) + " lanes a repeat)");
  }
  return Resolve(call, lanes, repeatTime, isSetMask, bits);
}

// Contiguous mask form: the first `mask` lanes (normal mode) or `mask` elements (counter mode).
template <typename T, bool isSetMask>
inline Lanes MaskOf(const char *call, uint64_t mask, int64_t repeatTime) {
  constexpr uint32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  uint64_t bits[2] = {0, 0};
  if (isSetMask) {
    if (::ms_ops::twin::Current().maskCounter) {
      bits[0] = mask;
    } else {
      if (mask < 1 || mask > lanes) Fail(call, "mask " + Str(mask) + " is outside [1, " + Str(lanes) + "]");
      FirstLanes(static_cast<uint32_t>(mask), bits);
    }
  }
  return Resolve(call, lanes, repeatTime, isSetMask, bits);
}

// k when the active lanes of every repeat are exactly its first k (normal mode: the usual contiguous
// and full masks), else -1. The level-0 loops below then skip the per-lane test and record a
// repeat's data blocks as one access.
inline int64_t PrefixLanes(const Lanes &l) {
  if (l.counter) return -1;
  const uint64_t lo = l.bits[0], hi = l.lanes > 64 ? l.bits[1] : 0;
  if (hi == 0) return (lo & (lo + 1)) == 0 ? __builtin_popcountll(lo) : -1;
  if (lo != ~0ull || (hi & (hi + 1)) != 0) return -1;
  return 64 + __builtin_popcountll(hi);
}

// One operand of a level-0 call: element e of repeat r, strides in 32-byte data blocks.
template <typename T>
struct Strided {
  T *base;
  uint64_t blk, rep;
  uint64_t end;  // elements up to the last data block an active lane touches
  static constexpr uint32_t kPerBlock = ONE_BLK_SIZE / sizeof(T);
  T &At(uint32_t r, uint32_t e) const {
    return base[(r * rep + e / kPerBlock * blk) * kPerBlock + e % kPerBlock];
  }
};

// Checks operand t (aligned, every active element inside its buffer) and records its data
// blocks as V-pipe reads or writes. `width` is the lanes' element size (the widest operand's),
// lanes map to t's blocks by t's own element size.
template <typename T>
inline Strided<T> Operand(const char *call, const LocalTensor<T> &t, const Lanes &l, uint64_t blk, uint64_t rep,
                          bool write) {
  UbAligned(call, t.TwinData());
  constexpr uint32_t per = Strided<T>::kPerBlock;
  const uint32_t blocks = (l.lanes + per - 1) / per;
  const int64_t prefix = PrefixLanes(l);
  if (prefix >= 0 && blk <= 1) {
    // The active blocks of a repeat are one run of adjacent blocks (blk 1) or one block (blk 0).
    const uint64_t used = (uint64_t(prefix) + per - 1) / per, run = (blk == 1 ? used : used != 0) * per;
    for (uint32_t r = 0; run != 0 && r < l.repeats; ++r) {
      const uint64_t first = r * rep * per;
      if (first + run > t.TwinCap()) UbOutOfRange(call, first + run, t.TwinCap());
      write ? UbWrite(kPipeV, call, t.TwinData() + first, run * sizeof(T))
            : UbRead(kPipeV, call, t.TwinData() + first, run * sizeof(T));
    }
    const uint64_t end = run == 0 || l.repeats == 0 ? 0 : (uint64_t(l.repeats) - 1) * rep * per + run;
    return Strided<T>{t.TwinData(), blk, rep, end};
  }
  uint64_t end = 0;
  for (uint32_t r = 0; r < l.repeats; ++r)
    for (uint32_t b = 0; b < blocks; ++b) {
      if (!l.AnyOn(r, b * per, std::min(l.lanes, (b + 1) * per))) continue;
      const uint64_t first = (r * rep + b * blk) * per;
      end = std::max(end, first + per);
      if (first + per > t.TwinCap()) UbOutOfRange(call, first + per, t.TwinCap());
      write ? UbWrite(kPipeV, call, t.TwinData() + first, ONE_BLK_SIZE)
            : UbRead(kPipeV, call, t.TwinData() + first, ONE_BLK_SIZE);
    }
  return Strided<T>{t.TwinData(), blk, rep, end};
}

// With the usual masks (PrefixLanes), f(r, e0, n) for each run of n <= kPerBlock active lanes
// e0 .. e0 + n - 1 of repeat r that lie in one data block of T, so adjacent in every operand: the
// caller's loop over them vectorizes. False (nothing done) for other masks.
template <typename T, class F>
inline bool ForBlocks(const Lanes &l, F f) {
  const int64_t prefix = PrefixLanes(l);
  if (prefix < 0) return false;
  constexpr uint32_t per = Strided<T>::kPerBlock;
  for (uint32_t r = 0; r < l.repeats; ++r)
    for (uint32_t e0 = 0; e0 < uint32_t(prefix); e0 += per) f(r, e0, std::min<uint32_t>(per, uint32_t(prefix) - e0));
  return true;
}

// g(k) for k in [0, n), n <= per: a whole block as a loop of constant length.
template <uint32_t per, class G>
inline void InBlock(uint32_t n, G g) {
  if (n == per) {
    for (uint32_t k = 0; k < per; ++k) g(k);
  } else {
    for (uint32_t k = 0; k < n; ++k) g(k);
  }
}

// f(r, e) for every active lane.
template <class F>
inline void ForLanes(const Lanes &l, F f) {
  const int64_t prefix = PrefixLanes(l);
  if (prefix >= 0) {
    for (uint32_t r = 0; r < l.repeats; ++r)
      for (uint32_t e = 0; e < uint32_t(prefix); ++e) f(r, e);
    return;
  }
  for (uint32_t r = 0; r < l.repeats; ++r)
    for (uint32_t e = 0; e < l.lanes; ++e)
      if (l.On(r, e)) f(r, e);
}

}  // namespace twin_detail
}  // namespace AscendC

#endif  // MS_OPS_TWIN_MASK_H_
