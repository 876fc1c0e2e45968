// MindSpore CPU entry of flash_attention_score_grad: checks the tensors against the forward's
// attributes, tiles for Atlas A2 and runs the kernel on the twin with the blocks' workspaces.
// Inputs: query, key, value, dy, real_shift, attn_mask, prefix, actual_seq_qlen, actual_seq_kvlen,
// drop_mask, dropout_seed (as the forward's), softmax_max, softmax_sum, attention_in; outputs: dq, dk, dv, dpse (real_shift's
// shape and dtype).
#include <cstdint>
#include <string>
#include <vector>

#include "../../flash_attention_host.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void flash_attention_score_grad(uint8_t *query, uint8_t *key, uint8_t *value, uint8_t *dy,
                                           uint8_t *realShift, uint8_t *attnMask, uint8_t *prefix, uint8_t *actualSeqQlen,
                                           uint8_t *actualSeqKvlen, uint8_t *dropMask, uint8_t *dropSeed, uint8_t *softmaxMax, uint8_t *softmaxSum, uint8_t *attentionIn,
                                           uint8_t *dq, uint8_t *dk, uint8_t *dv, uint8_t *dpse, uint8_t *workspace,
                                           uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "flash_attention_score_grad";
const char *const kNames[] = {"query",        "key",         "value",        "dy",   "real_shift", "attn_mask",
                              "prefix",       "actual_seq_qlen", "actual_seq_kvlen", "drop_mask", "dropout_seed", "softmax_max",
                              "softmax_sum",  "attention_in", "dq", "dk", "dv", "dpse"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 18, "params", "expected 14 inputs and 4 outputs, got " + std::to_string(nparam) + " tensors");
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  mindspore::AotExtra *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const FaOptional opt{&a[4], &a[5], &a[6], &a[7], &a[8], &a[9], &a[10]};
  const FlashAttentionProblem p = FaReadProblem(extra, a[0], a[1], a[2], opt);
  const bool packed = p.layout == FaLayout::kTND;
  const Shape stats = packed ? Shape{p.seq1, p.heads1, 8} : Shape{p.batch, p.heads1, p.seq1, 8};
  const Shape out = FaOutShape(a[0].shape, a[1].shape, a[2].shape, p.layout, p.heads1);
  RequireShape(a[3], out, "attention_out's");
  RequireDType(a[3], a[0].dtype, a[0].dtypeName);
  RequireShape(a[13], out, "attention_out's");
  RequireDType(a[13], a[0].dtype, a[0].dtypeName);
  for (int i : {11, 12}) {
    RequireShape(a[i], stats, packed ? "[T1, N1, 8]" : "[B, N1, S1, 8]");
    RequireDType(a[i], DType::kF32, "float32");
  }
  for (int o = 0; o < 3; ++o) RequireOutput(kNames[14 + o], 14 + o, ndims, shapes, dtypes, a[o].shape, a[0].dtype);
  RequireOutput("dpse", 17, ndims, shapes, dtypes, a[4].shape, a[4].dtype);
  FlashAttentionTiling t = ComputeFlashAttentionTiling(p, kAtlasA2, true);
  if (!t.error.empty()) Reject("tiling", t.error);
  FaReadDropout(t, p, extra, opt);
  FaSetValueDim(t.data, p);
  Require(packed || p.seq2 >= 1 || p.seq1 == 0 || p.batch == 0, "key", "needs at least one key row (S2 >= 1)");
  if (t.blockDim == 0) return 0;
  const twin::Workspace workspace(t.workspaceBytes);
  // The blocks meet at SyncAll between diagonals: all of them run at once.
  return twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, [&] {
    flash_attention_score_grad(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data,
                               a[7].data, a[8].data, a[9].data, a[10].data, a[11].data, a[12].data, a[13].data,
                               a[14].data, a[15].data, a[16].data, a[17].data, workspace.data(),
                               reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int FlashAttentionScoreGrad(int nparam, void **params, int *ndims,
                                                                             int64_t **shapes, const char **dtypes,
                                                                             void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

// dq, dk, dv have the shapes and dtype of query, key, value; dpse real_shift's (input 4).
extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> FlashAttentionScoreGradInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> out;
  for (int i : {0, 1, 2, 4}) out.emplace_back(shapes[i], shapes[i] + ndims[i]);
  return out;
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> FlashAttentionScoreGradInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId q = types.empty() ? mindspore::kTypeUnknown : types[0];
  const mindspore::TypeId pse = types.size() > 4 ? types[4] : mindspore::kTypeUnknown;
  return {q, q, q, pse};
}
