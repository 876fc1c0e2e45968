// MindSpore CPU entry of linear_attention_grad: checks shapes, dtypes and attributes, tiles for
// Atlas A2 and runs the kernel on the twin with the blocks' workspaces.
// Inputs: query, key, value, dout, attention_out, normalizer; outputs: dq, dk, dv.
#include <cstdint>
#include <string>
#include <vector>

#include "../../linear_attention_host.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void linear_attention_grad(uint8_t *query, uint8_t *key, uint8_t *value, uint8_t *dout,
                                      uint8_t *attentionOut, uint8_t *normalizer, uint8_t *dq, uint8_t *dk,
                                      uint8_t *dv, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "linear_attention_grad";
const char *const kNames[] = {"query", "key", "value", "dout", "attention_out", "normalizer", "dq", "dk", "dv"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 9, "params", "expected 6 inputs and 3 outputs, got " + std::to_string(nparam) + " tensors");
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const LinearAttentionProblem p = LaReadProblem(static_cast<mindspore::AotExtra *>(extraPtr), a[0], a[1], a[2]);
  for (int i : {3, 4}) {
    RequireShape(a[i], a[2].shape, "value's");
    RequireDType(a[i], a[0].dtype, a[0].dtypeName);
  }
  RequireShape(a[5], Shape{p.batch, p.heads, p.seq}, "[B, N, S]");
  RequireDType(a[5], DType::kF32, "float32");
  for (int o = 0; o < 3; ++o) RequireOutput(kNames[6 + o], 6 + o, ndims, shapes, dtypes, a[o].shape, a[0].dtype);
  LinearAttentionTiling t = ComputeLinearAttentionTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  if (t.blockDim == 0) return 0;
  const twin::Workspace workspace(t.workspaceBytes);
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    linear_attention_grad(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data, a[7].data,
                          a[8].data, workspace.data(), reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int LinearAttentionGrad(int nparam, void **params, int *ndims,
                                                                         int64_t **shapes, const char **dtypes,
                                                                         void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

// dq, dk, dv have the shapes and dtype of query, key, value.
extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> LinearAttentionGradInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < 3; ++i) out.emplace_back(shapes[i], shapes[i] + ndims[i]);
  return out;
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> LinearAttentionGradInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId q = types.empty() ? mindspore::kTypeUnknown : types[0];
  return {q, q, q};
}
