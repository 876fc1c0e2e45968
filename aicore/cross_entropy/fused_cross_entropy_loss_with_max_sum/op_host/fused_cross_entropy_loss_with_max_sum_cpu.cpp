// MindSpore CPU entry of fused_cross_entropy_loss_with_max_sum: checks shapes, dtypes and
// attributes, tiles for Atlas A2 and runs the kernel on the twin. Inputs: logits_max,
// sum_exp_logits, predicted_logits, sum_logits (read only with label smoothing, else any 1-D
// float32 placeholder), vocab_parallel_logits (float32/float16/bfloat16; a placeholder without
// has_logits, never read); outputs: loss, softmax ([0] without has_logits), both float32.
#include <cstdint>
#include <string>
#include <vector>

#include "../../cross_entropy_common.h"
#include "fused_cross_entropy_loss_with_max_sum_infer.h"
#include "fused_cross_entropy_loss_with_max_sum_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_runtime.h"

extern "C" void fused_cross_entropy_loss_with_max_sum(uint8_t *logitsMax, uint8_t *sumExp, uint8_t *predicted,
                                                      uint8_t *sumLogits, uint8_t *logits, uint8_t *loss,
                                                      uint8_t *softmax, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "fused_cross_entropy_loss_with_max_sum";
const char *const kNames[] = {"logits_max", "sum_exp_logits", "predicted_logits", "sum_logits",
                              "vocab_parallel_logits", "loss", "softmax"};

struct Attrs {
  double labelSmoothing = 0.0;
  int64_t vocabSize = 0;
  bool hasLogits = false;
};

Attrs ReadAttrs(mindspore::AotExtra *extra) {
  Require(extra != nullptr, "attributes", "no AotExtra was passed");
  for (const char *name : {"label_smoothing", "vocab_size", "has_logits"})
    Require(extra->HasAttr(name), name, "attribute is missing");
  Attrs a;
  a.labelSmoothing = extra->Attr<float>("label_smoothing");
  a.vocabSize = extra->Attr<int64_t>("vocab_size");
  a.hasLogits = extra->Attr<bool>("has_logits");
  return a;
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == kFcelNumInputs + kFcelNumOutputs, "params",
          "expected 5 inputs and 2 outputs, got " + std::to_string(nparam) + " tensors");
  const Attrs a = ReadAttrs(static_cast<mindspore::AotExtra *>(extraPtr));
  Require(a.labelSmoothing >= 0.0 && a.labelSmoothing < 1.0, "label_smoothing",
          "must be in [0, 1), got " + std::to_string(a.labelSmoothing));
  Require(a.labelSmoothing == 0.0 || a.vocabSize >= 1, "vocab_size",
          "must be >= 1 with label smoothing, got " + std::to_string(a.vocabSize));
  Require(ndims[kFcelMax] == 1, kNames[kFcelMax], "must be 1-D [BT], got shape " + ShapeStr(ndims[0], shapes[0]));
  const int64_t rows = shapes[kFcelMax][0];
  for (int i = kFcelMax; i <= kFcelSumLogits; ++i) {
    Require(ParseDType(dtypes[i]) == DType::kF32, kNames[i], std::string("dtype must be float32, got ") + dtypes[i]);
    // Without label smoothing the kernel never reads sum_logits: the caller may pass a stand-in.
    if (i == kFcelSumLogits && a.labelSmoothing == 0.0) {
      Require(ndims[i] == 1, kNames[i], "must be 1-D, got shape " + ShapeStr(ndims[i], shapes[i]));
      continue;
    }
    Require(ndims[i] == 1 && shapes[i][0] == rows, kNames[i],
            "must have shape [" + std::to_string(rows) + "] (BT of logits_max), got " + ShapeStr(ndims[i], shapes[i]));
  }
  int64_t vocab = 0;
  const DType logitsType = ParseDType(dtypes[kFcelLogits]);
  if (a.hasLogits) {
    Require(ndims[kFcelLogits] == 2 && shapes[kFcelLogits][0] == rows, kNames[kFcelLogits],
            "must be [BT, V] with BT = " + std::to_string(rows) + ", got shape " +
                ShapeStr(ndims[kFcelLogits], shapes[kFcelLogits]));
    Require(logitsType == DType::kF32 || logitsType == DType::kF16 || logitsType == DType::kBF16, kNames[kFcelLogits],
            std::string("dtype must be float32, float16 or bfloat16, got ") + dtypes[kFcelLogits]);
    vocab = shapes[kFcelLogits][1];
  }
  FusedCrossEntropyLossWithMaxSumProblem p;
  p.rows = rows;
  p.vocab = vocab;
  p.hasLogits = a.hasLogits;
  if (a.hasLogits) p.logitsType = ToFloatEnum<CeFloat>(logitsType);
  p.labelSmoothing = a.labelSmoothing;
  p.vocabSize = a.vocabSize;
  FusedCrossEntropyLossWithMaxSumTiling t = ComputeFusedCrossEntropyLossWithMaxSumTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);

  const auto want =
      FusedCrossEntropyLossWithMaxSumOutShapes({{rows}, {rows}, {rows}, {rows}, {rows, vocab}}, a.hasLogits);
  for (int o = 0; o < kFcelNumOutputs; ++o)
    RequireOutput(kNames[kFcelNumInputs + o], kFcelNumInputs + o, ndims, shapes, dtypes, want[o], DType::kF32);
  if (rows == 0) return 0;
  auto gm = [params](int i) { return static_cast<uint8_t *>(params[i]); };
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    fused_cross_entropy_loss_with_max_sum(gm(0), gm(1), gm(2), gm(3), gm(4), gm(5), gm(6), nullptr,
                                          reinterpret_cast<uint8_t *>(&t.data));
  });
}

// Infer hooks never throw into MindSpore: without a readable has_logits they assume none, and
// the kernel entry reports the missing attribute.
bool HasLogitsOrDefault(mindspore::AotExtra *extra) {
  try {
    return extra != nullptr && extra->HasAttr("has_logits") && extra->Attr<bool>("has_logits");
  } catch (...) {
    return false;
  }
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int FusedCrossEntropyLossWithMaxSum(int nparam, void **params,
                                                                                     int *ndims, int64_t **shapes,
                                                                                     const char **dtypes, void *stream,
                                                                                     void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>>
FusedCrossEntropyLossWithMaxSumInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> in;
  for (int i = 0; i < ms_ops::kFcelNumInputs; ++i) in.emplace_back(shapes[i], shapes[i] + ndims[i]);
  return ms_ops::FusedCrossEntropyLossWithMaxSumOutShapes(in, ms_ops::HasLogitsOrDefault(extra));
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId>
FusedCrossEntropyLossWithMaxSumInferType(std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::FusedCrossEntropyLossWithMaxSumOutTypes(mindspore::kNumberTypeFloat32);
}
