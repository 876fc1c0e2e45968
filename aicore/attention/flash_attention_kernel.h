// Kernel-side pieces shared by flash_attention_score and flash_attention_score_grad: a sequence's
// lengths, GM offsets and visible key ranges, the mapping of work items to tiles, attn_mask rows,
// and copies. Kernel code only (includes kernel_operator.h through kernel_utils.h).
#ifndef MS_OPS_FLASH_ATTENTION_KERNEL_H_
#define MS_OPS_FLASH_ATTENTION_KERNEL_H_

#include "../common/kernel_utils.h"
#include "flash_attention_tiling_data.h"

namespace ms_ops {
namespace kernel {

// Start of every running max and the score of a masked-out key: the most negative finite float,
// so that exp(old - new) is 0 or 1, never the NaN of exp(-inf - (-inf)).
constexpr float kFaLowest = -3.40282347e+38f;

// The shift exp(score - shift) uses is the row max raised to at least this: a row whose keys so far
// are all invisible or masked (max kFaLowest) then gets exp(kFaLowest - floor) = 0, not exp(0) = 1,
// for them. Real scores are far above it, so their shift is their max.
constexpr float kFaShiftFloor = -1.0e30f;

constexpr uint32_t kFaLanes = kVecLanes;
// A UB tile of fp32 scores (or T probabilities) has rows of a multiple of 16 elements, so that its
// fp32 and 16-bit rows both start on 32-byte blocks.
constexpr uint32_t kFaRowAlign = 16;

__aicore__ inline uint32_t FaPitch(int64_t cols) {
  return static_cast<uint32_t>((cols + kFaRowAlign - 1) / kFaRowAlign * kFaRowAlign);
}

// Rows of a UB tile of `pitch`-element rows that fit `bytes` of fp32 (RowsIn; rows of at least 64
// lanes, as FaRowReduce's scratch has).
__aicore__ inline uint32_t FaChunkRows(uint32_t pitch, uint32_t bytes) {
  return RowsIn(bytes, (pitch > kFaLanes ? pitch : kFaLanes) * 4);
}

// One sequence b: its lengths, its first packed row (TND; 0 otherwise), and its visible keys:
// key j is visible to query i iff i + low <= j <= i + high, or j < prefix (modes 5 and 6, where
// low is unbounded, so the visible keys stay one range).
struct FaSeg {
  int64_t b, s1, s2, qStart, kStart, low, high, prefix;
};

// The inputs that describe the sequences and their masks.
struct FaSeqGm {
  AscendC::GlobalTensor<int64_t> cumQ, cumKv, prefix;
};

__aicore__ inline FaSeg FaSegment(const FlashAttentionTilingData &td, const FaSeqGm &g, int64_t b) {
  FaSeg s;
  s.b = b;
  if (td.packed) {
    s.qStart = b > 0 ? g.cumQ.GetValue(b - 1) : 0;
    s.kStart = b > 0 ? g.cumKv.GetValue(b - 1) : 0;
    s.s1 = g.cumQ.GetValue(b) - s.qStart;
    s.s2 = g.cumKv.GetValue(b) - s.kStart;
  } else {
    s.qStart = s.kStart = 0;
    s.s1 = td.seq1;
    s.s2 = td.seq2;
  }
  int64_t mode = td.sparseMode;
  if (mode == 7) mode = b == td.bandBatch ? 4 : 3;
  if (mode == 8) mode = b == td.bandBatch ? 4 : 2;
  const int64_t corner = s.s2 - s.s1;  // the bottom-right anchor of modes 3 to 6
  s.prefix = 0;
  s.low = -kFaFar;
  s.high = kFaFar;
  if (mode == 0) {
    s.low = -td.preTokens;
    s.high = td.nextTokens;
  } else if (mode == 2) {
    s.high = 0;
  } else if (mode == 3) {
    s.high = corner;
  } else if (mode == 4) {
    s.low = corner - td.preTokens;
    s.high = corner + td.nextTokens;
  } else if (mode == 5 || mode == 6) {
    s.high = corner;
    s.prefix = td.hasPrefix ? g.prefix.GetValue(b) : 0;
  }
  return s;
}

// The GM views of the optional inputs that the problem uses (the others are placeholders).
__aicore__ inline void FaBindSequences(FaSeqGm &g, AscendC::GlobalTensor<uint8_t> &mask, GM_ADDR maskIn,
                                       GM_ADDR prefix, GM_ADDR cumQ, GM_ADDR cumKv,
                                       const FlashAttentionTilingData &td) {
  if (td.packed) {
    g.cumQ.SetGlobalBuffer((__gm__ int64_t *)cumQ, uint64_t(td.batch));
    g.cumKv.SetGlobalBuffer((__gm__ int64_t *)cumKv, uint64_t(td.batch));
  }
  if (td.hasPrefix) g.prefix.SetGlobalBuffer((__gm__ int64_t *)prefix, uint64_t(td.batch));
  if (td.hasMask) mask.SetGlobalBuffer((__gm__ uint8_t *)maskIn, uint64_t(td.maskElems));
}

// The sequence and first row of work tile `tile` (of `rows` rows), counting the tiles of all
// sequences in order; `query` picks the query or the key side.
__aicore__ inline FaSeg FaLocate(const FlashAttentionTilingData &td, const FaSeqGm &g, bool query, int64_t tile,
                                 int64_t rows, int64_t &r0) {
  if (!td.packed) {
    const int64_t len = query ? td.seq1 : td.seq2, per = (len + rows - 1) / rows;
    r0 = (tile % per) * rows;
    return FaSegment(td, g, tile / per);
  }
  const AscendC::GlobalTensor<int64_t> &cum = query ? g.cumQ : g.cumKv;
  int64_t prev = 0;
  for (int64_t b = 0; b < td.batch; ++b) {
    const int64_t end = cum.GetValue(b), n = (end - prev + rows - 1) / rows;
    if (tile < n) {
      r0 = tile * rows;
      return FaSegment(td, g, b);
    }
    tile -= n;
    prev = end;
  }
  r0 = 0;
  return FaSegment(td, g, td.batch - 1);
}

// Keys [lo, hi) of tile [k0, k0 + n) that query row s sees, relative to k0; lo >= hi when none.
__aicore__ inline void FaVisible(const FaSeg &sg, int64_t s, int64_t k0, int64_t n, int64_t &lo, int64_t &hi) {
  int64_t a = s + sg.low, b = s + sg.high + 1;
  if (b < sg.prefix) b = sg.prefix;
  if (a < 0) a = 0;
  if (b > sg.s2) b = sg.s2;
  a -= k0;
  b -= k0;
  lo = a < 0 ? 0 : (a > n ? n : a);
  hi = b < 0 ? 0 : (b > n ? n : b);
}

// Whether any of query rows [q0, q0 + m) sees a key of [k0, k0 + n).
__aicore__ inline bool FaTileVisible(const FaSeg &sg, int64_t q0, int64_t m, int64_t k0, int64_t n) {
  const int64_t first = q0 + sg.low;
  int64_t last = q0 + m - 1 + sg.high;
  if (last < sg.prefix - 1) last = sg.prefix - 1;
  return last >= k0 && first <= k0 + n - 1 && last >= 0 && first <= sg.s2 - 1;
}

// The keys query rows [q0, q0 + m) see lie in [FaKeysBegin, FaKeysEnd): a tile loop over them
// skips the fully masked keys of causal and band masks, and a key tile is cut at the end, so that
// a wide tile computes no scores that every row masks out. The begin is rounded down to the
// tiling's unit, so every tile starts where tiles of that unit would.
__aicore__ inline int64_t FaKeysBegin(const FaSeg &sg, int64_t q0) {
  const int64_t a = q0 + sg.low;
  return a <= 0 ? 0 : (a < sg.s2 ? a : sg.s2) / kFaTileUnit * kFaTileUnit;
}

__aicore__ inline int64_t FaKeysEnd(const FaSeg &sg, int64_t q0, int64_t m) {
  int64_t b = q0 + m + sg.high;
  if (b < sg.prefix) b = sg.prefix;
  return b < 0 ? 0 : (b < sg.s2 ? b : sg.s2);
}

__aicore__ inline int64_t FaQBase(const FlashAttentionTilingData &td, const FaSeg &sg, int64_t n1) {
  return sg.b * td.qStrideB + sg.qStart * td.qRow + n1 * td.qStrideN;
}

__aicore__ inline int64_t FaKBase(const FlashAttentionTilingData &td, const FaSeg &sg, int64_t n1) {
  return sg.b * td.kStrideB + sg.kStart * td.kRow + (n1 / (td.heads1 / td.heads2)) * td.kStrideN;
}

// Head n1's value rows (GQA: its key/value head's) and attention_out rows, dimV elements each.
__aicore__ inline int64_t FaVBase(const FlashAttentionTilingData &td, const FaSeg &sg, int64_t n1) {
  return sg.b * td.vStrideB + sg.kStart * td.vRow + (n1 / (td.heads1 / td.heads2)) * td.vStrideN;
}

__aicore__ inline int64_t FaOBase(const FlashAttentionTilingData &td, const FaSeg &sg, int64_t n1) {
  return sg.b * td.oStrideB + sg.qStart * td.oRow + n1 * td.oStrideN;
}

// Row q0 of head n1's softmax_max / softmax_sum (8 floats a row, statRow apart).
__aicore__ inline int64_t FaStatBase(const FlashAttentionTilingData &td, const FaSeg &sg, int64_t n1, int64_t q0) {
  return sg.b * td.statStrideB + (sg.qStart + q0) * td.statRow + n1 * td.statStrideN;
}

// attn_mask element (query row s, key j) of sequence sg, head n1.
__aicore__ inline uint64_t FaMaskAt(const FlashAttentionTilingData &td, const FaSeg &sg, int64_t n1, int64_t s,
                                    int64_t j) {
  return uint64_t(sg.b * td.maskStrideB + n1 * td.maskStrideN + s * td.maskRow + j);
}

// fp32 UB row into a T row (a copy for float).
template <typename T>
__aicore__ inline void FaNarrow(const AscendC::LocalTensor<T> &out, const AscendC::LocalTensor<float> &in,
                                uint32_t len) {
  if constexpr (AscendC::IsSameType<T, float>::value) {
    AscendC::Adds(out, in, 0.0f, len);
  } else {
    AscendC::Cast(out, in, AscendC::RoundMode::CAST_RINT, len);
  }
}

// GM rows [rows x cols] (row stride `ld` elements) into a UB tile of `pitch`-element rows.
template <typename T>
__aicore__ inline void FaTileIn(const AscendC::LocalTensor<T> &dst, const AscendC::GlobalTensor<T> &src, uint32_t rows,
                                uint32_t cols, int64_t ld, uint32_t pitch) {
  const uint32_t bytes = cols * sizeof(T), padded = (bytes + kUbAlign - 1) / kUbAlign * kUbAlign;
  AscendC::DataCopyPad(dst, src,
                       AscendC::DataCopyExtParams(static_cast<uint16_t>(rows), bytes,
                                                  static_cast<uint32_t>((ld - cols) * sizeof(T)),
                                                  (pitch * sizeof(T) - padded) / kUbAlign, 0),
                       AscendC::DataCopyPadExtParams<T>(false, 0, 0, 0));
}

// A UB tile of `pitch`-element rows into GM rows [rows x cols] (row stride `ld` elements).
template <typename T>
__aicore__ inline void FaTileOut(const AscendC::GlobalTensor<T> &dst, const AscendC::LocalTensor<T> &src, uint32_t rows,
                                 uint32_t cols, int64_t ld, uint32_t pitch) {
  const uint32_t bytes = cols * sizeof(T), padded = (bytes + kUbAlign - 1) / kUbAlign * kUbAlign;
  AscendC::DataCopyPad(dst, src,
                       AscendC::DataCopyExtParams(static_cast<uint16_t>(rows), bytes,
                                                  (pitch * sizeof(T) - padded) / kUbAlign,
                                                  static_cast<uint32_t>((ld - cols) * sizeof(T)), 0));
}

// dst = max(a, b) or a + b over `lanes` lanes of `rows` repeats.
template <bool isMax>
__aicore__ inline void FaFoldOp(const AscendC::LocalTensor<float> &dst, const AscendC::LocalTensor<float> &a,
                                const AscendC::LocalTensor<float> &b, uint64_t lanes, uint8_t rows,
                                const AscendC::BinaryRepeatParams &p) {
  if constexpr (isMax) {
    AscendC::Max(dst, a, b, lanes, rows, p);
  } else {
    AscendC::Add(dst, a, b, lanes, rows, p);
  }
}

// dst[r] = max (isMax) or sum of the first `cols` elements of row r of a [rows x pitch] fp32 tile,
// over the whole tile at once: the row's 64-lane column blocks are merged into 64 lanes, halved to
// 8 lanes (32, 16, 8: `fold` holds two [rows x 64] scratch tiles, so no call reads what it
// writes), and those reduced. The padding columns are not read.
template <bool isMax>
__aicore__ inline void FaRowReduce(const AscendC::LocalTensor<float> &dst, const AscendC::LocalTensor<float> &src,
                                   const AscendC::LocalTensor<float> &fold, uint32_t rows, uint32_t pitch,
                                   uint32_t cols) {
  const uint8_t rep = static_cast<uint8_t>(pitch / 8), n = static_cast<uint8_t>(rows);
  const AscendC::LocalTensor<float> a = fold, b = fold[rows * kFaLanes];
  uint32_t c = kFaLanes;
  if (cols >= 2 * kFaLanes) {
    FaFoldOp<isMax>(a, src, src[kFaLanes], kFaLanes, n, AscendC::BinaryRepeatParams(1, 1, 1, 8, rep, rep));
    c = 2 * kFaLanes;
  } else {
    // Short rows: the lanes past the row hold the reduction's neutral element.
    if (cols < kFaLanes) AscendC::Duplicate(a, isMax ? kFaLowest : 0.0f, static_cast<int32_t>(rows * kFaLanes));
    AscendC::Copy(a, src, cols < kFaLanes ? cols : kFaLanes, n, AscendC::CopyRepeatParams(1, 1, 8, rep));
  }
  for (; c < cols; c += kFaLanes) {
    const uint64_t lanes = cols - c < kFaLanes ? cols - c : kFaLanes;
    FaFoldOp<isMax>(a, a, src[c], lanes, n, AscendC::BinaryRepeatParams(1, 1, 1, 8, 8, rep));
  }
  // Pairwise halving keeps the sums' rounding error that of a tree, not of a long running sum.
  AscendC::LocalTensor<float> from = a, to = b;
  for (uint32_t w = kFaLanes / 2; w >= 8; w /= 2) {
    FaFoldOp<isMax>(to, from, from[w], w, n, AscendC::BinaryRepeatParams(1, 1, 1, 8, 8, 8));
    const AscendC::LocalTensor<float> t = from;
    from = to;
    to = t;
  }
  if constexpr (isMax) {
    AscendC::WholeReduceMax(dst, from, 8, n, 1, 1, 8, AscendC::ReduceOrder::ORDER_ONLY_VALUE);
  } else {
    AscendC::WholeReduceSum(dst, from, 8, n, 1, 1, 8);
  }
}

// Bits 0 .. n-1 of a 64-lane mask (n clamped to [0, 64]).
__aicore__ inline uint64_t FaFirstLanes(int64_t n) {
  return n >= 64 ? ~uint64_t(0) : (n <= 0 ? uint64_t(0) : (uint64_t(1) << n) - 1);
}

// A UB row of `cols` fp32 scores keeps columns [lo, hi); the others (keys the row does not see)
// become kFaLowest, one masked Duplicate per 64-lane block that has any.
__aicore__ inline void FaKeepColumns(const AscendC::LocalTensor<float> &row, uint32_t cols, int64_t lo, int64_t hi) {
  if (lo <= 0 && hi >= cols) return;
  for (uint32_t c = 0; c < cols; c += kFaLanes) {
    const int64_t lanes = cols - c < kFaLanes ? cols - c : kFaLanes;
    const uint64_t dead = FaFirstLanes(lanes) & ~(FaFirstLanes(hi - c) & ~FaFirstLanes(lo - c));
    if (dead == 0) continue;
    uint64_t mask[2] = {dead, 0};
    AscendC::Duplicate(row[c], kFaLowest, mask, 1, 1, 8);
  }
}

// `rows` statistic rows of 8 floats (32 bytes, one UB block each), `pitch` floats apart in GM.
__aicore__ inline void FaStatsOut(const AscendC::GlobalTensor<float> &dst, const AscendC::LocalTensor<float> &src,
                                  uint32_t rows, int64_t pitch) {
  AscendC::DataCopyPad(dst, src,
                       AscendC::DataCopyExtParams(static_cast<uint16_t>(rows), 32, 0,
                                                  static_cast<uint32_t>((pitch - 8) * 4), 0));
}

__aicore__ inline void FaStatsIn(const AscendC::LocalTensor<float> &dst, const AscendC::GlobalTensor<float> &src,
                                 uint32_t rows, int64_t pitch) {
  AscendC::DataCopyPad(dst, src,
                       AscendC::DataCopyExtParams(static_cast<uint16_t>(rows), 32,
                                                  static_cast<uint32_t>((pitch - 8) * 4), 0, 0),
                       AscendC::DataCopyPadExtParams<float>(false, 0, 0, 0));
}

// real_shift element (query row i, key j) of sequence sg, head n1 (pseKind 1).
__aicore__ inline uint64_t FaPseAt(const FlashAttentionTilingData &td, const FaSeg &sg, int64_t n1, int64_t i,
                                   int64_t j) {
  int64_t row = i;
  if (td.pseBase >= 0) {
    // ALiBi depends on j - i only: row i < pseBase reads compressed row 0, shifted.
    row = i > td.pseBase ? i - td.pseBase : 0;
    j += td.pseBase + row - i;
  }
  return uint64_t(sg.b * td.pseStrideB + n1 * td.pseStrideN + row * td.pseRow + j);
}

// The UB rows and GM views real_shift needs (pseKind > 0).
template <typename T>
struct FaPseBufs {
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> inQ;  // a pse row segment (T)
  AscendC::TBuf<AscendC::TPosition::VECCALC> bias;    // fp32 bias row
  AscendC::TBuf<AscendC::TPosition::VECCALC> ramp;    // 0, 1, ..., nTile - 1 (slopes)
  AscendC::GlobalTensor<T> tensor;
  AscendC::GlobalTensor<float> slopes;
};

template <typename T>
__aicore__ inline void FaInitPse(AscendC::TPipe &pipe, FaPseBufs<T> &pb, GM_ADDR pse,
                                 const FlashAttentionTilingData &td) {
  if (td.pseKind == 0) return;
  const uint32_t row = UbBytes(td.nTile, 4);
  pipe.InitBuffer(pb.inQ, 1, row);
  pipe.InitBuffer(pb.bias, row);
  pipe.InitBuffer(pb.ramp, row);
  if (td.pseKind == 1) {
    pb.tensor.SetGlobalBuffer((__gm__ T *)pse, uint64_t(td.pseElems));
    return;
  }
  pb.slopes.SetGlobalBuffer((__gm__ float *)pse, uint64_t(td.pseElems));
  AscendC::LocalTensor<float> r = pb.ramp.template Get<float>();
  for (uint32_t x = 0; x < td.nTile; ++x) r.SetValue(x, static_cast<float>(x));
  OrderPipes<AscendC::HardEvent::S_V>(&pipe);
}

// `len` raw scores Q Kᵀ of query row i, keys from j0, into the logits the softmax sees: scale * s,
// with real_shift added before (pse_type 1) or after (0) the scaling, or the ALiBi bias of the
// slopes (2: -slope*|i - j|, 3: -slope*sqrt|i - j|) after it.
template <typename T>
__aicore__ inline void FaLogits(const FlashAttentionTilingData &td, FaPseBufs<T> &pb, const FaSeg &sg, int64_t n1,
                                int64_t i, int64_t j0, const AscendC::LocalTensor<float> &s, uint32_t len) {
  if (td.pseKind == 0) {
    AscendC::Muls(s, s, td.scale, len);
    return;
  }
  AscendC::LocalTensor<float> bias = pb.bias.template Get<float>();
  if (td.pseKind == 1) {
    AscendC::LocalTensor<T> raw = pb.inQ.template AllocTensor<T>();
    CopyIn(raw, pb.tensor[FaPseAt(td, sg, n1, i, j0)], len);
    pb.inQ.EnQue(raw);
    raw = pb.inQ.template DeQue<T>();
    if constexpr (AscendC::IsSameType<T, float>::value) {
      AscendC::Adds(bias, raw, 0.0f, len);
    } else {
      AscendC::Cast(bias, raw, AscendC::RoundMode::CAST_NONE, len);
    }
    pb.inQ.FreeTensor(raw);
    if (td.pseAddFirst) AscendC::Add(s, s, bias, len);
    AscendC::Muls(s, s, td.scale, len);
    if (!td.pseAddFirst) AscendC::Add(s, s, bias, len);
    return;
  }
  const float slope = pb.slopes.GetValue(uint64_t(sg.b * td.pseStrideB + n1));
  AscendC::Adds(bias, pb.ramp.template Get<float>(), static_cast<float>(j0 - i), len);
  AscendC::Abs(bias, bias, len);
  if (td.pseKind == 3) AscendC::Sqrt(bias, bias, len);
  AscendC::Muls(bias, bias, -slope, len);
  AscendC::Muls(s, s, td.scale, len);
  AscendC::Add(s, s, bias, len);
}

// attn_mask applied to `len` scaled scores of one row (UB, fp32): a masked-out key's score becomes
// kFaLowest, and `keep` gets 1 for the keys kept, 0 for the masked ones. The mask bytes (bool or
// uint8, 1 = masked out) come from GM through `maskQ`; `half` and `pen` are scratch rows.
__aicore__ inline void FaApplyMask(AscendC::TQue<AscendC::QuePosition::VECIN, 1> &maskQ,
                                   const AscendC::LocalTensor<half> &halfRow, const AscendC::LocalTensor<float> &pen,
                                   const AscendC::LocalTensor<float> &keep, const AscendC::LocalTensor<float> &s,
                                   const AscendC::GlobalTensor<uint8_t> &mask, uint32_t len) {
  AscendC::LocalTensor<uint8_t> m = maskQ.AllocTensor<uint8_t>();
  CopyIn(m, mask, len);
  maskQ.EnQue(m);
  m = maskQ.DeQue<uint8_t>();
  AscendC::Cast(halfRow, m, AscendC::RoundMode::CAST_NONE, len);
  maskQ.FreeTensor(m);
  AscendC::Cast(pen, halfRow, AscendC::RoundMode::CAST_NONE, len);
  AscendC::Muls(keep, pen, -1.0f, len);
  AscendC::Adds(keep, keep, 1.0f, len);
  AscendC::Muls(pen, pen, kFaLowest, len);
  AscendC::Mul(s, s, keep, len);
  AscendC::Add(s, s, pen, len);
}

// What turns a score tile into logits row by row (FaTileLogits), with real_shift or attn_mask: the
// row queues, attn_mask's GM view and scratch rows (FaApplyMask), real_shift's buffers.
template <typename T>
struct FaLogitBufs {
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> rowQ, maskQ;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> rowOutQ;
  AscendC::TBuf<AscendC::TPosition::VECCALC> halfRow, pen, keep;
  AscendC::GlobalTensor<uint8_t> mask;  // bound by FaBindSequences
  FaPseBufs<T> pse;
};

template <typename T>
__aicore__ inline void FaInitLogits(AscendC::TPipe &pipe, FaLogitBufs<T> &lb, GM_ADDR pse,
                                    const FlashAttentionTilingData &td) {
  const uint32_t nt = td.nTile;
  if (td.pseKind != 0 || td.hasMask) {
    pipe.InitBuffer(lb.rowQ, 1, UbBytes(nt, 4));
    pipe.InitBuffer(lb.rowOutQ, 1, UbBytes(nt, 4));
  }
  if (td.hasMask) {
    pipe.InitBuffer(lb.maskQ, 1, UbBytes(nt, 1));
    pipe.InitBuffer(lb.halfRow, UbBytes(nt, 2));
    pipe.InitBuffer(lb.pen, UbBytes(nt, 4));
    pipe.InitBuffer(lb.keep, UbBytes(nt, 4));
  }
  FaInitPse(pipe, lb.pse, pse, td);
}

// Each row's visible raw scores of the [mt, nt] tile `s` (GM, fp32, rows nt apart) become their
// logits (FaLogits, FaApplyMask: masked keys kFaLowest), row by row, before the whole-tile pass.
template <typename T>
__aicore__ inline void FaTileLogits(AscendC::TPipe &pipe, FaLogitBufs<T> &lb, const FlashAttentionTilingData &td,
                                    const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt, int64_t k0, uint32_t nt,
                                    const AscendC::GlobalTensor<float> &s) {
  for (uint32_t i = 0; i < mt; ++i) {
    int64_t lo, hi;
    FaVisible(sg, q0 + i, k0, nt, lo, hi);
    if (hi <= lo) continue;
    const uint32_t len = static_cast<uint32_t>(hi - lo);
    AscendC::LocalTensor<float> x = lb.rowQ.template AllocTensor<float>();
    CopyIn(x, s[uint64_t(i) * nt + lo], len);
    lb.rowQ.EnQue(x);
    x = lb.rowQ.template DeQue<float>();
    FaLogits(td, lb.pse, sg, n1, q0 + i, k0 + lo, x, len);
    if (td.hasMask)
      FaApplyMask(lb.maskQ, lb.halfRow.template Get<half>(), lb.pen.template Get<float>(),
                  lb.keep.template Get<float>(), x, lb.mask[FaMaskAt(td, sg, n1, q0 + i, k0 + lo)], len);
    AscendC::LocalTensor<float> o = lb.rowOutQ.template AllocTensor<float>();
    AscendC::Adds(o, x, 0.0f, len);
    lb.rowQ.FreeTensor(x);
    lb.rowOutQ.EnQue(o);
    o = lb.rowOutQ.template DeQue<float>();
    CopyOut(s[uint64_t(i) * nt + lo], o, len);
    lb.rowOutQ.FreeTensor(o);
  }
  // The whole-tile pass reads the rows just written.
  OrderPipes<AscendC::HardEvent::MTE3_MTE2>(&pipe);
}

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_KERNEL_H_
