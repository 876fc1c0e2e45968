// MindSpore CPU entry of dense_lightning_indexer_grad_kl_loss: the sparse KL loss's checks without
// a selection (every visible key of a token, at most 2048 per sequence), tiles and runs the kernel
// on the twin (all blocks at once: the key gradient and the loss meet at a SyncAll).
// Inputs: query, key, query_index, key_index, weights, softmax_max, softmax_sum, query_rope,
// key_rope, actual_seq_qlen, actual_seq_klen; outputs: d_query_index, d_key_index, d_weights, loss.
#include <cstdint>
#include <string>
#include <vector>

#include "dsa/dsa_host.h"
#include "dsa/lightning_indexer_grad_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void dense_lightning_indexer_grad_kl_loss(uint8_t *query, uint8_t *key, uint8_t *queryIndex,
                                                     uint8_t *keyIndex, uint8_t *weights, uint8_t *softmaxMax,
                                                     uint8_t *softmaxSum, uint8_t *queryRope, uint8_t *keyRope,
                                                     uint8_t *actualSeqQlen, uint8_t *actualSeqKlen,
                                                     uint8_t *dQueryIndex, uint8_t *dKeyIndex, uint8_t *dWeights,
                                                     uint8_t *loss, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "dense_lightning_indexer_grad_kl_loss";
const char *const kNames[] = {"query", "key", "query_index", "key_index", "weights", "softmax_max", "softmax_sum",
                              "query_rope", "key_rope", "actual_seq_qlen", "actual_seq_klen", "d_query_index",
                              "d_key_index", "d_weights", "loss"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 15, "params", "expected 11 inputs and 4 outputs, got " + std::to_string(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const DsaIndexerShape s = DsaReadIndexer(extra, a[2], a[3], a[4], a[9], a[10]);
  // The sparse kernel's argument order, with no selection, for the shared checks.
  std::vector<Arg> sparseOrder(a.begin(), a.begin() + 5);
  sparseOrder.push_back({"sparse_indices", {}, DType::kI32, "int32", nullptr});
  sparseOrder.insert(sparseOrder.end(), a.begin() + 5, a.begin() + 9);
  const DsaMainAttention main = DsaReadMain(extra, sparseOrder, s);
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
  p.sparseMode = static_cast<uint32_t>(ReadAttr<int64_t>(extra, "sparse_mode"));
  Require(p.sparseMode == 0 || p.sparseMode == 3, "sparse_mode", "must be 0 or 3, got " + std::to_string(p.sparseMode));
  p.dataType = ToFloatEnum<LiFloat>(a[2].dtype);
  for (const DsaBatch &b : DsaBatches(s, a[9], a[10])) p.topK = b.keys > p.topK ? b.keys : p.topK;
  Require(p.topK <= kLiMaxTopK, "key_index",
          "sequences of at most " + std::to_string(kLiMaxTopK) + " keys (the dense loss gathers them all), got " +
              std::to_string(p.topK));
  if (p.topK == 0) p.topK = 1;
  RequireOutput("d_query_index", 11, ndims, shapes, dtypes, a[2].shape, a[2].dtype);
  RequireOutput("d_key_index", 12, ndims, shapes, dtypes, a[3].shape, a[2].dtype);
  RequireOutput("d_weights", 13, ndims, shapes, dtypes, a[4].shape, a[2].dtype);
  RequireOutput("loss", 14, ndims, shapes, dtypes, Shape{1}, DType::kF32);
  LightningIndexerGradTiling t = ComputeLightningIndexerGradTiling(p, s.tokens2, kAtlasA2, main);
  if (!t.error.empty()) Reject("tiling", t.error);
  if (t.blockDim == 0) {
    *reinterpret_cast<float *>(a[14].data) = 0.0f;
    return 0;
  }
  const twin::Pages workspace = twin::DeviceWorkspace(t.workspaceBytes);
  return twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, [&] {
    dense_lightning_indexer_grad_kl_loss(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data,
                                         a[7].data, a[8].data, a[9].data, a[10].data, a[11].data, a[12].data,
                                         a[13].data, a[14].data, workspace.data(), reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int DenseLightningIndexerGradKlLoss(
    int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>>
DenseLightningIndexerGradKlLossInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  return {std::vector<int64_t>(shapes[2], shapes[2] + ndims[2]), std::vector<int64_t>(shapes[3], shapes[3] + ndims[3]),
          std::vector<int64_t>(shapes[4], shapes[4] + ndims[4]), {1}};
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId>
DenseLightningIndexerGradKlLossInferType(std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId t = types.size() > 2 ? types[2] : mindspore::kTypeUnknown;
  return {t, t, t, mindspore::kNumberTypeFloat32};
}
