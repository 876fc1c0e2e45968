// MindSpore CPU entry of sparse_flash_attention_grad: checks the forward's problem (as
// sparse_flash_attention does), d_out / attention_out and the statistics against it, tiles for
// Atlas A2 and runs the kernel on the twin (a cooperative launch: the kernel syncs all blocks).
// Inputs: query, key, value, sparse_indices, d_out, attention_out, softmax_max, softmax_sum,
// query_rope, key_rope, actual_seq_lengths_query, actual_seq_lengths_kv; outputs: d_query, d_key,
// d_value, d_query_rope, d_key_rope (the last two the rope placeholders' [1] when absent).
#include <cstdint>
#include <string>
#include <vector>

#include "../../sparse_flash_attention/sparse_flash_attention_host.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void sparse_flash_attention_grad(uint8_t *query, uint8_t *key, uint8_t *value, uint8_t *sparseIndices,
                                            uint8_t *dOut, uint8_t *attentionIn, uint8_t *softmaxMax,
                                            uint8_t *softmaxSum, uint8_t *queryRope, uint8_t *keyRope,
                                            uint8_t *actualSeqQ, uint8_t *actualSeqKv, uint8_t *dQuery, uint8_t *dKey,
                                            uint8_t *dValue, uint8_t *dQueryRope, uint8_t *dKeyRope,
                                            uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "sparse_flash_attention_grad";
const char *const kNames[] = {"query",       "key",          "value",    "sparse_indices",
                              "d_out",       "attention_out", "softmax_max", "softmax_sum",
                              "query_rope",  "key_rope",     "actual_seq_lengths_query",
                              "actual_seq_lengths_kv", "d_query", "d_key", "d_value", "d_query_rope", "d_key_rope"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 17, "params", "expected 12 inputs and 5 outputs, got " + std::to_string(nparam) + " tensors");
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  SparseFlashAttentionProblem p = SfaReadProblem(static_cast<mindspore::AotExtra *>(extraPtr),
                                                       {&a[0], &a[1], &a[2], &a[3], &a[8], &a[9], &a[10], &a[11], nullptr});
  const std::vector<Shape> fwd = SparseFlashAttentionOutShapes(a[0].shape, a[1].shape, a[2].shape,
                                                               p.packed ? "TND" : "BSND");
  for (int i : {4, 5}) {
    RequireShape(a[i], fwd[0], "attention_out's shape");
    Require(a[i].dtype == a[0].dtype, a[i].name, std::string("dtype must be query's ") + a[0].dtypeName);
  }
  for (int i : {6, 7}) {
    RequireShape(a[i], fwd[1], "the forward's statistics");
    RequireDType(a[i], DType::kF32, "float32");
  }
  for (int o = 0; o < 5; ++o) {
    const Arg &in = a[o < 3 ? o : o + 5];
    RequireOutput(kNames[12 + o], 12 + o, ndims, shapes, dtypes, in.shape, in.dtype);
  }
  p.valueIsKey = a[1].data == a[2].data;
  SparseFlashAttentionTiling t = ComputeSparseFlashAttentionTiling(p, kAtlasA2, true);
  if (!t.error.empty()) Reject("tiling", t.error);
  const twin::Workspace workspace(t.workspaceBytes);
  // Cooperative: the blocks meet at a SyncAll after every round of items, so every block must be
  // resident (the tiling takes at most one block per core).
  return twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, [&] {
    sparse_flash_attention_grad(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data,
                                a[7].data, a[8].data, a[9].data, a[10].data, a[11].data, a[12].data, a[13].data,
                                a[14].data, a[15].data, a[16].data, workspace.data(),
                                reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int SparseFlashAttentionGrad(int nparam, void **params, int *ndims,
                                                                              int64_t **shapes, const char **dtypes,
                                                                              void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

// The gradients have the shapes of query, key, value, query_rope and key_rope.
extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> SparseFlashAttentionGradInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> out;
  for (int i : {0, 1, 2, 8, 9}) out.emplace_back(shapes[i], shapes[i] + ndims[i]);
  return out;
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> SparseFlashAttentionGradInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId q = types.empty() ? mindspore::kTypeUnknown : types[0];
  return {q, q, q, q, q};
}
