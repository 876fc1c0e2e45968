// lightning_indexer_grad: d query, d key and d weights of Σ dy · sparse_values, the selection
// (sparse_indices) held fixed: dI on a token's selected keys is dy itself. The engine
// (lightning_indexer_grad_kernel.h) does the rest; the key gradient is summed per block and the
// blocks' partials added in block order, so the result is deterministic.
#include "dsa/lightning_indexer_grad_kernel.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

template <typename T>
class LightningIndexerGradKernel : public LightningIndexerGradBase<T, LightningIndexerGradKernel<T>> {
  using Base = LightningIndexerGradBase<T, LightningIndexerGradKernel<T>>;
  friend Base;

 public:
  __aicore__ inline LightningIndexerGradKernel() {}

  __aicore__ inline void Init(GM_ADDR q, GM_ADDR k, GM_ADDR dy, GM_ADDR indices, GM_ADDR w, GM_ADDR qLen,
                              GM_ADDR kLen, GM_ADDR dq, GM_ADDR dk, GM_ADDR dw, GM_ADDR workspace,
                              const LightningIndexerGradTilingData &td) {
    dyGm_.SetGlobalBuffer((__gm__ T *)dy);
    this->InitBase(q, k, indices, w, qLen, kLen, dq, dk, dw, workspace, td);
  }

 private:
  // dI_[c] = dy at the c-th live selection, zero past the live keys.
  __aicore__ inline void DeltaI(const LiSeg &, int64_t, int64_t, int64_t sel, uint32_t live, uint32_t kp) {
    const uint32_t k = static_cast<uint32_t>(this->td_->topK);
    LocalTensor<float> dI = this->dI_.template Get<float>();
    LocalTensor<int32_t> pos = this->pos_.template Get<int32_t>();
    LocalTensor<T> x = this->inQ_.template AllocTensor<T>();
    CopyIn(x, dyGm_[sel], k);
    this->inQ_.EnQue(x);
    x = this->inQ_.template DeQue<T>();
    LocalTensor<float> xf = ToFloat(x, this->xf_, k);
    Duplicate(dI, 0.0f, static_cast<int32_t>(kp));
    OrderPipes<HardEvent::V_S>(&this->pipe);
    for (uint32_t c = 0; c < live; ++c) dI.SetValue(c, xf.GetValue(static_cast<uint32_t>(pos.GetValue(c))));
    OrderPipes<HardEvent::S_V>(&this->pipe);
    this->inQ_.FreeTensor(x);
  }

  __aicore__ inline uint32_t Keys(const LiSeg &seg, int64_t, int64_t sel) { return this->Gather(seg, sel); }
  __aicore__ inline void Empty(int64_t, int64_t) {}
  __aicore__ inline void Finish() {}

  GlobalTensor<T> dyGm_;
};

template <typename T>
__aicore__ inline void Run(GM_ADDR q, GM_ADDR k, GM_ADDR dy, GM_ADDR indices, GM_ADDR w, GM_ADDR qLen, GM_ADDR kLen,
                           GM_ADDR dq, GM_ADDR dk, GM_ADDR dw, GM_ADDR workspace,
                           const LightningIndexerGradTilingData &td) {
  LightningIndexerGradKernel<T> op;
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmNT, &td.mmNT, op.mmNN, &td.mmNN, op.mmTN, &td.mmTN);
  op.Init(q, k, dy, indices, w, qLen, kLen, dq, dk, dw, workspace, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void lightning_indexer_grad(GM_ADDR query, GM_ADDR key, GM_ADDR dy,
                                                             GM_ADDR sparseIndices, GM_ADDR weights,
                                                             GM_ADDR actualSeqLengthsQuery,
                                                             GM_ADDR actualSeqLengthsKey, GM_ADDR dQuery, GM_ADDR dKey,
                                                             GM_ADDR dWeights, GM_ADDR workspace, GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(LightningIndexerGradTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(query, key, dy, sparseIndices, weights, actualSeqLengthsQuery, actualSeqLengthsKey, dQuery, dKey,
               dWeights, workspace, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(query, key, dy, sparseIndices, weights, actualSeqLengthsQuery, actualSeqLengthsKey, dQuery, dKey,
              dWeights, workspace, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(query, key, dy, sparseIndices, weights, actualSeqLengthsQuery, actualSeqLengthsKey, dQuery, dKey,
                    dWeights, workspace, td);
  }
}
