// The CPU entries' common part for the two KL-loss kernels (sparse_lightning_indexer_grad_kl_loss
// and its dense warm-up variant dense_lightning_indexer_grad_kl_loss): the indexer and main
// attention checks, the problem and tiling, the launch, and shape/type inference. The dense entry
// has no sparse_indices: it passes a placeholder in that slot, and its k is the longest sequence's
// key count (every visible key is "selected").
#ifndef MS_OPS_DSA_KL_LOSS_HOST_H_
#define MS_OPS_DSA_KL_LOSS_HOST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dsa/dsa_host.h"
#include "dsa/lightning_indexer_grad_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

namespace ms_ops {

// Argument slots of both entries, in the sparse kernel's order (the outputs follow the inputs).
enum KlSlot : size_t {
  kKlQuery, kKlKey, kKlQueryIndex, kKlKeyIndex, kKlWeights, kKlSparseIndices, kKlSoftmaxMax, kKlSoftmaxSum,
  kKlQueryRope, kKlKeyRope, kKlSeqQ, kKlSeqK, kKlDQueryIndex, kKlDKeyIndex, kKlDWeights, kKlLoss, kKlSlots
};

// The kernel call of one entry: the tensors in KlSlot order, the workspace, the tiling.
using KlKernel = void (*)(const std::vector<Arg> &a, uint8_t *workspace, uint8_t *tiling);

// Checks every tensor, tiles for Atlas A2 and launches `kernel` on all blocks at once (the key
// gradient and the loss meet at a SyncAll). `a` in KlSlot order; `firstOut` is the index of
// d_query_index among the entry's own tensors (its outputs' shapes are read there).
inline int KlLossRun(const char *op, mindspore::AotExtra *extra, const std::vector<Arg> &a, bool dense, int firstOut,
                     int *ndims, int64_t **shapes, const char **dtypes, KlKernel kernel) {
  const DsaIndexerShape s = DsaReadIndexer(extra, a[kKlQueryIndex], a[kKlKeyIndex], a[kKlWeights], a[kKlSeqQ],
                                           a[kKlSeqK]);
  const DsaMainAttention main = DsaReadMain(extra, a, s);
  LightningIndexerProblem p = DsaIndexerProblem(s, a[kKlQueryIndex]);
  p.sparseMode = static_cast<uint32_t>(ReadAttr<int64_t>(extra, "sparse_mode"));
  Require(p.sparseMode == 0 || p.sparseMode == 3, "sparse_mode", "must be 0 or 3, got " + std::to_string(p.sparseMode));
  const Arg &idx = a[kKlSparseIndices];
  if (dense) {
    for (const DsaBatch &b : DsaBatches(s, a[kKlSeqQ], a[kKlSeqK])) p.topK = b.keys > p.topK ? b.keys : p.topK;
    if (p.topK == 0) p.topK = 1;
  } else {
    p.topK = idx.shape.empty() ? 0 : idx.shape.back();
    RequireShape(idx, DsaIndexerOutShape(a[kKlQueryIndex].shape, a[kKlKeyIndex].shape, p.topK),
                 "query_index's leading dims, N2, k");
    Require(p.topK >= 1, "sparse_indices", "last dim must be >= 1, got " + std::to_string(p.topK));
    DsaCheckIndices(idx, s, a[kKlSeqQ], a[kKlSeqK], p.topK);
  }
  const DType t = a[kKlQueryIndex].dtype;
  RequireOutput("d_query_index", firstOut, ndims, shapes, dtypes, a[kKlQueryIndex].shape, t);
  RequireOutput("d_key_index", firstOut + 1, ndims, shapes, dtypes, a[kKlKeyIndex].shape, t);
  RequireOutput("d_weights", firstOut + 2, ndims, shapes, dtypes, a[kKlWeights].shape, t);
  RequireOutput("loss", firstOut + 3, ndims, shapes, dtypes, Shape{1}, DType::kF32);
  LightningIndexerGradTiling tiling = ComputeLightningIndexerGradTiling(p, s.tokens2, kAtlasA2, main);
  if (!tiling.error.empty()) Reject("tiling", tiling.error);
  DsaSetBand(tiling.data, ReadAttr<int64_t>(extra, "pre_tokens"), ReadAttr<int64_t>(extra, "next_tokens"));
  if (tiling.blockDim == 0) {
    *reinterpret_cast<float *>(a[kKlLoss].data) = 0.0f;
    return 0;
  }
  const twin::Workspace workspace(tiling.workspaceBytes);
  return twin::LaunchCooperative(op, tiling.blockDim, tiling.tilingKey, [&] {
    kernel(a, workspace.data(), reinterpret_cast<uint8_t *>(&tiling.data));
  });
}

// Outputs: the gradients take query_index's, key_index's and weights' (inputs 2..4) shapes and
// dtype; the loss is float32 [1].
inline std::vector<std::vector<int64_t>> KlLossInferShape(int *ndims, int64_t **shapes) {
  auto shape = [&](int i) { return std::vector<int64_t>(shapes[i], shapes[i] + ndims[i]); };
  return {shape(kKlQueryIndex), shape(kKlKeyIndex), shape(kKlWeights), {1}};
}

inline std::vector<mindspore::TypeId> KlLossInferType(const std::vector<mindspore::TypeId> &types) {
  const mindspore::TypeId t = types.size() > kKlQueryIndex ? types[kKlQueryIndex] : mindspore::kTypeUnknown;
  return {t, t, t, mindspore::kNumberTypeFloat32};
}

}  // namespace ms_ops

#endif  // MS_OPS_DSA_KL_LOSS_HOST_H_
