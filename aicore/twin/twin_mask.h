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
  // The lanes of repeat r that are on, as a 128-bit set (lanes 0..63 in on[0]).
  void Of(uint32_t r, uint64_t on[2]) const {
    if (!counter) {
      on[0] = lanes < 64 ? bits[0] & ((1ull << lanes) - 1) : bits[0];
      on[1] = lanes <= 64 ? 0 : (lanes < 128 ? bits[1] & ((1ull << (lanes - 64)) - 1) : bits[1]);
      return;
    }
    const uint64_t done = uint64_t(r) * lanes;
    FirstLanes(count > done ? static_cast<uint32_t>(std::min<uint64_t>(lanes, count - done)) : 0, on);
  }
};

// The runs of adjacent active lanes of one repeat, each inside one group of `per` lanes (per
// divides 64: a data block of an operand, or 64 for whole words), and the groups that have any.
struct Runs {
  uint8_t e0[128], n[128];
  uint32_t count;
  uint32_t groups;  // bit g: group g has an active lane (at most 8 groups of data blocks)
};

// Word-level bit scans: a mask of any shape costs one step per run, not one per lane.
inline void RunsOf(const uint64_t on[2], uint32_t per, Runs *out) {
  out->count = 0;
  out->groups = 0;
  for (uint32_t w = 0; w < 2; ++w) {
    uint64_t m = on[w];
    while (m != 0) {
      const uint32_t s = __builtin_ctzll(m);
      const uint64_t rest = ~(m >> s);
      uint32_t len = rest == 0 ? 64 - s : __builtin_ctzll(rest);
      m = len + s >= 64 ? 0 : m & ~(((1ull << len) - 1) << s);
      for (uint32_t e0 = w * 64 + s; len != 0;) {
        const uint32_t n = std::min(len, per - e0 % per);
        out->e0[out->count] = static_cast<uint8_t>(e0);
        out->n[out->count++] = static_cast<uint8_t>(n);
        if (e0 / per < 32) out->groups |= 1u << (e0 / per);
        e0 += n;
        len -= n;
      }
    }
  }
}

// f(r, runs) for every repeat. The runs are worked out once: every repeat has the same lanes in
// normal mode, and all but the last (partial) one all lanes in counter mode.
template <class F>
inline void ForRepeatRuns(const Lanes &l, uint32_t per, F f) {
  if (l.repeats == 0) return;
  uint64_t on[2];
  Runs same, last;
  l.Of(0, on);
  RunsOf(on, per, &same);
  for (uint32_t r = 0; r < l.repeats; ++r) {
    if (l.counter && uint64_t(r + 1) * l.lanes > l.count) {
      l.Of(r, on);
      RunsOf(on, per, &last);
      f(r, last);
    } else {
      f(r, same);
    }
  }
}

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

// The groups of `per` lanes (per divides 64) that have an active lane, as RunsOf counts them.
inline uint32_t GroupsOf(const uint64_t on[2], uint32_t per) {
  uint32_t groups = 0;
  for (uint32_t e0 = 0; e0 < 128 && e0 / per < 32; e0 += per) {
    const uint64_t word = on[e0 >> 6] >> (e0 & 63);
    if ((per >= 64 ? word : word & ((1ull << per) - 1)) != 0) groups |= 1u << (e0 / per);
  }
  return groups;
}

// Checks operand t (aligned, every active element inside its buffer) and records the data blocks
// its active lanes touch as V-pipe reads or writes, adjacent blocks (block stride 1) as one access.
// `l.lanes` is set by the widest operand's element size; lanes map to t's blocks by t's own.
template <typename T>
inline Strided<T> Operand(const char *call, const LocalTensor<T> &t, const Lanes &l, uint64_t blk, uint64_t rep,
                          bool write) {
  UbAligned(call, t.TwinData());
  constexpr uint32_t per = Strided<T>::kPerBlock;
  // Untracked, only the furthest block matters (the bounds and the reserved-UB check): in normal
  // mode every repeat has the same blocks and the strides are not negative, so it is the last
  // repeat's last block. Out of bounds, the walk below reports the first access past the end.
  if (!Races().Tracking() && !l.counter) {
    uint64_t on[2];
    l.Of(0, on);
    const uint32_t used = GroupsOf(on, per);
    if (l.repeats == 0 || used == 0) return Strided<T>{t.TwinData(), blk, rep, 0};
    const uint64_t first = (uint64_t(l.repeats - 1) * rep + (31 - __builtin_clz(used)) * blk) * per;
    if (first + per <= t.TwinCap()) {
      write ? UbWrite(kPipeV, call, t.TwinData() + first, ONE_BLK_SIZE)
            : UbRead(kPipeV, call, t.TwinData() + first, ONE_BLK_SIZE);
      return Strided<T>{t.TwinData(), blk, rep, first + per};
    }
  }
  uint64_t end = 0;
  auto access = [&](uint64_t first, uint64_t blocks) {
    const uint64_t last = first + blocks * per;
    if (last > t.TwinCap()) UbOutOfRange(call, last, t.TwinCap());
    end = std::max(end, last);
    write ? UbWrite(kPipeV, call, t.TwinData() + first, blocks * ONE_BLK_SIZE)
          : UbRead(kPipeV, call, t.TwinData() + first, blocks * ONE_BLK_SIZE);
  };
  ForRepeatRuns(l, per, [&](uint32_t r, const Runs &runs) {
    uint32_t used = runs.groups;  // the blocks with an active lane (at most 8: lanes * sizeof(T) <= 256 bytes)
    if (blk == 0) {
      if (used != 0) access(r * rep * per, 1);
      return;
    }
    while (used != 0) {
      const uint32_t b = __builtin_ctz(used);
      const uint32_t run = blk == 1 ? __builtin_ctz(~(used >> b)) : 1;
      access((r * rep + b * blk) * per, run);
      used &= ~(((1u << run) - 1) << b);
    }
  });
  return Strided<T>{t.TwinData(), blk, rep, end};
}

// f(r, e0, n) for each run of n <= kPerBlock active lanes e0 .. e0 + n - 1 of repeat r that lie in
// one data block of T, so adjacent in every operand of T: the caller's loop over them vectorizes.
template <typename T, class F>
inline void ForBlocks(const Lanes &l, F f) {
  ForRepeatRuns(l, Strided<T>::kPerBlock, [&](uint32_t r, const Runs &runs) {
    for (uint32_t i = 0; i < runs.count; ++i) f(r, runs.e0[i], runs.n[i]);
  });
}

// The whole data blocks of 32-bit lanes every repeat has when its active lanes are the first
// 8 * blocks of the repeat in normal mode; 0 otherwise.
inline uint32_t LeadingBlocks32(const Lanes &l) {
  if (l.counter || l.lanes != 64) return 0;
  uint64_t on[2];
  l.Of(0, on);
  const uint64_t m = on[0];
  if (on[1] != 0 || m == 0 || (m & (m + 1)) != 0) return 0;
  const uint32_t n = static_cast<uint32_t>(__builtin_popcountll(m));
  return n % 8 == 0 ? n / 8 : 0;
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

// f(r, e) for every active lane, in order.
template <class F>
inline void ForLanes(const Lanes &l, F f) {
  ForRepeatRuns(l, 64, [&](uint32_t r, const Runs &runs) {
    for (uint32_t i = 0; i < runs.count; ++i)
      for (uint32_t e = runs.e0[i]; e < uint32_t(runs.e0[i]) + runs.n[i]; ++e) f(r, e);
  });
}

}  // namespace twin_detail
}  // namespace AscendC

#endif  // MS_OPS_TWIN_MASK_H_
