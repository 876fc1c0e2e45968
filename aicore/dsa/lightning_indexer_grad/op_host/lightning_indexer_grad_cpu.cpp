// MindSpore CPU entry of lightning_indexer_grad: checks the forward's problem, dy and
// sparse_indices (range, repeats), tiles and runs the kernel on the twin (all blocks at once: the
// key gradient's partials meet at a SyncAll).
// Inputs: query, key, dy, sparse_indices, weights, actual_seq_lengths_query, actual_seq_lengths_key;
// outputs: d_query, d_key, d_weights.
#include <cstdint>
#include <string>
#include <vector>

#include "dsa/dsa_host.h"
#include "dsa/lightning_indexer_grad_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void lightning_indexer_grad(uint8_t *query, uint8_t *key, uint8_t *dy, uint8_t *sparseIndices,
                                       uint8_t *weights, uint8_t *actualSeqLengthsQuery, uint8_t *actualSeqLengthsKey,
                                       uint8_t *dQuery, uint8_t *dKey, uint8_t *dWeights, uint8_t *workspace,
                                       uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "lightning_indexer_grad";
const char *const kNames[] = {"query", "key", "dy", "sparse_indices", "weights", "actual_seq_lengths_query",
                              "actual_seq_lengths_key", "d_query", "d_key", "d_weights"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 10, "params", "expected 7 inputs and 3 outputs, got " + std::to_string(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const DsaIndexerShape s = DsaReadIndexer(extra, a[0], a[1], a[4], a[5], a[6]);
  LightningIndexerProblem p = DsaIndexerProblem(s, a[0]);
  p.topK = a[3].shape.empty() ? 0 : a[3].shape.back();
  const Shape sel = DsaIndexerOutShape(a[0].shape, a[1].shape, p.topK);
  RequireShape(a[3], sel, "query's leading dims, key heads, k");
  RequireShape(a[2], sel, "sparse_indices' shape");
  Require(a[2].dtype == a[0].dtype, "dy", std::string("dtype must be query's ") + a[0].dtypeName);
  Require(p.topK >= 1 && p.topK <= kLiMaxTopK, "sparse_indices",
          "last dim must be in [1, " + std::to_string(kLiMaxTopK) + "], got " + std::to_string(p.topK));
  DsaCheckIndices(a[3], s, a[5], a[6], p.topK);
  RequireOutput("d_query", 7, ndims, shapes, dtypes, a[0].shape, a[0].dtype);
  RequireOutput("d_key", 8, ndims, shapes, dtypes, a[1].shape, a[0].dtype);
  RequireOutput("d_weights", 9, ndims, shapes, dtypes, a[4].shape, a[0].dtype);
  LightningIndexerGradTiling t = ComputeLightningIndexerGradTiling(p, s.tokens2, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  if (t.blockDim == 0) return 0;
  const twin::Workspace workspace(t.workspaceBytes);
  return twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, [&] {
    lightning_indexer_grad(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data, a[7].data,
                           a[8].data, a[9].data, workspace.data(), reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int LightningIndexerGrad(int nparam, void **params, int *ndims,
                                                                          int64_t **shapes, const char **dtypes,
                                                                          void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> LightningIndexerGradInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  return {std::vector<int64_t>(shapes[0], shapes[0] + ndims[0]), std::vector<int64_t>(shapes[1], shapes[1] + ndims[1]),
          std::vector<int64_t>(shapes[4], shapes[4] + ndims[4])};
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> LightningIndexerGradInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId q = types.empty() ? mindspore::kTypeUnknown : types[0];
  return {q, q, q};
}
