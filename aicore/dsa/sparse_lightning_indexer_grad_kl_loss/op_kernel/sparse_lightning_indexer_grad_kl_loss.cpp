// sparse_lightning_indexer_grad_kl_loss: the indexer's KL loss and its gradients over each token's
// selected keys (sparse_indices); the kernel is lightning_indexer_kl_loss_kernel.h.
#include "dsa/lightning_indexer_kl_loss_kernel.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

template <typename T>
__aicore__ inline void Run(GM_ADDR q, GM_ADDR k, GM_ADDR qIdx, GM_ADDR kIdx, GM_ADDR w, GM_ADDR indices, GM_ADDR sMax,
                           GM_ADDR sSum, GM_ADDR qRope, GM_ADDR kRope, GM_ADDR qLen, GM_ADDR kLen, GM_ADDR dqIdx,
                           GM_ADDR dkIdx, GM_ADDR dw, GM_ADDR loss, GM_ADDR workspace,
                           const LightningIndexerGradTilingData &td) {
  KlLossKernel<T, false> op;
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmNT, &td.mmNT, op.mmNN, &td.mmNN, op.mmTN, &td.mmTN);
  op.Init(q, k, qIdx, kIdx, w, indices, sMax, sSum, qRope, kRope, qLen, kLen, dqIdx, dkIdx, dw, loss, workspace, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void sparse_lightning_indexer_grad_kl_loss(
    GM_ADDR query, GM_ADDR key, GM_ADDR queryIndex, GM_ADDR keyIndex, GM_ADDR weights, GM_ADDR sparseIndices,
    GM_ADDR softmaxMax, GM_ADDR softmaxSum, GM_ADDR queryRope, GM_ADDR keyRope, GM_ADDR actualSeqQlen,
    GM_ADDR actualSeqKlen, GM_ADDR dQueryIndex, GM_ADDR dKeyIndex, GM_ADDR dWeights, GM_ADDR loss, GM_ADDR workspace,
    GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(LightningIndexerGradTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(query, key, queryIndex, keyIndex, weights, sparseIndices, softmaxMax, softmaxSum, queryRope, keyRope,
               actualSeqQlen, actualSeqKlen, dQueryIndex, dKeyIndex, dWeights, loss, workspace, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(query, key, queryIndex, keyIndex, weights, sparseIndices, softmaxMax, softmaxSum, queryRope, keyRope,
              actualSeqQlen, actualSeqKlen, dQueryIndex, dKeyIndex, dWeights, loss, workspace, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(query, key, queryIndex, keyIndex, weights, sparseIndices, softmaxMax, softmaxSum, queryRope,
                    keyRope, actualSeqQlen, actualSeqKlen, dQueryIndex, dKeyIndex, dWeights, loss, workspace, td);
  }
}
