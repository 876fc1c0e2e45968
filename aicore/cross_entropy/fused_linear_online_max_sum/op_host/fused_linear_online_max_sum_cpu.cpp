// MindSpore CPU entry of fused_linear_online_max_sum: checks the arguments (shapes, dtypes,
// attributes and, since tensors are host memory here, the target values), tiles for Atlas A2 and
// runs the kernel on the twin, with the per-block logits tiles in a workspace it allocates.
// The shard's range [vocab_start_index, vocab_end_index) may have any length (CANN requires only
// end >= start); a target in it must have a weight row (start + V > target).
// Inputs: input, weight, target; outputs: logits_max_local, sum_exp_logits_local,
// predicted_logits_local, target_mask, masked_target, vocab_parallel_logits, sum_logits_local.
#include <cstdint>
#include <string>
#include <vector>

#include "../../cross_entropy_common.h"
#include "fused_linear_online_max_sum_infer.h"
#include "fused_linear_online_max_sum_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void fused_linear_online_max_sum(uint8_t *input, uint8_t *weight, uint8_t *target, uint8_t *logitsMax,
                                            uint8_t *sumExp, uint8_t *predicted, uint8_t *targetMask,
                                            uint8_t *maskedTarget, uint8_t *logits, uint8_t *sumLogits,
                                            uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

// The first target in the shard's range that lies past the weight's V rows, described for the
// entry's error; empty when there is none (always when end - start <= V).
template <typename Int>
std::string UnbackedTargetMessage(const Int *target, int64_t rows, int64_t start, int64_t end, int64_t vocab) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = target[r];
    if (t < start + vocab || t >= end) continue;
    return "value " + std::to_string(t) + " at [" + std::to_string(r) + "] is in the shard [" + std::to_string(start) +
           ", " + std::to_string(end) + ") but past weight's " + std::to_string(vocab) + " rows (ids up to " +
           std::to_string(start + vocab - 1) + ")";
  }
  return "";
}

constexpr const char *kOp = "fused_linear_online_max_sum";
constexpr int kNumInputs = 3;
const char *const kOutputs[] = {"logits_max_local",      "sum_exp_logits_local", "predicted_logits_local",
                                "target_mask",           "masked_target",        "vocab_parallel_logits",
                                "sum_logits_local"};

struct Attrs {
  int64_t vocabStart = 0, vocabEnd = 0, vocabSize = 0, ignoreIndex = -100;
  bool returnLogits = false;
};

Attrs ReadAttrs(mindspore::AotExtra *extra) {
  Require(extra != nullptr, "attributes", "no AotExtra was passed");
  for (const char *name : {"vocab_start_index", "vocab_end_index", "return_logits", "vocab_size", "ignore_index"})
    Require(extra->HasAttr(name), name, "attribute is missing");
  Attrs a;
  a.vocabStart = extra->Attr<int64_t>("vocab_start_index");
  a.vocabEnd = extra->Attr<int64_t>("vocab_end_index");
  a.returnLogits = extra->Attr<bool>("return_logits");
  a.vocabSize = extra->Attr<int64_t>("vocab_size");
  a.ignoreIndex = extra->Attr<int64_t>("ignore_index");
  return a;
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == kNumInputs + kFlomsNumOutputs, "params",
          "expected 3 inputs and 7 outputs, got " + std::to_string(nparam) + " tensors");
  const Attrs a = ReadAttrs(static_cast<mindspore::AotExtra *>(extraPtr));
  Require(ndims[0] == 2, "input", "must be 2-D [BT, H], got shape " + ShapeStr(ndims[0], shapes[0]));
  Require(ndims[1] == 2, "weight", "must be 2-D [V, H], got shape " + ShapeStr(ndims[1], shapes[1]));
  Require(ndims[2] == 1, "target", "must be 1-D [BT], got shape " + ShapeStr(ndims[2], shapes[2]));
  const DType dt = ParseDType(dtypes[0]), targetType = ParseDType(dtypes[2]);
  Require(dt == DType::kF32 || dt == DType::kF16 || dt == DType::kBF16, "input",
          std::string("dtype must be float32, float16 or bfloat16, got ") + dtypes[0]);
  Require(ParseDType(dtypes[1]) == dt, "weight", std::string("dtype must be input's ") + dtypes[0] + ", got " + dtypes[1]);
  Require(targetType == DType::kI32 || targetType == DType::kI64, "target",
          std::string("dtype must be int32 or int64, got ") + dtypes[2]);
  const int64_t rows = shapes[0][0], hidden = shapes[0][1], vocab = shapes[1][0];
  Require(hidden >= 1, "input", "needs H >= 1, got shape " + ShapeStr(ndims[0], shapes[0]));
  Require(shapes[1][1] == hidden, "weight",
          "must be [V, H] with H = " + std::to_string(hidden) + ", got shape " + ShapeStr(ndims[1], shapes[1]));
  Require(vocab >= 1, "weight", "needs V >= 1 rows, got shape " + ShapeStr(ndims[1], shapes[1]));
  Require(shapes[2][0] == rows, "target",
          "has " + std::to_string(shapes[2][0]) + " entries but input has " + std::to_string(rows) + " rows");
  Require(a.vocabStart >= 0, "vocab_start_index", "must be >= 0, got " + std::to_string(a.vocabStart));
  Require(a.vocabEnd >= a.vocabStart, "vocab_end_index",
          "must be >= vocab_start_index = " + std::to_string(a.vocabStart) + ", got " + std::to_string(a.vocabEnd));
  Require(a.vocabEnd <= a.vocabSize, "vocab_size",
          "must be >= vocab_end_index = " + std::to_string(a.vocabEnd) + ", got " + std::to_string(a.vocabSize));

  const std::vector<std::vector<int64_t>> want =
      FusedLinearOnlineMaxSumOutShapes({{rows, hidden}, {vocab, hidden}, {rows}}, a.returnLogits);
  for (int o = 0; o < kFlomsNumOutputs; ++o) {
    const DType type = o == kFlomsTargetMask ? DType::kU8 : o == kFlomsMaskedTarget ? targetType : DType::kF32;
    RequireOutput(kOutputs[o], kNumInputs + o, ndims, shapes, dtypes, want[o], type);
  }
  const auto *t32 = static_cast<const int32_t *>(params[2]);
  const auto *t64 = static_cast<const int64_t *>(params[2]);
  const bool i32 = targetType == DType::kI32;
  std::string bad = i32 ? BadTargetMessage(t32, rows, a.vocabSize, a.ignoreIndex)
                        : BadTargetMessage(t64, rows, a.vocabSize, a.ignoreIndex);
  if (bad.empty())
    bad = i32 ? UnbackedTargetMessage(t32, rows, a.vocabStart, a.vocabEnd, vocab)
              : UnbackedTargetMessage(t64, rows, a.vocabStart, a.vocabEnd, vocab);
  if (!bad.empty()) Reject("target", bad);
  if (rows == 0) return 0;

  FusedLinearOnlineMaxSumProblem p;
  p.rows = rows;
  p.hidden = hidden;
  p.vocab = vocab;
  p.vocabStart = a.vocabStart;
  p.vocabEnd = a.vocabEnd;
  p.returnLogits = a.returnLogits;
  p.dataType = ToFloatEnum<CeFloat>(dt);
  p.int64Target = targetType == DType::kI64;
  FusedLinearOnlineMaxSumTiling t = ComputeFusedLinearOnlineMaxSumTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  // The blocks' logits tiles (memory-saving mode) and partial statistics, poisoned: every tile is
  // written by its Matmul before the vector pass reads it, every statistic before the merge.
  const twin::Workspace workspace(t.workspaceBytes);
  auto gm = [params](int i) { return static_cast<uint8_t *>(params[i]); };
  const auto body = [&] {
    fused_linear_online_max_sum(gm(0), gm(1), gm(2), gm(3), gm(4), gm(5), gm(6), gm(7), gm(8), gm(9),
                                workspace.data(), reinterpret_cast<uint8_t *>(&t.data));
  };
  // Several vocabulary groups: the blocks meet at a SyncAll before merging their statistics.
  return t.data.vocabGroups > 1 ? twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, body)
                                : twin::Launch(kOp, t.blockDim, t.tilingKey, body);
}

// Infer hooks never throw into MindSpore: without a readable return_logits they return the
// logits-free shapes, and the kernel entry reports the missing attribute.
bool ReturnLogitsOrDefault(mindspore::AotExtra *extra) {
  try {
    return extra != nullptr && extra->HasAttr("return_logits") && extra->Attr<bool>("return_logits");
  } catch (...) {
    return false;
  }
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int FusedLinearOnlineMaxSum(int nparam, void **params, int *ndims,
                                                                             int64_t **shapes, const char **dtypes,
                                                                             void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> FusedLinearOnlineMaxSumInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> in;
  for (int i = 0; i < ms_ops::kNumInputs; ++i) in.emplace_back(shapes[i], shapes[i] + ndims[i]);
  return ms_ops::FusedLinearOnlineMaxSumOutShapes(in, ms_ops::ReturnLogitsOrDefault(extra));
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> FusedLinearOnlineMaxSumInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  if (types.size() < size_t(ms_ops::kNumInputs)) types.resize(ms_ops::kNumInputs, mindspore::kTypeUnknown);
  return ms_ops::FusedLinearOnlineMaxSumOutTypes(types, mindspore::kNumberTypeFloat32, mindspore::kNumberTypeUInt8);
}
