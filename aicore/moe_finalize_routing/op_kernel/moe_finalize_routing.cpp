// moe_finalize_routing (CANN MoeFinalizeRoutingV2): combines expert outputs back into token order,
//   out[r] = x1[r] + x2[r] + sum_k s[r,k] * (expanded_x[j(r,k)] + bias[expert_idx[r,k]]),
// j(r,k) = expanded_row_idx[k*R + r] (modes 0/1) or expanded_row_idx[r*K + k] (modes 2/3).
// A pair whose j is -1 (dropped) or >= N (past an active_num truncation) adds nothing.
//
// Blocks own contiguous output rows, so every output element is written once, by one block. Each
// row is accumulated in fp32 over k in ascending order, one H chunk at a time.
#include "kernel_operator.h"
#include "moe_finalize_routing_tiling_data.h"

using namespace AscendC;

namespace {

template <typename A, typename B>
struct IsSame {
  static constexpr bool value = false;
};
template <typename A>
struct IsSame<A, A> {
  static constexpr bool value = true;
};

__aicore__ inline uint32_t AlignUp8(uint32_t n) { return (n + 7) / 8 * 8; }
__aicore__ inline uint32_t AlignUp32(uint32_t bytes) { return (bytes + 31) / 32 * 32; }

template <typename T>
__aicore__ inline void CopyIn(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count) {
  DataCopyPad(dst, src, DataCopyExtParams(1, count * sizeof(T), 0, 0, 0), DataCopyPadExtParams<T>(false, 0, 0, 0));
}

template <typename T>
__aicore__ inline void CopyOut(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
  DataCopyPad(dst, src, DataCopyExtParams(1, count * sizeof(T), 0, 0, 0));
}

// T: dtype of expanded_x, x1, x2, bias and out; S: dtype of scales (T or float).
template <typename T, typename S>
class MoeFinalizeRoutingKernel {
 public:
  __aicore__ inline MoeFinalizeRoutingKernel() {}

  __aicore__ inline void Init(GM_ADDR expandedX, GM_ADDR expandedRowIdx, GM_ADDR x1, GM_ADDR x2, GM_ADDR bias,
                              GM_ADDR scales, GM_ADDR expertIdx, GM_ADDR out, const MoeFinalizeRoutingTilingData &td) {
    rows_ = td.rows;
    topK_ = static_cast<uint32_t>(td.topK);
    hidden_ = td.hidden;
    expandedRows_ = td.expandedRows;
    biasRows_ = td.biasRows;
    hChunk_ = td.hChunk;
    batchRows_ = td.batchRows;
    rowMajor_ = (td.dropPadMode & 2) != 0;
    hasX1_ = td.hasX1 != 0;
    hasX2_ = td.hasX2 != 0;
    hasBias_ = td.hasBias != 0;
    hasScales_ = td.hasScales != 0;
    const int64_t block = GetBlockIdx();
    const int64_t extra = block < td.rowsRemainder ? block : td.rowsRemainder;
    rowBegin_ = block * td.rowsPerBlock + extra;
    rowEnd_ = rowBegin_ + td.rowsPerBlock + (block < td.rowsRemainder ? 1 : 0);

    const uint64_t pairs = uint64_t(rows_) * topK_;
    xGm_.SetGlobalBuffer((__gm__ T *)expandedX, uint64_t(expandedRows_) * hidden_);
    idxGm_.SetGlobalBuffer((__gm__ int32_t *)expandedRowIdx, pairs);
    outGm_.SetGlobalBuffer((__gm__ T *)out, uint64_t(rows_) * hidden_);
    if (hasX1_) x1Gm_.SetGlobalBuffer((__gm__ T *)x1, uint64_t(rows_) * hidden_);
    if (hasX2_) x2Gm_.SetGlobalBuffer((__gm__ T *)x2, uint64_t(rows_) * hidden_);
    if (hasScales_) scalesGm_.SetGlobalBuffer((__gm__ S *)scales, pairs);
    if (hasBias_) {
      biasGm_.SetGlobalBuffer((__gm__ T *)bias, uint64_t(biasRows_) * hidden_);
      expertGm_.SetGlobalBuffer((__gm__ int32_t *)expertIdx, pairs);
    }

    // Same sizes as MoeFinalizeRoutingUbPerH / MoeFinalizeRoutingUbBatch in the host tiling.
    const uint32_t chunkBytes = hChunk_ * sizeof(T);
    pipe_.InitBuffer(rowQ_, 2, chunkBytes);
    pipe_.InitBuffer(outQ_, 2, chunkBytes);
    if (hasBias_) pipe_.InitBuffer(biasQ_, 2, chunkBytes);
    if constexpr (!IsSame<T, float>::value) {
      pipe_.InitBuffer(accF32_, hChunk_ * 4);
      pipe_.InitBuffer(rowF32_, hChunk_ * 4);
      if (hasBias_) pipe_.InitBuffer(biasF32_, hChunk_ * 4);
    }
    const uint32_t entries = batchRows_ * topK_;
    pipe_.InitBuffer(idxQ_, 1, rowMajor_ ? AlignUp32(entries * 4) : topK_ * AlignUp8(batchRows_) * 4);
    if (hasScales_) {
      pipe_.InitBuffer(scalesQ_, 1, AlignUp32(entries * sizeof(S)));
      if constexpr (!IsSame<S, float>::value) pipe_.InitBuffer(scalesF32_, AlignUp32(entries * 4));
    }
    if (hasBias_) pipe_.InitBuffer(expertQ_, 1, AlignUp32(entries * 4));
  }

  __aicore__ inline void Process() {
    for (int64_t r0 = rowBegin_; r0 < rowEnd_; r0 += batchRows_) {
      const uint32_t nb = static_cast<uint32_t>(rowEnd_ - r0 < batchRows_ ? rowEnd_ - r0 : batchRows_);
      LoadBatch(r0, nb);
      for (uint32_t i = 0; i < nb; ++i) {
        for (int64_t h0 = 0; h0 < hidden_; h0 += hChunk_) {
          const uint32_t len = static_cast<uint32_t>(hidden_ - h0 < hChunk_ ? hidden_ - h0 : hChunk_);
          CombineChunk(r0 + i, i, h0, len);
        }
      }
      FreeBatch();
    }
  }

 private:
  // Indices, scales (as fp32) and expert ids of rows [r0, r0 + nb) into UB for scalar reads.
  __aicore__ inline void LoadBatch(int64_t r0, uint32_t nb) {
    const uint32_t entries = nb * topK_;
    idx_ = idxQ_.AllocTensor<int32_t>();
    if (rowMajor_) {
      CopyIn(idx_, idxGm_[r0 * topK_], entries);
      idxRowStride_ = topK_;
      idxKStride_ = 1;
    } else {
      // Column k holds rows r0.. at k*R + r0; each lands 32-byte aligned, AlignUp8(nb) apart.
      DataCopyPad(idx_, idxGm_[r0], DataCopyExtParams(topK_, nb * 4, uint32_t(rows_ - nb) * 4, 0, 0),
                  DataCopyPadExtParams<int32_t>(false, 0, 0, 0));
      idxRowStride_ = 1;
      idxKStride_ = AlignUp8(nb);
    }
    idxQ_.EnQue(idx_);
    if (hasScales_) {
      LocalTensor<S> s = scalesQ_.AllocTensor<S>();
      CopyIn(s, scalesGm_[r0 * topK_], entries);
      scalesQ_.EnQue(s);
    }
    if (hasBias_) {
      expert_ = expertQ_.AllocTensor<int32_t>();
      CopyIn(expert_, expertGm_[r0 * topK_], entries);
      expertQ_.EnQue(expert_);
    }
    idx_ = idxQ_.DeQue<int32_t>();
    if (hasScales_) {
      scalesIn_ = scalesQ_.DeQue<S>();
      if constexpr (IsSame<S, float>::value) {
        scalesF_ = scalesIn_;
      } else {
        scalesF_ = scalesF32_.Get<float>();
        Cast(scalesF_, scalesIn_, RoundMode::CAST_NONE, entries);
        scalesQ_.FreeTensor(scalesIn_);
      }
    }
    if (hasBias_) expert_ = expertQ_.DeQue<int32_t>();
    // The scalar unit reads these buffers next: wait for the copies and the cast.
    PipeBarrier<PIPE_ALL>();
  }

  __aicore__ inline void FreeBatch() {
    idxQ_.FreeTensor(idx_);
    if constexpr (IsSame<S, float>::value) {
      if (hasScales_) scalesQ_.FreeTensor(scalesIn_);
    }
    if (hasBias_) expertQ_.FreeTensor(expert_);
  }

  // fp32 view of a UB chunk: the chunk itself for float, else its cast into `scratch`.
  __aicore__ inline LocalTensor<float> ToFloat(const LocalTensor<T> &in, TBuf<TPosition::VECCALC> &scratch,
                                               uint32_t len) {
    if constexpr (IsSame<T, float>::value) {
      return in;
    } else {
      LocalTensor<float> f = scratch.Get<float>();
      Cast(f, in, RoundMode::CAST_NONE, len);
      return f;
    }
  }

  // Output row r (batch row i), elements [h0, h0 + len).
  __aicore__ inline void CombineChunk(int64_t r, uint32_t i, int64_t h0, uint32_t len) {
    LocalTensor<T> outT = outQ_.AllocTensor<T>();
    LocalTensor<float> acc;
    if constexpr (IsSame<T, float>::value) {
      acc = outT;
    } else {
      acc = accF32_.Get<float>();
    }
    Duplicate(acc, 0.0f, len);
    if (hasX1_) AddResidual(acc, x1Gm_[r * hidden_ + h0], len);
    if (hasX2_) AddResidual(acc, x2Gm_[r * hidden_ + h0], len);
    for (uint32_t k = 0; k < topK_; ++k) {
      const int64_t j = idx_.GetValue(i * idxRowStride_ + k * idxKStride_);
      if (j < 0 || j >= expandedRows_) continue;
      const uint32_t pair = i * topK_ + k;
      // The entry rejects expert ids outside bias; on the NPU a bad one must still not be read.
      int64_t expert = -1;
      if (hasBias_) {
        expert = expert_.GetValue(pair);
        if (expert >= biasRows_) expert = -1;
      }
      LocalTensor<T> xin = rowQ_.AllocTensor<T>();
      CopyIn(xin, xGm_[j * hidden_ + h0], len);
      rowQ_.EnQue(xin);
      if (expert >= 0) {
        LocalTensor<T> bin = biasQ_.AllocTensor<T>();
        CopyIn(bin, biasGm_[expert * hidden_ + h0], len);
        biasQ_.EnQue(bin);
      }
      xin = rowQ_.DeQue<T>();
      LocalTensor<float> xf = ToFloat(xin, rowF32_, len);
      if (expert >= 0) {
        LocalTensor<T> bin = biasQ_.DeQue<T>();
        Add(xf, xf, ToFloat(bin, biasF32_, len), len);
        biasQ_.FreeTensor(bin);
      }
      if (hasScales_) Muls(xf, xf, scalesF_.GetValue(pair), len);
      Add(acc, acc, xf, len);
      rowQ_.FreeTensor(xin);
    }
    if constexpr (!IsSame<T, float>::value) Cast(outT, acc, RoundMode::CAST_RINT, len);
    outQ_.EnQue(outT);
    outT = outQ_.DeQue<T>();
    CopyOut(outGm_[r * hidden_ + h0], outT, len);
    outQ_.FreeTensor(outT);
  }

  __aicore__ inline void AddResidual(const LocalTensor<float> &acc, const GlobalTensor<T> &src, uint32_t len) {
    LocalTensor<T> in = rowQ_.AllocTensor<T>();
    CopyIn(in, src, len);
    rowQ_.EnQue(in);
    in = rowQ_.DeQue<T>();
    Add(acc, acc, ToFloat(in, rowF32_, len), len);
    rowQ_.FreeTensor(in);
  }

  TPipe pipe_;
  TQue<QuePosition::VECIN, 2> rowQ_, biasQ_;
  TQue<QuePosition::VECOUT, 2> outQ_;
  TQue<QuePosition::VECIN, 1> idxQ_, scalesQ_, expertQ_;
  TBuf<TPosition::VECCALC> accF32_, rowF32_, biasF32_, scalesF32_;

  GlobalTensor<T> xGm_, x1Gm_, x2Gm_, biasGm_, outGm_;
  GlobalTensor<S> scalesGm_;
  GlobalTensor<int32_t> idxGm_, expertGm_;

  LocalTensor<int32_t> idx_, expert_;
  LocalTensor<S> scalesIn_;
  LocalTensor<float> scalesF_;

  int64_t rows_ = 0, hidden_ = 0, expandedRows_ = 0, biasRows_ = 0, rowBegin_ = 0, rowEnd_ = 0;
  uint32_t topK_ = 1, hChunk_ = 0, batchRows_ = 1, idxRowStride_ = 1, idxKStride_ = 1;
  bool rowMajor_ = false, hasX1_ = false, hasX2_ = false, hasBias_ = false, hasScales_ = false;
};

template <typename T, typename S>
__aicore__ inline void Run(GM_ADDR expandedX, GM_ADDR expandedRowIdx, GM_ADDR x1, GM_ADDR x2, GM_ADDR bias,
                           GM_ADDR scales, GM_ADDR expertIdx, GM_ADDR out, const MoeFinalizeRoutingTilingData &td) {
  MoeFinalizeRoutingKernel<T, S> op;
  op.Init(expandedX, expandedRowIdx, x1, x2, bias, scales, expertIdx, out, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void moe_finalize_routing(GM_ADDR expandedX, GM_ADDR expandedRowIdx, GM_ADDR x1,
                                                           GM_ADDR x2, GM_ADDR bias, GM_ADDR scales,
                                                           GM_ADDR expertIdx, GM_ADDR out, GM_ADDR workspace,
                                                           GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  GET_TILING_DATA_WITH_STRUCT(MoeFinalizeRoutingTilingData, td, tiling);
  // Literal keys (the CANN compiler builds one binary per TILING_KEY_IS); see the kMoeFinalizeRoutingKey* constants.
  if (TILING_KEY_IS(1)) {
    Run<float, float>(expandedX, expandedRowIdx, x1, x2, bias, scales, expertIdx, out, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half, half>(expandedX, expandedRowIdx, x1, x2, bias, scales, expertIdx, out, td);
  } else if (TILING_KEY_IS(3)) {
    Run<half, float>(expandedX, expandedRowIdx, x1, x2, bias, scales, expertIdx, out, td);
  } else if (TILING_KEY_IS(4)) {
    Run<bfloat16_t, bfloat16_t>(expandedX, expandedRowIdx, x1, x2, bias, scales, expertIdx, out, td);
  } else if (TILING_KEY_IS(5)) {
    Run<bfloat16_t, float>(expandedX, expandedRowIdx, x1, x2, bias, scales, expertIdx, out, td);
  }
}
