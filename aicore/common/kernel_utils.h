// Small AscendC helpers shared by the op kernels (kernel code only: it includes kernel_operator.h).
// Every GM access here still goes through GlobalTensor and DataCopyPad.
#ifndef MS_OPS_COMMON_KERNEL_UTILS_H_
#define MS_OPS_COMMON_KERNEL_UTILS_H_

#include "kernel_operator.h"

namespace ms_ops {
namespace kernel {

constexpr uint32_t kUbAlign = 32;  // UB buffers start and end on 32-byte blocks

// Bytes of a UB buffer holding `elems` elements of `elemBytes`, rounded up to whole blocks.
__aicore__ inline uint32_t UbBytes(int64_t elems, uint32_t elemBytes) {
  return static_cast<uint32_t>((elems * elemBytes + kUbAlign - 1) / kUbAlign * kUbAlign);
}

__aicore__ inline int64_t Min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Rows [r0, r1) of `total` that block `block` of `blocks` owns: an even split, the first
// total % blocks blocks one row more.
__aicore__ inline void BlockShare(int64_t total, int64_t block, int64_t blocks, int64_t &r0, int64_t &r1) {
  const int64_t per = total / blocks, extra = total % blocks;
  r0 = block * per + Min64(block, extra);
  r1 = r0 + per + (block < extra ? 1 : 0);
}

// This block's item of round `round` when items sorted from the most expensive down are dealt to
// the blocks back and forth (0..B-1, then B-1..0, ...): the blocks' totals stay within about one
// item of each other, where round robin hands block 0 the largest item of every round.
__aicore__ inline int64_t DealtItem(int64_t round) {
  const int64_t b = AscendC::GetBlockIdx(), n = AscendC::GetBlockNum();
  return round * n + (round % 2 == 0 ? b : n - 1 - b);
}

// Orders two pipes of this core: everything issued on the first before this point completes
// before anything issued on the second after it.
template <AscendC::HardEvent EVT>
__aicore__ inline void OrderPipes(AscendC::TPipe *pipe) {
  const AscendC::TEventID id = pipe->FetchEventID(EVT);
  AscendC::SetFlag<EVT>(id);
  AscendC::WaitFlag<EVT>(id);
}

// DataCopyPad of `count` contiguous elements: unlike DataCopy it takes any byte length, so rows
// and index runs need not be multiples of 32 bytes.
template <typename T>
__aicore__ inline void CopyIn(const AscendC::LocalTensor<T> &dst, const AscendC::GlobalTensor<T> &src,
                              uint32_t count) {
  AscendC::DataCopyPad(dst, src, AscendC::DataCopyExtParams(1, count * sizeof(T), 0, 0, 0),
                       AscendC::DataCopyPadExtParams<T>(false, 0, 0, 0));
}

template <typename T>
__aicore__ inline void CopyOut(const AscendC::GlobalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                               uint32_t count) {
  AscendC::DataCopyPad(dst, src, AscendC::DataCopyExtParams(1, count * sizeof(T), 0, 0, 0));
}

// fp32 view of a UB chunk for the arithmetic: the chunk itself for float, else its cast into
// `scratch`.
template <typename T>
__aicore__ inline AscendC::LocalTensor<float> ToFloat(const AscendC::LocalTensor<T> &in,
                                                      AscendC::TBuf<AscendC::TPosition::VECCALC> &scratch,
                                                      uint32_t len) {
  if constexpr (AscendC::IsSameType<T, float>::value) {
    return in;
  } else {
    AscendC::LocalTensor<float> f = scratch.template Get<float>();
    AscendC::Cast(f, in, AscendC::RoundMode::CAST_NONE, len);
    return f;
  }
}

// fp32 lanes of one 256-byte vector repeat.
constexpr uint32_t kVecLanes = 64;

// Rows of `rowBytes` each that fit `bytes`: a multiple of 8 (one Brcb repeat of row statistics),
// at least 8, at most 248 (one level-0 call's repeats).
__aicore__ inline uint32_t RowsIn(uint32_t bytes, uint32_t rowBytes) {
  uint32_t rows = bytes / rowBytes / 8 * 8;
  if (rows < 8) rows = 8;
  return rows > 248 ? 248 : rows;
}

enum class RowOp { kSub, kMul };

// dst[r, :] = x[r, :] - b[r] (kSub) or * b[r] (kMul) for the rows of [rows x pitch] fp32 tiles
// (pitch a multiple of 8, rows at most 255; dst may be x), b[r] given as one 32-byte block of 8
// copies per row (`blocks`), read with block stride 0: one call per 64 columns for all rows.
template <RowOp op>
__aicore__ inline void RowsByBlocks(const AscendC::LocalTensor<float> &dst, const AscendC::LocalTensor<float> &x,
                                    const AscendC::LocalTensor<float> &blocks, uint32_t rows, uint32_t pitch) {
  const uint8_t rep = static_cast<uint8_t>(pitch / 8), n = static_cast<uint8_t>(rows);
  for (uint32_t c = 0; c < pitch; c += kVecLanes) {
    const uint64_t lanes = pitch - c < kVecLanes ? pitch - c : kVecLanes;
    const AscendC::BinaryRepeatParams p(1, 1, 0, rep, rep, 1);
    if constexpr (op == RowOp::kSub) {
      AscendC::Sub(dst[c], x[c], blocks, lanes, n, p);
    } else {
      AscendC::Mul(dst[c], x[c], blocks, lanes, n, p);
    }
  }
}

// The same with b[r] = col[r] of a contiguous vector (32-byte aligned, read in whole blocks of 8),
// broadcast into `brc` ([rows rounded up to 8, 8]) by Brcb first.
template <RowOp op>
__aicore__ inline void RowsBy(const AscendC::LocalTensor<float> &dst, const AscendC::LocalTensor<float> &x,
                              const AscendC::LocalTensor<float> &col, const AscendC::LocalTensor<float> &brc,
                              uint32_t rows, uint32_t pitch) {
  AscendC::Brcb(brc, col, static_cast<uint8_t>((rows + 7) / 8), AscendC::BrcbRepeatParams(1, 8));
  RowsByBlocks<op>(dst, x, brc, rows, pitch);
}

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_COMMON_KERNEL_UTILS_H_
