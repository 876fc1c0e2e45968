// MindSpore CPU entry of linear_attention: checks shapes, dtypes and attributes, tiles for Atlas A2
// and runs the kernel on the twin with the blocks' workspaces.
// Inputs: query, key, value; outputs: attention_out, normalizer.
#include <cstdint>
#include <string>
#include <vector>

#include "../../linear_attention_host.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void linear_attention(uint8_t *query, uint8_t *key, uint8_t *value, uint8_t *attentionOut,
                                 uint8_t *normalizer, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "linear_attention";
const char *const kNames[] = {"query", "key", "value", "attention_out", "normalizer"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 5, "params", "expected 3 inputs and 2 outputs, got " + std::to_string(nparam) + " tensors");
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const LinearAttentionProblem p = LaReadProblem(static_cast<mindspore::AotExtra *>(extraPtr), a[0], a[1], a[2]);
  RequireOutput("attention_out", 3, ndims, shapes, dtypes, a[2].shape, a[0].dtype);
  RequireOutput("normalizer", 4, ndims, shapes, dtypes, Shape{p.batch, p.heads, p.seq}, DType::kF32);
  LinearAttentionTiling t = ComputeLinearAttentionTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  if (t.blockDim == 0) return 0;
  const twin::Workspace workspace(t.workspaceBytes);
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    linear_attention(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, workspace.data(),
                     reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int LinearAttention(int nparam, void **params, int *ndims,
                                                                     int64_t **shapes, const char **dtypes,
                                                                     void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> LinearAttentionInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  return ms_ops::LinearAttentionOutShapes(std::vector<int64_t>(shapes[0], shapes[0] + ndims[0]),
                                          std::vector<int64_t>(shapes[2], shapes[2] + ndims[2]),
                                          ms_ops::LaInferLayout(extra));
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> LinearAttentionInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId q = types.empty() ? mindspore::kTypeUnknown : types[0];
  return {q, mindspore::kNumberTypeFloat32};
}
