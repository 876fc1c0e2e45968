// Kernel-side pieces shared by sparse_flash_attention and sparse_flash_attention_grad: a query
// row's sequence and causal limit, the walk over its index list that yields the visible selected
// key positions, and the row copies that gather query/key rows (with their rope parts) and value
// rows into a block's workspace for the cube. Kernel code only.
#ifndef MS_OPS_SPARSE_FLASH_ATTENTION_KERNEL_H_
#define MS_OPS_SPARSE_FLASH_ATTENTION_KERNEL_H_

#include "../../common/kernel_utils.h"
#include "sparse_flash_attention_tiling.h"

namespace ms_ops {
namespace kernel {

// Start of every running max and the max of a row without visible keys: the most negative finite
// float, so that exp(old - new) is 0 or 1, never the NaN of exp(-inf - (-inf)).
constexpr float kSfaLowest = -3.40282347e+38f;

// One sequence: its lengths and its first query and key token rows.
struct SfaSeq {
  int64_t b, s1, s2, qStart, kStart;
};

__aicore__ inline SfaSeq SfaSequence(const SparseFlashAttentionTilingData &td, const AscendC::GlobalTensor<int64_t> &cumQ,
                                     const AscendC::GlobalTensor<int64_t> &cumKv, int64_t b) {
  SfaSeq s;
  s.b = b;
  if (td.packed) {
    s.qStart = b > 0 ? cumQ.GetValue(b - 1) : 0;
    s.s1 = cumQ.GetValue(b) - s.qStart;
    // Paged keys: per-sequence lengths and rows through the block table (no kStart).
    s.kStart = td.paged ? 0 : b > 0 ? cumKv.GetValue(b - 1) : 0;
    s.s2 = td.paged ? cumKv.GetValue(b) : cumKv.GetValue(b) - s.kStart;
  } else {
    // The padded layout's rows stay where they are; only the lengths shrink (paged keys have no
    // kStart: their rows come from the block table).
    s.qStart = b * td.seq1;
    s.kStart = b * td.seq2;
    s.s1 = td.lengthsQ ? cumQ.GetValue(b) : td.seq1;
    s.s2 = td.lengthsKv ? cumKv.GetValue(b) : td.seq2;
  }
  return s;
}

// The sequence of query token row t.
__aicore__ inline SfaSeq SfaSequenceOfRow(const SparseFlashAttentionTilingData &td,
                                          const AscendC::GlobalTensor<int64_t> &cumQ,
                                          const AscendC::GlobalTensor<int64_t> &cumKv, int64_t t) {
  if (!td.packed) return SfaSequence(td, cumQ, cumKv, t / td.seq1);
  int64_t b = 0;
  while (b + 1 < td.batch && cumQ.GetValue(b) <= t) ++b;
  return SfaSequence(td, cumQ, cumKv, b);
}

// The furthest key past its anchor i + s2 - s1 that a query sees: next_tokens, and with
// sparse_mode 3 (causal from the bottom-right corner) at most 0.
__aicore__ inline int64_t SfaAhead(const SparseFlashAttentionTilingData &td) {
  return td.sparseMode == 3 && td.nextTokens > 0 ? 0 : td.nextTokens;
}

// The key positions [first, last] query i of sequence sq may see (empty when first > last): the
// sequence's keys within the band, none for a row past the sequence's query length.
struct SfaRange {
  int64_t first, last;
};

__aicore__ inline SfaRange SfaVisible(const SparseFlashAttentionTilingData &td, const SfaSeq &sq, int64_t i) {
  if (i >= sq.s1) return {0, -1};
  const int64_t anchor = i + sq.s2 - sq.s1, hi = anchor + SfaAhead(td), lo = anchor - td.preTokens;
  return {lo > 0 ? lo : 0, Min64(hi, sq.s2 - 1)};
}

// The token row of key position p of sequence sq (through the block table for paged keys).
__aicore__ inline int64_t SfaKeyRow(const SparseFlashAttentionTilingData &td,
                                    const AscendC::GlobalTensor<int32_t> &table, const SfaSeq &sq, int64_t p) {
  if (!td.paged) return sq.kStart + p;
  return int64_t(table.GetValue(sq.b * td.maxPages + p / td.pageSize)) * td.pageSize + p % td.pageSize;
}

// The selected key positions a query row sees, in index-list order: entry e selects keys
// [e*blockSize, (e+1)*blockSize); -1 entries and keys outside the visible range are skipped. The
// list is read into UB idxChunk entries at a time and walked by the scalar unit.
class SfaKeyCursor {
 public:
  __aicore__ inline void Init(AscendC::TPipe *pipe, AscendC::TBuf<AscendC::TPosition::VECCALC> &buf,
                              const SparseFlashAttentionTilingData &td) {
    pipe_ = pipe;
    buf_ = buf.Get<int32_t>();
    chunk_ = td.idxChunk;
    topK_ = td.topK;
    blockSize_ = td.blockSize;
  }

  __aicore__ inline void Start(const AscendC::GlobalTensor<int32_t> &list, const SfaRange &visible) {
    list_ = list;
    first_ = visible.first;
    limit_ = visible.last;
    e_ = 0;
    r_ = 0;
    loaded_ = -1;
  }

  // Up to `cap` next positions into pos[0..); fewer only when the list is exhausted.
  __aicore__ inline uint32_t Next(const AscendC::LocalTensor<int32_t> &pos, uint32_t cap) {
    uint32_t n = 0;
    while (n < cap && e_ < topK_) {
      if (loaded_ < 0 || e_ >= loaded_ + chunk_) Load();
      const int64_t v = buf_.GetValue(static_cast<uint32_t>(e_ - loaded_));
      const int64_t p = v * blockSize_ + r_;
      if (v < 0 || p > limit_) {
        ++e_;
        r_ = 0;
        continue;
      }
      if (p < first_) {
        // Below the band: on to the block's first visible key (or past the block).
        const int64_t skip = first_ - v * blockSize_;
        r_ = skip < blockSize_ ? skip : blockSize_;
        if (r_ == blockSize_) {
          ++e_;
          r_ = 0;
        }
        continue;
      }
      pos.SetValue(n++, static_cast<int32_t>(p));
      if (++r_ == blockSize_) {
        ++e_;
        r_ = 0;
      }
    }
    return n;
  }

 private:
  __aicore__ inline void Load() {
    loaded_ = e_;
    const int64_t len = Min64(chunk_, topK_ - e_);
    // The scalar reads of the previous chunk are done before the copy overwrites it.
    OrderPipes<AscendC::HardEvent::S_MTE2>(pipe_);
    CopyIn(buf_, list_[e_], static_cast<uint32_t>(len));
    OrderPipes<AscendC::HardEvent::MTE2_S>(pipe_);
  }

  AscendC::TPipe *pipe_ = nullptr;
  AscendC::LocalTensor<int32_t> buf_;
  AscendC::GlobalTensor<int32_t> list_;
  int64_t chunk_ = 0, topK_ = 0, blockSize_ = 1, first_ = 0, limit_ = -1, e_ = 0, r_ = 0, loaded_ = -1;
};

// The UB queue the gathers pass rows through: depth 2, so that MTE2 fills one buffer while MTE3
// empties the other.
using SfaGatherQue = AscendC::TQueBind<AscendC::TPosition::VECIN, AscendC::TPosition::VECOUT, 2>;

// Source rows base + j * step (a token's head rows, a key tile's rows).
struct SfaLinearRows {
  int64_t base, step;
  __aicore__ inline int64_t operator()(uint32_t j) const { return base + int64_t(j) * step; }
};

// Source rows of the selected keys pos[j] of sequence sq, key head n2 (paged through the table).
struct SfaSelectedRows {
  const SparseFlashAttentionTilingData *td;
  const AscendC::GlobalTensor<int32_t> *table;
  const SfaSeq *sq;
  AscendC::LocalTensor<int32_t> pos;
  int64_t n2;
  __aicore__ inline int64_t operator()(uint32_t j) const {
    return SfaKeyRow(*td, *table, *sq, pos.GetValue(j)) * td->heads2 + n2;
  }
};

// Rows rowOf(first), ..., rowOf(first + n - 1) of a tensor of `main`-element rows and of its rope
// tensor (`rope`-element rows, the same row numbers; none when rope is 0) into a UB buffer laid out
// for `batch` >= n rows: row j's main part at buf[j * mainPitch], its rope part at
// buf[batch * mainPitch + j * ropePitch] (SfaUbPitch), each run of evenly spaced source rows (a
// token's heads, a key tile's rows of one key head, adjacent selected keys) in one strided
// DataCopyPad. The copies are MTE2's: the caller orders them before the buffer's readers.
template <typename T>
__aicore__ inline uint32_t SfaUbPitch(int64_t part) {
  return static_cast<uint32_t>(ms_ops::SfaGatherBytes(1, part, 0, sizeof(T)) / sizeof(T));
}

template <typename T, typename RowOf>
__aicore__ inline void SfaGatherToUb(const AscendC::LocalTensor<T> &buf, uint32_t batch,
                                     const AscendC::GlobalTensor<T> &mainGm, const AscendC::GlobalTensor<T> &ropeGm,
                                     int64_t main, int64_t rope, uint32_t first, uint32_t n, const RowOf &rowOf) {
  const uint32_t mainBytes = static_cast<uint32_t>(main * int64_t(sizeof(T)));
  const uint32_t ropeBytes = static_cast<uint32_t>(rope * int64_t(sizeof(T)));
  const uint32_t mainPitch = SfaUbPitch<T>(main), ropePitch = SfaUbPitch<T>(rope);
  const AscendC::DataCopyPadExtParams<T> noPad(false, 0, 0, 0);
  const AscendC::LocalTensor<T> ropeUb = buf[batch * mainPitch];
  for (uint32_t j = 0; j < n;) {
    const int64_t r = rowOf(first + j);
    const int64_t step = j + 1 < n ? rowOf(first + j + 1) - r : 1;
    uint32_t run = 1;
    // Spacings whose gap would not fit DataCopyPad's 32-bit stride are copied row by row.
    if (step >= 1 && (step - 1) * int64_t(mainBytes > ropeBytes ? mainBytes : ropeBytes) < (int64_t(1) << 31))
      while (j + run < n && rowOf(first + j + run) == r + int64_t(run) * step) ++run;
    const uint32_t gap = static_cast<uint32_t>(run > 1 ? step - 1 : 0);
    AscendC::DataCopyPad(buf[j * mainPitch], mainGm[r * main],
                         AscendC::DataCopyExtParams(run, mainBytes, gap * mainBytes, 0, 0), noPad);
    if (rope > 0)
      AscendC::DataCopyPad(ropeUb[j * ropePitch], ropeGm[r * rope],
                           AscendC::DataCopyExtParams(run, ropeBytes, gap * ropeBytes, 0, 0), noPad);
    j += run;
  }
}

// The same rows into rows 0..n-1 of dst in GM, each main then rope elements, rows `pitch` >=
// main + rope elements apart (the elements between are not written): up to `batch` rows per queue
// buffer, and every part of a buffer out to GM in one strided copy.
template <typename T, typename RowOf>
__aicore__ inline void SfaGatherRows(SfaGatherQue &que, uint32_t batch, const AscendC::GlobalTensor<T> &dst,
                                     const AscendC::GlobalTensor<T> &mainGm, const AscendC::GlobalTensor<T> &ropeGm,
                                     int64_t main, int64_t rope, int64_t pitch, uint32_t n, const RowOf &rowOf) {
  const uint32_t mainBytes = static_cast<uint32_t>(main * int64_t(sizeof(T)));
  const uint32_t ropeBytes = static_cast<uint32_t>(rope * int64_t(sizeof(T)));
  const uint32_t rowBytes = static_cast<uint32_t>(pitch * int64_t(sizeof(T)));
  for (uint32_t j0 = 0; j0 < n; j0 += batch) {
    const uint32_t m = n - j0 < batch ? n - j0 : batch;
    AscendC::LocalTensor<T> buf = que.AllocTensor<T>();
    SfaGatherToUb(buf, batch, mainGm, ropeGm, main, rope, j0, m, rowOf);
    que.EnQue(buf);
    buf = que.DeQue<T>();
    const AscendC::GlobalTensor<T> out = dst[int64_t(j0) * pitch];
    AscendC::DataCopyPad(out, buf, AscendC::DataCopyExtParams(m, mainBytes, 0, rowBytes - mainBytes, 0));
    if (rope > 0)
      AscendC::DataCopyPad(out[main], buf[batch * SfaUbPitch<T>(main)],
                           AscendC::DataCopyExtParams(m, ropeBytes, 0, rowBytes - ropeBytes, 0));
    que.FreeTensor(buf);
  }
}

// fp32 UB row into a T row (a copy for float).
template <typename T>
__aicore__ inline void SfaNarrow(const AscendC::LocalTensor<T> &out, const AscendC::LocalTensor<float> &in,
                                 uint32_t len) {
  if constexpr (AscendC::IsSameType<T, float>::value) {
    AscendC::Adds(out, in, 0.0f, len);
  } else {
    AscendC::Cast(out, in, AscendC::RoundMode::CAST_RINT, len);
  }
}

// Offset of the G statistics of (query token row t of sequence sq, key head n2): [B, N2, S1, G]
// or, packed, [N2, T1, G].
__aicore__ inline int64_t SfaStatBase(const SparseFlashAttentionTilingData &td, const SfaSeq &sq, int64_t t,
                                      int64_t n2) {
  if (td.packed) return (n2 * td.qRows + t) * td.group;
  return ((sq.b * td.heads2 + n2) * td.seq1 + (t - sq.qStart)) * td.group;
}

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_SPARSE_FLASH_ATTENTION_KERNEL_H_
