// Kernel parts that moe_finalize_routing and moe_finalize_routing_grad share: both walk the same
// routing (pair (r,k) -> slot j of expanded_x, scale s[r,k], expert id) in batches of token rows,
// and both read a slot's row of expanded_x plus its expert's bias row in H chunks.
#ifndef MS_OPS_MOE_FINALIZE_ROUTING_COMMON_H_
#define MS_OPS_MOE_FINALIZE_ROUTING_COMMON_H_

#include "../common/kernel_utils.h"

namespace ms_ops {
namespace kernel {

// The routing of token rows [r0, r0 + nb) in UB, for scalar reads. S: dtype of scales (T or float).
// Its UB follows the index/scales/expert terms of the host tiling's Ub*Batch formulas.
template <typename S>
class MoeRoutingBatch {
 public:
  __aicore__ inline MoeRoutingBatch() {}

  __aicore__ inline void Init(AscendC::TPipe &pipe, GM_ADDR expandedRowIdx, GM_ADDR scales, GM_ADDR expertIdx,
                              int64_t rows, uint32_t topK, int64_t expandedRows, int64_t biasRows,
                              uint32_t batchRows, bool rowMajor, bool hasScales, bool hasBias) {
    rows_ = rows;
    topK_ = topK;
    expandedRows_ = expandedRows;
    biasRows_ = biasRows;
    batchRows_ = batchRows;
    rowMajor_ = rowMajor;
    const uint64_t pairs = uint64_t(rows) * topK;
    idxGm_.SetGlobalBuffer((__gm__ int32_t *)expandedRowIdx, pairs);
    if (hasScales) scalesGm_.SetGlobalBuffer((__gm__ S *)scales, pairs);
    if (hasBias) expertGm_.SetGlobalBuffer((__gm__ int32_t *)expertIdx, pairs);

    const uint32_t entries = batchRows * topK;
    // Column-major: K segments of batchRows indices, each starting on a 32-byte block.
    pipe.InitBuffer(idxQ_, 1, rowMajor ? UbBytes(entries, 4) : topK * UbBytes(batchRows, 4));
    if (hasScales) {
      pipe.InitBuffer(scalesQ_, 1, UbBytes(entries, sizeof(S)));
      if constexpr (!AscendC::IsSameType<S, float>::value) pipe.InitBuffer(scalesF32_, UbBytes(entries, 4));
    }
    if (hasBias) pipe.InitBuffer(expertQ_, 1, UbBytes(entries, 4));
  }

  // Rows of the batch starting at r0 in a range ending at `end`.
  __aicore__ inline uint32_t Rows(int64_t r0, int64_t end) const {
    return static_cast<uint32_t>(Min64(end - r0, batchRows_));
  }

  // Indices (and, when asked, scales as fp32 and expert ids) of rows [r0, r0 + nb).
  __aicore__ inline void Load(int64_t r0, uint32_t nb, bool withScales, bool withExperts) {
    const uint32_t entries = nb * topK_;
    withScales_ = withScales;
    withExperts_ = withExperts;
    idx_ = idxQ_.template AllocTensor<int32_t>();
    if (rowMajor_) {
      CopyIn(idx_, idxGm_[r0 * topK_], entries);
      idxRowStride_ = topK_;
      idxKStride_ = 1;
    } else {
      // Column k holds rows r0.. at k*R + r0; each lands 32-byte aligned, KStride() apart whatever
      // nb is (so a batch's layout does not depend on its row count).
      const uint32_t gapBlocks = (UbBytes(batchRows_, 4) - UbBytes(nb, 4)) / kUbAlign;
      AscendC::DataCopyPad(idx_, idxGm_[r0],
                           AscendC::DataCopyExtParams(topK_, nb * 4, uint32_t(rows_ - nb) * 4, gapBlocks, 0),
                           AscendC::DataCopyPadExtParams<int32_t>(false, 0, 0, 0));
      idxRowStride_ = 1;
      idxKStride_ = KStride();
    }
    idxQ_.EnQue(idx_);
    if (withScales) {
      AscendC::LocalTensor<S> s = scalesQ_.template AllocTensor<S>();
      CopyIn(s, scalesGm_[r0 * topK_], entries);
      scalesQ_.EnQue(s);
    }
    if (withExperts) {
      expert_ = expertQ_.template AllocTensor<int32_t>();
      CopyIn(expert_, expertGm_[r0 * topK_], entries);
      expertQ_.EnQue(expert_);
    }
    idx_ = idxQ_.template DeQue<int32_t>();
    if (withScales) {
      scalesIn_ = scalesQ_.template DeQue<S>();
      if constexpr (AscendC::IsSameType<S, float>::value) {
        scalesF_ = scalesIn_;
      } else {
        scalesF_ = scalesF32_.template Get<float>();
        AscendC::Cast(scalesF_, scalesIn_, AscendC::RoundMode::CAST_NONE, entries);
        scalesQ_.FreeTensor(scalesIn_);
      }
    }
    if (withExperts) expert_ = expertQ_.template DeQue<int32_t>();
    // The scalar unit reads these buffers next: wait for the copies and the cast.
    AscendC::PipeBarrier<PIPE_ALL>();
  }

  __aicore__ inline void Free() {
    idxQ_.FreeTensor(idx_);
    if constexpr (AscendC::IsSameType<S, float>::value) {
      if (withScales_) scalesQ_.FreeTensor(scalesIn_);
    }
    if (withExperts_) expertQ_.FreeTensor(expert_);
  }

  // The loaded indices as they lie in UB: row-major (pair i*K + k at i*K + k) or column-major
  // (at k*KStride() + i), and the expert ids (row-major).
  __aicore__ inline const AscendC::LocalTensor<int32_t> &Indices() const { return idx_; }
  __aicore__ inline const AscendC::LocalTensor<int32_t> &Experts() const { return expert_; }
  __aicore__ inline bool RowMajor() const { return rowMajor_; }
  __aicore__ inline uint32_t KStride() const { return UbBytes(batchRows_, 4) / 4; }

  // Slot of batch row i, column k; -1 when the pair contributes nothing (dropped, or past N).
  __aicore__ inline int64_t Slot(uint32_t i, uint32_t k) const {
    const int64_t j = idx_.GetValue(i * idxRowStride_ + k * idxKStride_);
    return (j >= 0 && j < expandedRows_) ? j : -1;
  }

  __aicore__ inline float Scale(uint32_t i, uint32_t k) const { return scalesF_.GetValue(i * topK_ + k); }

  // Expert of the pair, negative when it has no bias row. The entry rejects expert ids outside
  // bias; on the NPU a bad one must still not be read.
  __aicore__ inline int64_t Expert(uint32_t i, uint32_t k) const {
    const int64_t e = expert_.GetValue(i * topK_ + k);
    return e < biasRows_ ? e : -1;
  }

 private:
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> idxQ_, scalesQ_, expertQ_;
  AscendC::TBuf<AscendC::TPosition::VECCALC> scalesF32_;
  AscendC::GlobalTensor<int32_t> idxGm_, expertGm_;
  AscendC::GlobalTensor<S> scalesGm_;
  AscendC::LocalTensor<int32_t> idx_, expert_;
  AscendC::LocalTensor<S> scalesIn_;
  AscendC::LocalTensor<float> scalesF_;
  int64_t rows_ = 0, expandedRows_ = 0, biasRows_ = 0;
  uint32_t topK_ = 1, batchRows_ = 1, idxRowStride_ = 1, idxKStride_ = 1;
  bool rowMajor_ = false, withScales_ = false, withExperts_ = false;
};

// Chunk [h0, h0 + len) of expanded_x row j plus, when expert >= 0, of bias row `expert`, summed
// as fp32 into `xf` (held in xF32, or in the returned tensor for float). The caller frees the
// returned tensor into xQ once it is done with xf. xQ and biasQ may be the same queue.
template <typename T, typename Q>
__aicore__ inline AscendC::LocalTensor<T> LoadSlotRow(Q &xQ, Q &biasQ, AscendC::TBuf<AscendC::TPosition::VECCALC> &xF32,
                                                      AscendC::TBuf<AscendC::TPosition::VECCALC> &biasF32,
                                                      const AscendC::GlobalTensor<T> &x,
                                                      const AscendC::GlobalTensor<T> &bias, int64_t j, int64_t expert,
                                                      int64_t hidden, int64_t h0, uint32_t len,
                                                      AscendC::LocalTensor<float> &xf) {
  AscendC::LocalTensor<T> xin = xQ.template AllocTensor<T>();
  CopyIn(xin, x[j * hidden + h0], len);
  xQ.EnQue(xin);
  if (expert >= 0) {
    AscendC::LocalTensor<T> bin = biasQ.template AllocTensor<T>();
    CopyIn(bin, bias[expert * hidden + h0], len);
    biasQ.EnQue(bin);
  }
  xin = xQ.template DeQue<T>();
  xf = ToFloat(xin, xF32, len);
  if (expert >= 0) {
    AscendC::LocalTensor<T> bin = biasQ.template DeQue<T>();
    AscendC::Add(xf, xf, ToFloat(bin, biasF32, len), len);
    biasQ.FreeTensor(bin);
  }
  return xin;
}

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_MOE_FINALIZE_ROUTING_COMMON_H_
