// MindSpore CPU entry of fused_linear_cross_entropy_loss_grad: checks the arguments (shapes, dtypes
// and, since tensors are host memory here, the targets of unmasked rows), tiles for Atlas A2 and
// runs the kernel on the twin with every block on its own thread (the kernel meets at SyncAll).
// Inputs: grad, input, weight, target_mask, masked_target, logits_max, sum_exp_logits, softmax;
// outputs: input_grad, weight_grad. The inputs the mode does not read (logits_max and
// sum_exp_logits with has_softmax, softmax without) may be [1] placeholders.
#include <cstdint>
#include <string>
#include <vector>

#include "fused_linear_cross_entropy_loss_grad_infer.h"
#include "fused_linear_cross_entropy_loss_grad_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void fused_linear_cross_entropy_loss_grad(uint8_t *grad, uint8_t *input, uint8_t *weight,
                                                     uint8_t *targetMask, uint8_t *maskedTarget, uint8_t *logitsMax,
                                                     uint8_t *sumExp, uint8_t *softmax, uint8_t *inputGrad,
                                                     uint8_t *weightGrad, uint8_t *workspace, uint8_t *tiling);

namespace {

using namespace ms_ops;

constexpr const char *kOp = "fused_linear_cross_entropy_loss_grad";
const char *const kArgNames[] = {"grad",       "input",          "weight",  "target_mask", "masked_target",
                                 "logits_max", "sum_exp_logits", "softmax", "input_grad",  "weight_grad"};

// The kernel reads masked_target only on rows whose target_mask bit (bit r % 8 of byte r / 8) is
// clear, and indexes the shard's columns with it: those values must lie in [0, V).
template <typename TI>
void CheckTargets(const Arg &target, const uint8_t *mask, int64_t rows, int64_t vocab) {
  const TI *t = reinterpret_cast<const TI *>(target.data);
  for (int64_t r = 0; r < rows; ++r) {
    if ((mask[r / 8] >> (r % 8)) & 1) continue;
    if (t[r] < 0 || t[r] >= vocab)
      Reject(target.name, "value " + std::to_string(t[r]) + " at row " + std::to_string(r) + " is outside [0, " +
                              std::to_string(vocab) + ") although target_mask marks the row's target as in this shard");
  }
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == ms_ops::kFlcegNumInputs + ms_ops::kFlcegNumOutputs, "nparam",
          "expected 10 tensors (8 inputs, 2 outputs), got " + std::to_string(nparam));
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const float smoothing = ReadAttr<float>(extra, "label_smoothing");
  const int64_t vocabSize = ReadAttr<int64_t>(extra, "vocab_size");
  const bool hasSoftmax = ReadAttr<bool>(extra, "has_softmax");
  const std::vector<Arg> args = Args(nparam, params, ndims, shapes, dtypes, kArgNames);
  const Arg &grad = args[0], &input = args[1], &weight = args[2], &mask = args[3], &target = args[4],
            &logitsMax = args[5], &sumExp = args[6], &softmax = args[7], &inputGrad = args[8], &weightGrad = args[9];

  RequireFloat(input);
  const DType dt = input.dtype;
  RequireDType(grad, DType::kF32, "float32");
  RequireDType(weight, dt, input.dtypeName);
  RequireDType(mask, DType::kU8, "uint8");
  Require(target.dtype == DType::kI32 || target.dtype == DType::kI64, target.name,
          std::string("must be int32 or int64, got ") + target.dtypeName);
  RequireDType(logitsMax, DType::kF32, "float32");
  RequireDType(sumExp, DType::kF32, "float32");
  RequireDType(softmax, DType::kF32, "float32");
  RequireDType(inputGrad, dt, input.dtypeName);
  RequireDType(weightGrad, dt, input.dtypeName);

  Require(input.shape.size() == 2, input.name, "must be 2-D [BT, H], got " + ShapeStr(input.shape));
  const int64_t rows = input.shape[0], hidden = input.shape[1];
  Require(weight.shape.size() == 2 && weight.shape[0] >= 1 && weight.shape[1] == hidden, weight.name,
          "must be [V, H] with V >= 1 and H = " + std::to_string(hidden) + ", got " + ShapeStr(weight.shape));
  const int64_t vocab = weight.shape[0];
  RequireShape(grad, {rows}, "[BT]");
  Require(mask.shape.size() == 1 && mask.shape[0] * 8 >= rows, mask.name,
          "must be 1-D with at least ceil(BT/8) = " + std::to_string(ms_ops::TargetMaskBytes(rows)) + " bytes, got " +
              ShapeStr(mask.shape));
  RequireShape(target, {rows}, "[BT]");
  if (hasSoftmax) {
    RequireShape(softmax, {rows, vocab}, "[BT, V], needed with has_softmax");
  } else {
    RequireShape(logitsMax, {rows}, "[BT]");
    RequireShape(sumExp, {rows}, "[BT]");
  }
  RequireShape(inputGrad, input.shape, "the shape of input");
  RequireShape(weightGrad, weight.shape, "the shape of weight");
  Require(smoothing >= 0.0f && smoothing < 1.0f, "label_smoothing",
          "must be in [0, 1), got " + std::to_string(smoothing));
  Require(vocabSize >= vocab, "vocab_size",
          "must be at least the shard's V = " + std::to_string(vocab) + ", got " + std::to_string(vocabSize));
  if (target.dtype == DType::kI32)
    CheckTargets<int32_t>(target, mask.data, rows, vocab);
  else
    CheckTargets<int64_t>(target, mask.data, rows, vocab);

  ms_ops::FusedLinearCrossEntropyLossGradProblem prob;
  prob.rows = rows;
  prob.hidden = hidden;
  prob.vocab = vocab;
  prob.vocabSize = vocabSize;
  prob.labelSmoothing = smoothing;
  prob.hasSoftmax = hasSoftmax;
  prob.dataType = ToFloatEnum<CeFloat>(dt);
  prob.int64Target = target.dtype == DType::kI64;
  ms_ops::FusedLinearCrossEntropyLossGradTiling t =
      ms_ops::ComputeFusedLinearCrossEntropyLossGradTiling(prob, ms_ops::kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  if (t.blockDim == 0) return 0;  // H == 0: both gradients are empty
  const ms_ops::twin::Workspace workspace(t.workspaceBytes);
  return ms_ops::twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, [&] {
    fused_linear_cross_entropy_loss_grad(grad.data, input.data, weight.data, mask.data, target.data, logitsMax.data,
                                         sumExp.data, softmax.data, inputGrad.data, weightGrad.data, workspace.data(),
                                         reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int FusedLinearCrossEntropyLossGrad(int nparam, void **params,
                                                                                     int *ndims, int64_t **shapes,
                                                                                     const char **dtypes, void *stream,
                                                                                     void *extra) {
  return ms_ops::GuardedEntry(kOp, extra, [&] { return Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>>
FusedLinearCrossEntropyLossGradInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> in;
  for (int i = 0; i < ms_ops::kFlcegNumInputs; ++i) in.emplace_back(shapes[i], shapes[i] + ndims[i]);
  return ms_ops::FusedLinearCrossEntropyLossGradOutShapes(in);
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId>
FusedLinearCrossEntropyLossGradInferType(std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::FusedLinearCrossEntropyLossGradOutTypes(types);
}
