// moe_finalize_routing (CANN MoeFinalizeRoutingV2): combines expert outputs back into token order,
//   out[r] = x1[r] + x2[r] + sum_k s[r,k] * (expanded_x[j(r,k)] + bias[expert_idx[r,k]]),
// j(r,k) = expanded_row_idx[k*R + r] (modes 0/1) or expanded_row_idx[r*K + k] (modes 2/3).
// A pair whose j is -1 (dropped) or >= N (past an active_num truncation) adds nothing.
//
// Blocks own contiguous output rows, so every output element is written once, by one block. Each
// row is accumulated in fp32 over k in ascending order, one H chunk at a time.
#include "../../moe_finalize_routing_common.h"
#include "moe_finalize_routing_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

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
    hChunk_ = td.hChunk;
    batchRows_ = td.batchRows;
    hasX1_ = td.hasX1 != 0;
    hasX2_ = td.hasX2 != 0;
    hasBias_ = td.hasBias != 0;
    hasScales_ = td.hasScales != 0;
    const int64_t block = GetBlockIdx();
    const int64_t extra = block < td.rowsRemainder ? block : td.rowsRemainder;
    rowBegin_ = block * td.rowsPerBlock + extra;
    rowEnd_ = rowBegin_ + td.rowsPerBlock + (block < td.rowsRemainder ? 1 : 0);

    xGm_.SetGlobalBuffer((__gm__ T *)expandedX, uint64_t(expandedRows_) * hidden_);
    outGm_.SetGlobalBuffer((__gm__ T *)out, uint64_t(rows_) * hidden_);
    if (hasX1_) x1Gm_.SetGlobalBuffer((__gm__ T *)x1, uint64_t(rows_) * hidden_);
    if (hasX2_) x2Gm_.SetGlobalBuffer((__gm__ T *)x2, uint64_t(rows_) * hidden_);
    if (hasBias_) biasGm_.SetGlobalBuffer((__gm__ T *)bias, uint64_t(td.biasRows) * hidden_);

    // Same sizes as MoeFinalizeRoutingUbPerH / MoeFinalizeRoutingUbBatch in the host tiling.
    const uint32_t chunkBytes = hChunk_ * sizeof(T);
    pipe_.InitBuffer(rowQ_, 2, chunkBytes);
    pipe_.InitBuffer(outQ_, 2, chunkBytes);
    if (hasBias_) pipe_.InitBuffer(biasQ_, 2, chunkBytes);
    if constexpr (!AscendC::IsSameType<T, float>::value) {
      pipe_.InitBuffer(accF32_, hChunk_ * 4);
      pipe_.InitBuffer(rowF32_, hChunk_ * 4);
      if (hasBias_) pipe_.InitBuffer(biasF32_, hChunk_ * 4);
    }
    batch_.Init(pipe_, expandedRowIdx, scales, expertIdx, rows_, topK_, expandedRows_, td.biasRows, batchRows_,
                (td.dropPadMode & 2) != 0, hasScales_, hasBias_);
  }

  __aicore__ inline void Process() {
    for (int64_t r0 = rowBegin_; r0 < rowEnd_; r0 += batchRows_) {
      const uint32_t nb = batch_.Rows(r0, rowEnd_);
      batch_.Load(r0, nb, hasScales_, hasBias_);
      for (uint32_t i = 0; i < nb; ++i) {
        for (int64_t h0 = 0; h0 < hidden_; h0 += hChunk_) {
          CombineChunk(r0 + i, i, h0, static_cast<uint32_t>(Min64(hidden_ - h0, hChunk_)));
        }
      }
      batch_.Free();
    }
  }

 private:
  // Output row r (batch row i), elements [h0, h0 + len).
  __aicore__ inline void CombineChunk(int64_t r, uint32_t i, int64_t h0, uint32_t len) {
    LocalTensor<T> outT = outQ_.AllocTensor<T>();
    LocalTensor<float> acc;
    if constexpr (AscendC::IsSameType<T, float>::value) {
      acc = outT;
    } else {
      acc = accF32_.Get<float>();
    }
    Duplicate(acc, 0.0f, len);
    if (hasX1_) AddResidual(acc, x1Gm_[r * hidden_ + h0], len);
    if (hasX2_) AddResidual(acc, x2Gm_[r * hidden_ + h0], len);
    for (uint32_t k = 0; k < topK_; ++k) {
      const int64_t j = batch_.Slot(i, k);
      if (j < 0) continue;
      const int64_t expert = hasBias_ ? batch_.Expert(i, k) : -1;
      LocalTensor<float> xf;
      LocalTensor<T> xin =
          LoadSlotRow(rowQ_, biasQ_, rowF32_, biasF32_, xGm_, biasGm_, j, expert, hidden_, h0, len, xf);
      if (hasScales_) Muls(xf, xf, batch_.Scale(i, k), len);
      Add(acc, acc, xf, len);
      rowQ_.FreeTensor(xin);
    }
    if constexpr (!AscendC::IsSameType<T, float>::value) Cast(outT, acc, RoundMode::CAST_RINT, len);
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
  TBuf<TPosition::VECCALC> accF32_, rowF32_, biasF32_;
  MoeRoutingBatch<S> batch_;

  GlobalTensor<T> xGm_, x1Gm_, x2Gm_, biasGm_, outGm_;

  int64_t rows_ = 0, hidden_ = 0, expandedRows_ = 0, rowBegin_ = 0, rowEnd_ = 0;
  uint32_t topK_ = 1, hChunk_ = 0, batchRows_ = 1;
  bool hasX1_ = false, hasX2_ = false, hasBias_ = false, hasScales_ = false;
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
  REGISTER_TILING_DEFAULT(MoeFinalizeRoutingTilingData);
  GET_TILING_DATA(td, tiling);
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
