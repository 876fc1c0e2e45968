// MindSpore CPU entry of lightning_indexer: checks shapes, dtypes, attributes and the sequence
// lengths, tiles for Atlas A2 and runs the kernel on the twin with the blocks' workspaces.
// Inputs: query, key, weights, actual_seq_lengths_query, actual_seq_lengths_key (int64),
// block_table (int32; [1] placeholders when absent); outputs: sparse_indices (int32),
// sparse_values (query's dtype).
#include <cstdint>
#include <string>
#include <vector>

#include "dsa/dsa_host.h"
#include "dsa/lightning_indexer_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void lightning_indexer(uint8_t *query, uint8_t *key, uint8_t *weights, uint8_t *actualSeqLengthsQuery,
                                  uint8_t *actualSeqLengthsKey, uint8_t *blockTable, uint8_t *sparseIndices,
                                  uint8_t *sparseValues, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "lightning_indexer";
const char *const kNames[] = {"query", "key", "weights", "actual_seq_lengths_query", "actual_seq_lengths_key",
                              "block_table", "sparse_indices", "sparse_values"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 8, "params", "expected 6 inputs and 2 outputs, got " + std::to_string(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const DsaIndexerShape s = DsaReadIndexer(extra, a[0], a[1], a[2], a[3], a[4], &a[5]);
  LightningIndexerProblem p = DsaIndexerProblem(s, a[0]);
  p.topK = ReadAttr<int64_t>(extra, "sparse_count");
  p.sparseMode = static_cast<uint32_t>(ReadAttr<int64_t>(extra, "sparse_mode"));
  p.blockSize = s.blockSize;
  p.maxBlocks = s.maxBlocks;
  Require(p.sparseMode == 0 || p.sparseMode == 3, "sparse_mode", "must be 0 or 3, got " + std::to_string(p.sparseMode));
  Require(p.topK >= 1 && p.topK <= kLiMaxTopK, "sparse_count",
          "must be in [1, " + std::to_string(kLiMaxTopK) + "], got " + std::to_string(p.topK));
  const Shape out = DsaIndexerOutShape(a[0].shape, a[1].shape, p.topK);
  RequireOutput("sparse_indices", 6, ndims, shapes, dtypes, out, DType::kI32);
  RequireOutput("sparse_values", 7, ndims, shapes, dtypes, out, a[0].dtype);
  LightningIndexerTiling t = ComputeLightningIndexerTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  if (t.blockDim == 0) return 0;
  const twin::Workspace workspace(t.workspaceBytes);
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    lightning_indexer(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data, a[7].data,
                      workspace.data(), reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int LightningIndexer(int nparam, void **params, int *ndims,
                                                                      int64_t **shapes, const char **dtypes,
                                                                      void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> LightningIndexerInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  int64_t k = -1;
  try {
    k = extra->Attr<int64_t>("sparse_count");
  } catch (...) {
  }
  const ms_ops::Shape out = ms_ops::DsaIndexerOutShape(ms_ops::Shape(shapes[0], shapes[0] + ndims[0]),
                                                       ms_ops::Shape(shapes[1], shapes[1] + ndims[1]), k);
  return {out, out};
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> LightningIndexerInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId q = types.empty() ? mindspore::kTypeUnknown : types[0];
  return {mindspore::kNumberTypeInt32, q};
}
