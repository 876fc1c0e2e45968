// MindSpore CPU entry of sparse_flash_attention: checks shapes, dtypes, attributes and every index,
// tiles for Atlas A2 and runs the kernel on the twin with the blocks' workspaces.
// Inputs: query, key, value, sparse_indices, query_rope, key_rope, actual_seq_lengths_query,
// actual_seq_lengths_kv, block_table (rope, lengths and table [1] placeholders when absent);
// outputs: attention_out, softmax_max, softmax_sum.
#include <cstdint>
#include <string>
#include <vector>

#include "../sparse_flash_attention_host.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void sparse_flash_attention(uint8_t *query, uint8_t *key, uint8_t *value, uint8_t *sparseIndices,
                                       uint8_t *queryRope, uint8_t *keyRope, uint8_t *actualSeqQ, uint8_t *actualSeqKv,
                                       uint8_t *blockTable, uint8_t *attentionOut, uint8_t *softmaxMax, uint8_t *softmaxSum,
                                       uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "sparse_flash_attention";
const char *const kNames[] = {"query",       "key",           "value",       "sparse_indices",
                              "query_rope",  "key_rope",      "actual_seq_lengths_query",
                              "actual_seq_lengths_kv",        "block_table", "attention_out", "softmax_max",
                              "softmax_sum"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 12, "params", "expected 9 inputs and 3 outputs, got " + std::to_string(nparam) + " tensors");
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  SparseFlashAttentionProblem p = SfaReadProblem(static_cast<mindspore::AotExtra *>(extraPtr),
                                                       {&a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7], &a[8]});
  const std::vector<Shape> want = SparseFlashAttentionOutShapes(a[0].shape, a[1].shape, a[2].shape,
                                                                p.packed ? "TND" : "BSND");
  RequireOutput("attention_out", 9, ndims, shapes, dtypes, want[0], a[0].dtype);
  RequireOutput("softmax_max", 10, ndims, shapes, dtypes, want[1], DType::kF32);
  RequireOutput("softmax_sum", 11, ndims, shapes, dtypes, want[2], DType::kF32);
  p.valueIsKey = a[1].data == a[2].data;
  SparseFlashAttentionTiling t = ComputeSparseFlashAttentionTiling(p, kAtlasA2, false);
  if (!t.error.empty()) Reject("tiling", t.error);
  if (t.blockDim == 0) return 0;
  const twin::Workspace workspace(t.workspaceBytes);
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    sparse_flash_attention(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data, a[7].data,
                           a[8].data, a[9].data, a[10].data, a[11].data, workspace.data(), reinterpret_cast<uint8_t *>(&t.data));
  });
}

// The layout attribute for an infer hook, which never throws: "" when unreadable.
std::string InferLayout(mindspore::AotExtra *extra) {
  try {
    if (extra != nullptr && extra->HasAttr("layout")) return extra->Attr<std::string>("layout");
  } catch (...) {
  }
  return "";
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int SparseFlashAttention(int nparam, void **params, int *ndims,
                                                                          int64_t **shapes, const char **dtypes,
                                                                          void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> SparseFlashAttentionInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  auto shape = [&](int i) { return std::vector<int64_t>(shapes[i], shapes[i] + ndims[i]); };
  return ms_ops::SparseFlashAttentionOutShapes(shape(0), shape(1), shape(2), ms_ops::InferLayout(extra));
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> SparseFlashAttentionInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId q = types.empty() ? mindspore::kTypeUnknown : types[0];
  return {q, mindspore::kNumberTypeFloat32, mindspore::kNumberTypeFloat32};
}
