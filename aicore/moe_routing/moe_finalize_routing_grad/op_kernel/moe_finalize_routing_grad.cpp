// moe_finalize_routing_grad (CANN MoeFinalizeRoutingV2Grad, plus the bias gradient). For each
// contributing pair (r,k) with slot j = j(r,k) of expanded_x (j in [0, N), see the forward):
//   grad_expanded_x[j] = sum over the pairs naming j, in ascending pair order r*K + k,
//                        of s[r,k] * grad_y[r]                   (slots no pair names: 0)
//   grad_scales[r,k]   = <expanded_x[j] + bias[expert_idx[r,k]], grad_y[r]>   (else 0)
//   grad_bias[e]       = sum over pairs of expert e, in pair order, of s[r,k] * grad_y[r]
// The work is split so that every output element is written by one block only, in an order fixed
// by the index (see the host tiling): no atomics, and the result is bitwise reproducible whatever
// the block count. expanded_x is read only for grad_scales.
// The passes that look for the pairs of a slot window or of an expert group do not test the
// indices one by one on the scalar unit: the vector unit compares a batch of them at once into a
// bit mask (in pair order), and the scalar unit reads one 32-bit word of it per 32 pairs and
// visits only the set bits.
#include "../../moe_finalize_routing_common.h"
#include "moe_finalize_routing_grad_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

constexpr uint32_t kReduceScratchBytes = 1024;
constexpr uint32_t kRepeatFloats = 64;  // Compare works on whole 256-byte repeats

// The set bits of a pair mask below `entries`, in ascending order.
class MaskBits {
 public:
  __aicore__ inline MaskBits(const LocalTensor<uint8_t> &mask, uint32_t entries)
      : words_(mask.ReinterpretCast<uint32_t>()), entries_(entries) {}

  __aicore__ inline bool Next(uint32_t &e) {
    while (bits_ == 0) {
      if (word_ * 32 >= entries_) return false;
      bits_ = words_.GetValue(word_++);
    }
    e = (word_ - 1) * 32 + static_cast<uint32_t>(ScalarGetSFFValue<1>(bits_));
    bits_ &= bits_ - 1;
    return e < entries_;
  }

 private:
  LocalTensor<uint32_t> words_;
  uint32_t entries_, word_ = 0;
  uint64_t bits_ = 0;
};

// [begin, end) of `total` items split evenly over the blocks, the first ones taking the remainder.
__aicore__ inline void BlockRange(int64_t total, int64_t &begin, int64_t &end) {
  const int64_t block = GetBlockIdx(), blocks = GetBlockNum();
  const int64_t base = total / blocks, rem = total % blocks;
  begin = block * base + (block < rem ? block : rem);
  end = begin + base + (block < rem ? 1 : 0);
}

// T: dtype of grad_y, expanded_x, bias and their gradients; S: dtype of scales (T or float).
template <typename T, typename S>
class MoeFinalizeRoutingGradKernel {
 public:
  __aicore__ inline MoeFinalizeRoutingGradKernel() {}

  __aicore__ inline void Init(GM_ADDR gradY, GM_ADDR expandedRowIdx, GM_ADDR expandedX, GM_ADDR scales,
                              GM_ADDR expertIdx, GM_ADDR bias, GM_ADDR gradExpandedX, GM_ADDR gradScales,
                              GM_ADDR gradBias, GM_ADDR workspace, const MoeFinalizeRoutingGradTilingData &td) {
    rows_ = td.rows;
    topK_ = static_cast<uint32_t>(td.topK);
    hidden_ = td.hidden;
    expandedRows_ = td.expandedRows;
    biasRows_ = td.biasRows;
    scalesNumel_ = td.scalesNumel;
    biasNumel_ = td.biasNumel;
    hChunk_ = td.hChunk;
    batchRows_ = td.batchRows;
    windowSlots_ = td.windowSlots;
    biasCols_ = td.biasCols;
    biasColsPad_ = td.biasColsPad;
    biasExperts_ = td.biasExperts;
    hasBias_ = td.hasBias != 0;
    hasScales_ = td.hasScales != 0;

    gradYGm_.SetGlobalBuffer((__gm__ T *)gradY, uint64_t(rows_) * hidden_);
    xGm_.SetGlobalBuffer((__gm__ T *)expandedX, uint64_t(expandedRows_) * hidden_);
    gradXGm_.SetGlobalBuffer((__gm__ T *)gradExpandedX, uint64_t(expandedRows_) * hidden_);
    gradScalesGm_.SetGlobalBuffer((__gm__ S *)gradScales, scalesNumel_);
    gradBiasGm_.SetGlobalBuffer((__gm__ T *)gradBias, biasNumel_);
    if (hasBias_) biasGm_.SetGlobalBuffer((__gm__ T *)bias, uint64_t(biasRows_) * hidden_);
    // The chains and the slots' sole pairs, laid out as MoeFinalizeRoutingGradWorkspace says.
    const uint64_t pairs = uint64_t(rows_) * topK_;
    GM_ADDR chains = GetUserWorkspace(workspace);
    nextGm_.SetGlobalBuffer((__gm__ int32_t *)chains, pairs);
    if (hasScales_) pairScaleGm_.SetGlobalBuffer((__gm__ float *)(chains + UbBytes(pairs, 4)), pairs);
    solePairGm_.SetGlobalBuffer((__gm__ int32_t *)(chains + UbBytes(pairs, 4) * (hasScales_ ? 2 : 1)),
                                expandedRows_);

    // Same sizes as the MoeFinalizeRoutingGradUb* formulas of the host tiling.
    const uint32_t chunkBytes = hChunk_ * sizeof(T);
    pipe_.InitBuffer(gradYQ_, 1, chunkBytes);
    pipe_.InitBuffer(inQ_, 2, chunkBytes);
    pipe_.InitBuffer(outQ_, 2, chunkBytes);
    pipe_.InitBuffer(zeroBuf_, chunkBytes);
    if constexpr (!AscendC::IsSameType<T, float>::value) {
      pipe_.InitBuffer(f32A_, hChunk_ * 4);
      pipe_.InitBuffer(f32B_, hChunk_ * 4);
      pipe_.InitBuffer(f32C_, hChunk_ * 4);
    }
    batch_.Init(pipe_, expandedRowIdx, scales, expertIdx, rows_, topK_, expandedRows_, biasRows_, batchRows_,
                (td.dropPadMode & 2) != 0, hasScales_, hasBias_);
    const uint32_t entries = batchRows_ * topK_;
    if (hasScales_) {
      pipe_.InitBuffer(dotBuf_, UbBytes(entries, 4));
      pipe_.InitBuffer(gradScalesQ_, 1, UbBytes(entries, sizeof(S)));
    }
    pipe_.InitBuffer(firstBuf_, windowSlots_ * 4);
    pipe_.InitBuffer(lastBuf_, windowSlots_ * 4);
    if (hasScales_) pipe_.InitBuffer(firstScaleBuf_, windowSlots_ * 4);
    pipe_.InitBuffer(reduceBuf_, 32 + kReduceScratchBytes);
    // Same sizes as MoeFinalizeRoutingGradUbFilter.
    padded_ = (entries + kRepeatFloats - 1) / kRepeatFloats * kRepeatFloats;
    pipe_.InitBuffer(slotKeyBuf_, padded_ * 4);
    pipe_.InitBuffer(maskBuf_, UbBytes(padded_ / 8, 1));
    if (!batch_.RowMajor()) {
      pipe_.InitBuffer(columnKeyBuf_, topK_ * batch_.KStride() * 4);
      pipe_.InitBuffer(offsetBuf_, UbBytes(entries, 4));
    }
    if (hasBias_) {
      pipe_.InitBuffer(expertKeyBuf_, padded_ * 4);
      pipe_.InitBuffer(validBuf_, UbBytes(padded_ / 8, 1));
      pipe_.InitBuffer(biasAcc_, biasExperts_ * biasColsPad_ * 4);
      if constexpr (!AscendC::IsSameType<T, float>::value)
        pipe_.InitBuffer(biasOut_, biasExperts_ * biasColsPad_ * sizeof(T));
      pipe_.InitBuffer(biasTmp_, biasColsPad_ * 4);
    }
  }

  __aicore__ inline void Process() {
    if (!batch_.RowMajor()) PairOffsets();
    zero_ = zeroBuf_.Get<T>();
    Duplicate(zero_.template ReinterpretCast<float>(), 0.0f, static_cast<int32_t>(hChunk_ * sizeof(T) / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe_);

    Slots();
    if (hasBias_) {
      GradBias();
    } else if (GetBlockIdx() == 0) {
      ZeroFill(gradBiasGm_, biasNumel_);
    }
    if (!hasScales_ && GetBlockIdx() == 0) ZeroFill(gradScalesGm_, scalesNumel_);
    // The token pass reads every block's sole pairs: written by MTE3 before the barrier, read by
    // this core's scalar unit, whose cache may hold older lines of the workspace.
    PipeBarrier<PIPE_ALL>();
    SyncAll();
    DataCacheCleanAndInvalid<int32_t, CacheLine::ENTIRE_DATA_CACHE, DcciDst::CACHELINE_OUT>(solePairGm_);
    TokenRows();
  }

 private:
  __aicore__ inline uint32_t ChunkLen(int64_t h0) const { return static_cast<uint32_t>(Min64(hidden_ - h0, hChunk_)); }

  template <typename U>
  __aicore__ inline void ZeroFill(const GlobalTensor<U> &dst, int64_t count) {
    const uint32_t step = hChunk_ * sizeof(T) / sizeof(U);
    const LocalTensor<U> zero = zero_.template ReinterpretCast<U>();
    for (int64_t i = 0; i < count; i += step) CopyOut(dst[i], zero, static_cast<uint32_t>(Min64(count - i, step)));
  }

  // ---- token rows (after SyncAll): grad_expanded_x of slots named once, grad_scales -------------

  __aicore__ inline void TokenRows() {
    int64_t begin, end;
    BlockRange(rows_, begin, end);
    LocalTensor<float> dots;
    if (hasScales_) dots = dotBuf_.Get<float>();
    for (int64_t r0 = begin; r0 < end; r0 += batchRows_) {
      const uint32_t nb = batch_.Rows(r0, end), entries = nb * topK_;
      batch_.Load(r0, nb, hasScales_, hasScales_ && hasBias_);
      if (hasScales_) {
        for (uint32_t e = 0; e < entries; ++e) dots.SetValue(e, 0.0f);
      }
      for (uint32_t i = 0; i < nb; ++i) {
        for (int64_t h0 = 0; h0 < hidden_; h0 += hChunk_) RowChunk(dots, r0 + i, i, h0, ChunkLen(h0));
      }
      if (hasScales_) {
        // Scalar writes above, vector cast below.
        PipeBarrier<PIPE_ALL>();
        LocalTensor<S> out = gradScalesQ_.AllocTensor<S>();
        if constexpr (AscendC::IsSameType<S, float>::value) {
          Muls(out, dots, 1.0f, entries);
        } else {
          Cast(out, dots, RoundMode::CAST_RINT, entries);
        }
        gradScalesQ_.EnQue(out);
        out = gradScalesQ_.DeQue<S>();
        CopyOut(gradScalesGm_[r0 * topK_], out, entries);
        gradScalesQ_.FreeTensor(out);
      }
      batch_.Free();
    }
  }

  // Chunk [h0, h0 + len) of token row r (batch row i): writes s * grad_y[r] to the slot of each
  // contributing pair that is the only pair naming it (the slot pass wrote the others' slots)
  // and, with scales, adds the pair's partial dot product to dots.
  __aicore__ inline void RowChunk(const LocalTensor<float> &dots, int64_t r, uint32_t i, int64_t h0, uint32_t len) {
    LocalTensor<T> gy = gradYQ_.AllocTensor<T>();
    CopyIn(gy, gradYGm_[r * hidden_ + h0], len);
    gradYQ_.EnQue(gy);
    gy = gradYQ_.DeQue<T>();
    const LocalTensor<float> g = ToFloat(gy, f32A_, len);
    for (uint32_t k = 0; k < topK_; ++k) {
      const int64_t j = batch_.Slot(i, k);
      if (j < 0) continue;
      if (solePairGm_.GetValue(uint64_t(j)) == static_cast<int32_t>(r * topK_ + k)) {
        const float scale = hasScales_ ? batch_.Scale(i, k) : 1.0f;
        LocalTensor<T> out = outQ_.AllocTensor<T>();
        if constexpr (AscendC::IsSameType<T, float>::value) {
          Muls(out, g, scale, len);
        } else {
          const LocalTensor<float> scaled = f32C_.Get<float>();
          Muls(scaled, g, scale, len);
          Cast(out, scaled, RoundMode::CAST_RINT, len);
        }
        outQ_.EnQue(out);
        out = outQ_.DeQue<T>();
        CopyOut(gradXGm_[j * hidden_ + h0], out, len);
        outQ_.FreeTensor(out);
      }
      if (hasScales_) AddDot(dots, g, i, k, j, h0, len);
    }
    gradYQ_.FreeTensor(gy);
  }

  // dots[pair (i, k)] += <expanded_x[j] + bias[expert], g> over the chunk.
  __aicore__ inline void AddDot(const LocalTensor<float> &dots, const LocalTensor<float> &g, uint32_t i, uint32_t k,
                                int64_t j, int64_t h0, uint32_t len) {
    const int64_t expert = hasBias_ ? batch_.Expert(i, k) : -1;
    LocalTensor<float> xf;
    LocalTensor<T> xin = LoadSlotRow(inQ_, inQ_, f32B_, f32C_, xGm_, biasGm_, j, expert, hidden_, h0, len, xf);
    Mul(xf, xf, g, len);
    const LocalTensor<float> sum = reduceBuf_.Get<float>();
    ReduceSum(sum, xf, sum[8], len);
    inQ_.FreeTensor(xin);
    OrderPipes<HardEvent::V_S>(&pipe_);
    const uint32_t pair = i * topK_ + k;
    dots.SetValue(pair, dots.GetValue(pair) + sum.GetValue(0));
  }

  // ---- slots (before SyncAll): zeros where no pair maps, ordered sums where several do, and
  // each slot's sole pair for the token pass (-1 where none or several) --------------------------

  __aicore__ inline void Slots() {
    int64_t begin, end;
    BlockRange(expandedRows_, begin, end);
    for (int64_t lo = begin; lo < end; lo += windowSlots_) {
      const int64_t hi = Min64(end, lo + windowSlots_);
      ChainWindow(lo, hi);
      for (int64_t j = lo; j < hi; ++j) {
        const uint32_t w = uint32_t(j - lo);
        const int32_t first = first_.GetValue(w), last = first < 0 ? first : last_.GetValue(w);
        if (first < 0) {
          for (int64_t h0 = 0; h0 < hidden_; h0 += hChunk_) CopyOut(gradXGm_[j * hidden_ + h0], zero_, ChunkLen(h0));
        } else if (last != first) {
          const float scale = hasScales_ ? firstScale_.GetValue(w) : 1.0f;
          for (int64_t h0 = 0; h0 < hidden_; h0 += hChunk_) SumChain(j, first, scale, last, h0, ChunkLen(h0));
        }
        // last_ becomes the window's sole pairs.
        last_.SetValue(w, first == last ? first : int32_t(-1));
      }
      OrderPipes<HardEvent::S_MTE3>(&pipe_);
      CopyOut(solePairGm_[lo], last_, static_cast<uint32_t>(hi - lo));
      // The next window's scan rewrites last_ on the scalar unit.
      OrderPipes<HardEvent::MTE3_S>(&pipe_);
    }
  }

  // One scan of the pairs in ascending order: first_/last_ get the first and last pair naming
  // each slot of [lo, hi) (-1: none), and each later pair is linked from the one before it, with
  // its scale, in the workspace. Every pair belongs to one slot, so to one block: no other block
  // touches its chain entries.
  __aicore__ inline void ChainWindow(int64_t lo, int64_t hi) {
    first_ = firstBuf_.Get<int32_t>();
    last_ = lastBuf_.Get<int32_t>();
    if (hasScales_) firstScale_ = firstScaleBuf_.Get<float>();
    // The previous window's scalar writes land before the vector fill.
    OrderPipes<HardEvent::S_V>(&pipe_);
    Duplicate(first_, int32_t(-1), static_cast<int32_t>(hi - lo));
    OrderPipes<HardEvent::V_S>(&pipe_);
    for (int64_t r0 = 0; r0 < rows_; r0 += batchRows_) {
      const uint32_t nb = batch_.Rows(r0, rows_);
      batch_.Load(r0, nb, hasScales_, false);
      const LocalTensor<uint8_t> mask = maskBuf_.Get<uint8_t>();
      InRange(SlotKeys(nb), lo, hi, mask);
      OrderPipes<HardEvent::V_S>(&pipe_);
      MaskBits hits(mask, nb * topK_);
      for (uint32_t e; hits.Next(e);) {
        const uint32_t i = e / topK_, k = e % topK_;
        const uint32_t w = uint32_t(batch_.Slot(i, k) - lo);
        const int32_t pair = static_cast<int32_t>(r0 * topK_ + e);
        if (first_.GetValue(w) < 0) {
          first_.SetValue(w, pair);
          if (hasScales_) firstScale_.SetValue(w, batch_.Scale(i, k));
        } else {
          nextGm_.SetValue(uint64_t(last_.GetValue(w)), pair);
          if (hasScales_) pairScaleGm_.SetValue(uint64_t(pair), batch_.Scale(i, k));
        }
        last_.SetValue(w, pair);
      }
      batch_.Free();
    }
  }

  // Chunk [h0, h0 + len) of slot j: the sum, in fp32 and chain (pair) order, of s * grad_y[r]
  // over the pairs from `first` to `last`.
  __aicore__ inline void SumChain(int64_t j, int32_t first, float firstScale, int32_t last, int64_t h0,
                                  uint32_t len) {
    LocalTensor<T> out = outQ_.AllocTensor<T>();
    LocalTensor<float> acc;
    if constexpr (AscendC::IsSameType<T, float>::value) {
      acc = out;
    } else {
      acc = f32C_.Get<float>();
    }
    Duplicate(acc, 0.0f, len);
    int32_t pair = first;
    float scale = firstScale;
    while (true) {
      LocalTensor<T> gy = gradYQ_.AllocTensor<T>();
      CopyIn(gy, gradYGm_[(pair / topK_) * hidden_ + h0], len);
      gradYQ_.EnQue(gy);
      gy = gradYQ_.DeQue<T>();
      const LocalTensor<float> g = ToFloat(gy, f32A_, len);
      Muls(g, g, scale, len);
      Add(acc, acc, g, len);
      gradYQ_.FreeTensor(gy);
      if (pair == last) break;
      pair = nextGm_.GetValue(uint64_t(pair));
      scale = hasScales_ ? pairScaleGm_.GetValue(uint64_t(pair)) : 1.0f;
    }
    if constexpr (!AscendC::IsSameType<T, float>::value) Cast(out, acc, RoundMode::CAST_RINT, len);
    outQ_.EnQue(out);
    out = outQ_.DeQue<T>();
    CopyOut(gradXGm_[j * hidden_ + h0], out, len);
    outQ_.FreeTensor(out);
  }

  // ---- grad_bias -------------------------------------------------------------------------------

  __aicore__ inline void GradBias() {
    const int64_t colRanges = (hidden_ + biasCols_ - 1) / biasCols_;
    const int64_t groups = (biasRows_ + biasExperts_ - 1) / biasExperts_;
    int64_t begin, end;
    BlockRange(colRanges * groups, begin, end);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t h0 = (item / groups) * biasCols_, e0 = (item % groups) * biasExperts_;
      BiasItem(h0, static_cast<uint32_t>(Min64(biasCols_, hidden_ - h0)), e0,
               static_cast<uint32_t>(Min64(biasExperts_, biasRows_ - e0)));
    }
  }

  // grad_bias[e0 : e0 + experts, h0 : h0 + cols]: one scan of the pairs in order; each grad_y row
  // slice is loaded once for all of its pairs whose expert is in the group.
  __aicore__ inline void BiasItem(int64_t h0, uint32_t cols, int64_t e0, uint32_t experts) {
    const LocalTensor<float> acc = biasAcc_.Get<float>();
    const LocalTensor<float> scaled = biasTmp_.Get<float>();
    Duplicate(acc, 0.0f, static_cast<int32_t>(experts * biasColsPad_));
    for (int64_t r0 = 0; r0 < rows_; r0 += batchRows_) {
      const uint32_t nb = batch_.Rows(r0, rows_);
      batch_.Load(r0, nb, hasScales_, true);
      const LocalTensor<uint8_t> mask = maskBuf_.Get<uint8_t>();
      ExpertMask(nb, e0, e0 + experts, mask);
      OrderPipes<HardEvent::V_S>(&pipe_);
      // The pairs of a row are adjacent bits: its grad_y slice is loaded once for all of them.
      MaskBits hits(mask, nb * topK_);
      uint32_t row = nb;
      LocalTensor<T> gy;
      LocalTensor<float> g;
      for (uint32_t e; hits.Next(e);) {
        const uint32_t i = e / topK_, k = e % topK_;
        if (i != row) {
          if (row != nb) inQ_.FreeTensor(gy);
          row = i;
          gy = inQ_.AllocTensor<T>();
          CopyIn(gy, gradYGm_[(r0 + i) * hidden_ + h0], cols);
          inQ_.EnQue(gy);
          gy = inQ_.DeQue<T>();
          g = ToFloat(gy, f32A_, cols);
        }
        const LocalTensor<float> accRow = acc[uint32_t(batch_.Expert(i, k) - e0) * biasColsPad_];
        if (hasScales_) {
          Muls(scaled, g, batch_.Scale(i, k), cols);
          Add(accRow, accRow, scaled, cols);
        } else {
          Add(accRow, accRow, g, cols);
        }
      }
      if (row != nb) inQ_.FreeTensor(gy);
      batch_.Free();
    }
    LocalTensor<T> out;
    if constexpr (AscendC::IsSameType<T, float>::value) {
      out = acc;
    } else {
      out = biasOut_.Get<T>();
      Cast(out, acc, RoundMode::CAST_RINT, experts * biasColsPad_);
    }
    OrderPipes<HardEvent::V_MTE3>(&pipe_);
    for (uint32_t e = 0; e < experts; ++e) CopyOut(gradBiasGm_[(e0 + e) * hidden_ + h0], out[e * biasColsPad_], cols);
    // The next item overwrites these buffers.
    OrderPipes<HardEvent::MTE3_V>(&pipe_);
  }

  // ---- pair masks on the vector unit -----------------------------------------------------------

  // The Gather offsets that put a column-major batch in pair order: pair i*K + k lies at
  // k*KStride() + i. Written once per block (the layout does not depend on the batch's rows).
  __aicore__ inline void PairOffsets() {
    const LocalTensor<uint32_t> off = offsetBuf_.Get<uint32_t>();
    const uint32_t stride = batch_.KStride();
    for (uint32_t i = 0; i < batchRows_; ++i) {
      for (uint32_t k = 0; k < topK_; ++k) off.SetValue(i * topK_ + k, (k * stride + i) * 4);
    }
    OrderPipes<HardEvent::S_V>(&pipe_);
  }

  // The loaded batch's slots as float in pair order, -1 past its nb * K pairs (exact: the host
  // tiling keeps N <= 2^24).
  __aicore__ inline LocalTensor<float> SlotKeys(uint32_t nb) {
    const LocalTensor<float> key = slotKeyBuf_.Get<float>();
    Duplicate(key, -1.0f, static_cast<int32_t>(padded_));
    if (batch_.RowMajor()) {
      Cast(key, batch_.Indices(), RoundMode::CAST_NONE, nb * topK_);
    } else {
      const LocalTensor<float> columns = columnKeyBuf_.Get<float>();
      Cast(columns, batch_.Indices(), RoundMode::CAST_NONE, topK_ * batch_.KStride());
      Gather(key, columns, offsetBuf_.Get<uint32_t>(), 0, nb * topK_);
    }
    return key;
  }

  // mask bit e = (lo <= key[e] < hi) for integer keys: |key - lo - c| < (hi - lo) / 2 with
  // c = (hi - lo - 1) / 2, in steps that stay exact below 2^24. Overwrites key.
  __aicore__ inline void InRange(const LocalTensor<float> &key, int64_t lo, int64_t hi,
                                 const LocalTensor<uint8_t> &mask) {
    const int32_t n = static_cast<int32_t>(padded_);
    Adds(key, key, static_cast<float>(-lo), n);
    Adds(key, key, -0.5f * static_cast<float>(hi - lo - 1), n);
    Abs(key, key, n);
    CompareScalar(mask, key, 0.5f * static_cast<float>(hi - lo), CMPMODE::LT, padded_);
  }

  // mask bit e: pair e of the batch names a slot and its expert lies in [e0, e1).
  __aicore__ inline void ExpertMask(uint32_t nb, int64_t e0, int64_t e1, const LocalTensor<uint8_t> &mask) {
    const LocalTensor<uint8_t> valid = validBuf_.Get<uint8_t>();
    InRange(SlotKeys(nb), 0, expandedRows_, valid);
    const LocalTensor<float> key = expertKeyBuf_.Get<float>();
    Duplicate(key, -1.0f, static_cast<int32_t>(padded_));
    Cast(key, batch_.Experts(), RoundMode::CAST_NONE, nb * topK_);
    Select(key, valid, key, -1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, padded_);
    InRange(key, e0, e1, mask);
  }

  TPipe pipe_;
  TQue<QuePosition::VECIN, 1> gradYQ_;
  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECOUT, 2> outQ_;
  TQue<QuePosition::VECOUT, 1> gradScalesQ_;
  TBuf<TPosition::VECCALC> zeroBuf_, f32A_, f32B_, f32C_, dotBuf_, firstBuf_, lastBuf_, firstScaleBuf_, reduceBuf_,
      biasAcc_, biasOut_, biasTmp_, slotKeyBuf_, maskBuf_, columnKeyBuf_, offsetBuf_, expertKeyBuf_, validBuf_;
  MoeRoutingBatch<S> batch_;

  GlobalTensor<T> gradYGm_, xGm_, biasGm_, gradXGm_, gradBiasGm_;
  GlobalTensor<S> gradScalesGm_;
  GlobalTensor<int32_t> nextGm_, solePairGm_;
  GlobalTensor<float> pairScaleGm_;

  LocalTensor<T> zero_;
  LocalTensor<int32_t> first_, last_;
  LocalTensor<float> firstScale_;

  int64_t rows_ = 0, hidden_ = 0, expandedRows_ = 0, biasRows_ = 0, scalesNumel_ = 0, biasNumel_ = 0;
  uint32_t topK_ = 1, hChunk_ = 0, batchRows_ = 1, windowSlots_ = 8, padded_ = kRepeatFloats;
  uint32_t biasCols_ = 1, biasColsPad_ = 16, biasExperts_ = 1;
  bool hasBias_ = false, hasScales_ = false;
};

template <typename T, typename S>
__aicore__ inline void Run(GM_ADDR gradY, GM_ADDR expandedRowIdx, GM_ADDR expandedX, GM_ADDR scales,
                           GM_ADDR expertIdx, GM_ADDR bias, GM_ADDR gradExpandedX, GM_ADDR gradScales,
                           GM_ADDR gradBias, GM_ADDR workspace, const MoeFinalizeRoutingGradTilingData &td) {
  MoeFinalizeRoutingGradKernel<T, S> op;
  op.Init(gradY, expandedRowIdx, expandedX, scales, expertIdx, bias, gradExpandedX, gradScales, gradBias, workspace,
          td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void moe_finalize_routing_grad(GM_ADDR gradY, GM_ADDR expandedRowIdx,
                                                                GM_ADDR expandedX, GM_ADDR scales, GM_ADDR expertIdx,
                                                                GM_ADDR bias, GM_ADDR gradExpandedX,
                                                                GM_ADDR gradScales, GM_ADDR gradBias,
                                                                GM_ADDR workspace, GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(MoeFinalizeRoutingGradTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (the CANN compiler builds one binary per TILING_KEY_IS); see kMoeFinalizeRoutingGradKey*.
  if (TILING_KEY_IS(1)) {
    Run<float, float>(gradY, expandedRowIdx, expandedX, scales, expertIdx, bias, gradExpandedX, gradScales, gradBias,
                      workspace, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half, half>(gradY, expandedRowIdx, expandedX, scales, expertIdx, bias, gradExpandedX, gradScales, gradBias,
                    workspace, td);
  } else if (TILING_KEY_IS(3)) {
    Run<half, float>(gradY, expandedRowIdx, expandedX, scales, expertIdx, bias, gradExpandedX, gradScales, gradBias,
                     workspace, td);
  } else if (TILING_KEY_IS(4)) {
    Run<bfloat16_t, bfloat16_t>(gradY, expandedRowIdx, expandedX, scales, expertIdx, bias, gradExpandedX,
                                gradScales, gradBias, workspace, td);
  } else if (TILING_KEY_IS(5)) {
    Run<bfloat16_t, float>(gradY, expandedRowIdx, expandedX, scales, expertIdx, bias, gradExpandedX, gradScales,
                           gradBias, workspace, td);
  }
}
