// MindSpore CPU entry of sparse_lightning_indexer_grad_kl_loss: checks the main attention's and
// the indexer's tensors against the layout, the statistics' layout and sparse_indices (range,
// repeats), tiles and runs the kernel on the twin (all blocks at once: the key gradient and the
// loss meet at a SyncAll).
// Inputs: query, key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum,
// query_rope, key_rope, actual_seq_qlen, actual_seq_klen (rope and lengths: [1] placeholders when
// absent); outputs: d_query_index, d_key_index, d_weights, loss.
#include <cstdint>
#include <string>
#include <vector>

#include "dsa/dsa_host.h"
#include "dsa/lightning_indexer_grad_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void sparse_lightning_indexer_grad_kl_loss(uint8_t *query, uint8_t *key, uint8_t *queryIndex,
                                                      uint8_t *keyIndex, uint8_t *weights, uint8_t *sparseIndices,
                                                      uint8_t *softmaxMax, uint8_t *softmaxSum, uint8_t *queryRope,
                                                      uint8_t *keyRope, uint8_t *actualSeqQlen, uint8_t *actualSeqKlen,
                                                      uint8_t *dQueryIndex, uint8_t *dKeyIndex, uint8_t *dWeights,
                                                      uint8_t *loss, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "sparse_lightning_indexer_grad_kl_loss";
const char *const kNames[] = {"query", "key", "query_index", "key_index", "weights", "sparse_indices",
                              "softmax_max", "softmax_sum", "query_rope", "key_rope", "actual_seq_qlen",
                              "actual_seq_klen", "d_query_index", "d_key_index", "d_weights", "loss"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 16, "params", "expected 12 inputs and 4 outputs, got " + std::to_string(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const DsaIndexerShape s = DsaReadIndexer(extra, a[2], a[3], a[4], a[10], a[11]);
  const DsaMainAttention main = DsaReadMain(extra, a, s);
  LightningIndexerProblem p;
  p.batch = s.batch;
  p.seq1 = s.packed ? 0 : s.seq1;
  p.seq2 = s.packed ? 0 : s.seq2;
  p.tokens1 = s.tokens1;
  p.qLenMode = s.qLenMode;
  p.kLenMode = s.kLenMode;
  p.n1 = s.n1;
  p.n2 = s.n2;
  p.dim = s.dim;
  p.topK = a[5].shape.empty() ? 0 : a[5].shape.back();
  p.dataType = ToFloatEnum<LiFloat>(a[2].dtype);
  RequireShape(a[5], DsaIndexerOutShape(a[2].shape, a[3].shape, p.topK), "query_index's leading dims, N2, k");
  Require(p.topK >= 1 && p.topK <= kLiMaxTopK, "sparse_indices",
          "last dim must be in [1, " + std::to_string(kLiMaxTopK) + "], got " + std::to_string(p.topK));
  DsaCheckIndices(a[5], s, a[10], a[11], p.topK);
  RequireOutput("d_query_index", 12, ndims, shapes, dtypes, a[2].shape, a[2].dtype);
  RequireOutput("d_key_index", 13, ndims, shapes, dtypes, a[3].shape, a[2].dtype);
  RequireOutput("d_weights", 14, ndims, shapes, dtypes, a[4].shape, a[2].dtype);
  RequireOutput("loss", 15, ndims, shapes, dtypes, Shape{1}, DType::kF32);
  LightningIndexerGradTiling t = ComputeLightningIndexerGradTiling(p, s.tokens2, kAtlasA2, main);
  if (!t.error.empty()) Reject("tiling", t.error);
  if (t.blockDim == 0) {
    *reinterpret_cast<float *>(a[15].data) = 0.0f;
    return 0;
  }
  const twin::Pages workspace = twin::DeviceWorkspace(t.workspaceBytes);
  return twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, [&] {
    sparse_lightning_indexer_grad_kl_loss(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data,
                                          a[6].data, a[7].data, a[8].data, a[9].data, a[10].data, a[11].data,
                                          a[12].data, a[13].data, a[14].data, a[15].data, workspace.data(),
                                          reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int SparseLightningIndexerGradKlLoss(
    int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>>
SparseLightningIndexerGradKlLossInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  return {std::vector<int64_t>(shapes[2], shapes[2] + ndims[2]), std::vector<int64_t>(shapes[3], shapes[3] + ndims[3]),
          std::vector<int64_t>(shapes[4], shapes[4] + ndims[4]), {1}};
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId>
SparseLightningIndexerGradKlLossInferType(std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId t = types.size() > 2 ? types[2] : mindspore::kTypeUnknown;
  return {t, t, t, mindspore::kNumberTypeFloat32};
}
