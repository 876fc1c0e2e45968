// MindSpore CPU entry of flash_attention_score: checks shapes, dtypes and attributes, tiles for
// Atlas A2 and runs the kernel on the twin with the blocks' tile workspaces.
// Inputs: query, key, value, real_shift, attn_mask, prefix, actual_seq_qlen, actual_seq_kvlen, drop_mask
// ([1] placeholders when absent), dropout_seed (int64 [2]); outputs: softmax_max, softmax_sum, attention_out.
#include <cstdint>
#include <string>
#include <vector>

#include "../../flash_attention_host.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void flash_attention_score(uint8_t *query, uint8_t *key, uint8_t *value, uint8_t *realShift,
                                      uint8_t *attnMask,
                                      uint8_t *prefix, uint8_t *actualSeqQlen, uint8_t *actualSeqKvlen,
                                      uint8_t *dropMask, uint8_t *dropSeed,
                                      uint8_t *softmaxMax, uint8_t *softmaxSum, uint8_t *attentionOut,
                                      uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "flash_attention_score";
const char *const kNames[] = {"query", "key", "value", "real_shift", "attn_mask", "prefix",
                              "actual_seq_qlen", "actual_seq_kvlen", "drop_mask", "dropout_seed", "softmax_max", "softmax_sum", "attention_out"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 13, "params", "expected 10 inputs and 3 outputs, got " + std::to_string(nparam) + " tensors");
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  mindspore::AotExtra *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const FaOptional opt{&a[3], &a[4], &a[5], &a[6], &a[7], &a[8], &a[9]};
  const FlashAttentionProblem p = FaReadProblem(extra, a[0], a[1], a[2], opt);
  const bool packed = p.layout == FaLayout::kTND;
  const Shape stats = packed ? Shape{p.seq1, p.heads1, 8} : Shape{p.batch, p.heads1, p.seq1, 8};
  RequireOutput("softmax_max", 10, ndims, shapes, dtypes, stats, DType::kF32);
  RequireOutput("softmax_sum", 11, ndims, shapes, dtypes, stats, DType::kF32);
  RequireOutput("attention_out", 12, ndims, shapes, dtypes, FaOutShape(a[0].shape, a[1].shape, a[2].shape, p.layout, p.heads1),
                a[0].dtype);
  FlashAttentionTiling t = ComputeFlashAttentionTiling(p, kAtlasA2, false);
  if (!t.error.empty()) Reject("tiling", t.error);
  FaReadDropout(t, p, extra, opt);
  FaSetValueDim(t.data, p);
  Require(packed || p.seq2 >= 1 || p.seq1 == 0 || p.batch == 0, "key", "needs at least one key row (S2 >= 1)");
  if (t.blockDim == 0) return 0;
  const twin::Workspace workspace(t.workspaceBytes);
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    flash_attention_score(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data, a[7].data,
                          a[8].data, a[9].data, a[10].data, a[11].data, a[12].data, workspace.data(), reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int FlashAttentionScore(int nparam, void **params, int *ndims,
                                                                         int64_t **shapes, const char **dtypes,
                                                                         void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> FlashAttentionScoreInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  int64_t heads;
  std::string layout;
  ms_ops::FaInferAttrs(extra, heads, layout);
  auto shape = [&](int i) { return std::vector<int64_t>(shapes[i], shapes[i] + ndims[i]); };
  return ms_ops::FlashAttentionScoreOutShapes(shape(0), shape(1), shape(2), layout, heads);
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> FlashAttentionScoreInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId q = types.empty() ? mindspore::kTypeUnknown : types[0];
  return {mindspore::kNumberTypeFloat32, mindspore::kNumberTypeFloat32, q};
}
