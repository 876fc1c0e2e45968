// MindSpore CPU entry of fused_linear_cross_entropy_grad_in_forward: checks the arguments (shapes,
// dtypes, attributes and, since tensors are host memory here, the target values), tiles for
// Atlas A2 and runs the kernel on the twin with every block on its own thread (the kernel meets
// at SyncAll). Inputs: input, weight, target; outputs: loss, input_grad, weight_grad.
#include <cstdint>
#include <string>
#include <vector>

#include "../../cross_entropy_common.h"
#include "fused_linear_cross_entropy_grad_in_forward_infer.h"
#include "fused_linear_cross_entropy_grad_in_forward_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void fused_linear_cross_entropy_grad_in_forward(uint8_t *input, uint8_t *weight, uint8_t *target,
                                                           uint8_t *loss, uint8_t *inputGrad, uint8_t *weightGrad,
                                                           uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "fused_linear_cross_entropy_grad_in_forward";
const char *const kArgNames[] = {"input", "weight", "target", "loss", "input_grad", "weight_grad"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == kFlceGifNumInputs + kFlceGifNumOutputs, "params",
          "expected 3 inputs and 3 outputs, got " + std::to_string(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const int64_t ignoreIndex = ReadAttr<int64_t>(extra, "ignore_index");
  const float smoothing = ReadAttr<float>(extra, "label_smoothing");
  const int64_t blockBytes = ReadAttr<int64_t>(extra, "block_bytes");
  const std::vector<Arg> args = Args(nparam, params, ndims, shapes, dtypes, kArgNames);
  const Arg &input = args[0], &weight = args[1], &target = args[2], &loss = args[3], &inputGrad = args[4],
            &weightGrad = args[5];

  RequireFloat(input);
  const DType dt = input.dtype;
  RequireDType(weight, dt, input.dtypeName);
  Require(target.dtype == DType::kI32 || target.dtype == DType::kI64, target.name,
          std::string("must be int32 or int64, got ") + target.dtypeName);
  Require(input.shape.size() == 2 && input.shape[1] >= 1, input.name,
          "must be 2-D [N, H] with H >= 1, got " + ShapeStr(input.shape));
  const int64_t rows = input.shape[0], hidden = input.shape[1];
  Require(weight.shape.size() == 2 && weight.shape[0] >= 1 && weight.shape[1] == hidden, weight.name,
          "must be [V, H] with V >= 1 and H = " + std::to_string(hidden) + ", got " + ShapeStr(weight.shape));
  const int64_t vocab = weight.shape[0];
  RequireShape(target, {rows}, "[N]");
  RequireDType(loss, DType::kF32, "float32");
  RequireShape(loss, {rows}, "[N]");
  RequireDType(inputGrad, dt, input.dtypeName);
  RequireShape(inputGrad, input.shape, "the shape of input");
  RequireDType(weightGrad, dt, input.dtypeName);
  RequireShape(weightGrad, weight.shape, "the shape of weight");
  Require(smoothing >= 0.0f && smoothing < 1.0f, "label_smoothing",
          "must be in [0, 1), got " + std::to_string(smoothing));
  Require(blockBytes >= 1, "block_bytes", "must be >= 1, got " + std::to_string(blockBytes));
  const std::string bad =
      target.dtype == DType::kI32
          ? BadTargetMessage(reinterpret_cast<const int32_t *>(target.data), rows, vocab, ignoreIndex)
          : BadTargetMessage(reinterpret_cast<const int64_t *>(target.data), rows, vocab, ignoreIndex);
  if (!bad.empty()) Reject("target", bad);

  FlceGradInForwardProblem p;
  p.rows = rows;
  p.hidden = hidden;
  p.vocab = vocab;
  p.ignoreIndex = ignoreIndex;
  p.labelSmoothing = smoothing;
  p.blockBytes = static_cast<uint64_t>(blockBytes);
  p.dataType = ToFloatEnum<CeFloat>(dt);
  p.int64Target = target.dtype == DType::kI64;
  FlceGradInForwardTiling t = ComputeFlceGradInForwardTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  // Poisoned like device memory: every workspace byte the kernel reads it wrote first. Its pages
  // go back after the launch: they are the mode's memory budget, which a spare would hold through
  // the backward (fp32 H=1024: 16 MiB of a 56 MiB peak).
  const twin::Workspace workspace(t.workspaceBytes, twin::Workspace::kReturn);
  return twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, [&] {
    fused_linear_cross_entropy_grad_in_forward(input.data, weight.data, target.data, loss.data, inputGrad.data,
                                               weightGrad.data, workspace.data(), reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int FusedLinearCrossEntropyGradInForward(
    int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra,
                              [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>>
FusedLinearCrossEntropyGradInForwardInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> in;
  for (int i = 0; i < ms_ops::kFlceGifNumInputs; ++i) in.emplace_back(shapes[i], shapes[i] + ndims[i]);
  return ms_ops::FlceGradInForwardOutShapes(in);
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId>
FusedLinearCrossEntropyGradInForwardInferType(std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  if (types.size() < size_t(ms_ops::kFlceGifNumInputs)) types.resize(ms_ops::kFlceGifNumInputs, mindspore::kTypeUnknown);
  return ms_ops::FlceGradInForwardOutTypes(types, mindspore::kNumberTypeFloat32);
}
