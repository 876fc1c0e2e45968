// MindSpore CPU entry of cross_entropy_grad_scale: checks shapes, dtypes and the reduction, tiles
// and runs the kernel on the twin, for any element counts including 0. Inputs: input_grad and
// weight_grad (float32/float16/bfloat16, any shapes; scaled in place), dout ([1]) and count ([1])
// float32; output: applied_scale [1] float32. A count below 0 means that a backward consumed
// these gradients already: rejected here (the kernel would scale by NaN).
#include <cstdint>
#include <string>
#include <vector>

#include "../../cross_entropy_common.h"
#include "cross_entropy_grad_scale_infer.h"
#include "cross_entropy_grad_scale_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_runtime.h"

extern "C" void cross_entropy_grad_scale(uint8_t *inputGrad, uint8_t *weightGrad, uint8_t *dout, uint8_t *count,
                                         uint8_t *appliedScale, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "cross_entropy_grad_scale";
const char *const kArgNames[] = {"input_grad", "weight_grad", "dout", "count", "applied_scale"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == kCegsNumInputs + kCegsNumOutputs, "params",
          "expected 4 inputs and 1 output, got " + std::to_string(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  CeReduction reduction = CeReduction::kMean;
  const std::string name = ReadAttr<std::string>(extra, "reduction");
  Require(ParseReduction(name, &reduction) && reduction != CeReduction::kNone, "reduction",
          "must be 'mean' or 'sum' (the reductions to a single loss), got '" + name + "'");
  const std::vector<Arg> args = Args(nparam, params, ndims, shapes, dtypes, kArgNames);
  const Arg &inputGrad = args[kCegsInputGrad], &weightGrad = args[kCegsWeightGrad];
  RequireFloat(inputGrad);
  RequireDType(weightGrad, inputGrad.dtype, inputGrad.dtypeName);
  for (int i : {kCegsDout, kCegsCount}) {
    RequireDType(args[i], DType::kF32, "float32");
    RequireShape(args[i], {1}, i == kCegsDout ? "the gradient of a reduced loss" : "the forward's count");
  }
  const int64_t inputElems = Numel(ndims[kCegsInputGrad], shapes[kCegsInputGrad]);
  const int64_t weightElems = Numel(ndims[kCegsWeightGrad], shapes[kCegsWeightGrad]);
  RequireOutput(kArgNames[kCegsNumInputs], kCegsNumInputs, ndims, shapes, dtypes, {1}, DType::kF32);
  Require(*static_cast<const float *>(params[kCegsCount]) >= 0.0f, "dout",
          "a backward of this forward ran already: grad_in_forward mode scales the gradients it stored in place, "
          "so each forward supports one backward (for a vjp function called more than once use "
          "mode='high_performance')");

  CrossEntropyGradScaleProblem p;
  p.inputElems = inputElems;
  p.weightElems = weightElems;
  p.dataType = ToFloatEnum<CeFloat>(inputGrad.dtype);
  p.reduction = reduction;
  CrossEntropyGradScaleTiling t = ComputeCrossEntropyGradScaleTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  auto gm = [params](int i) { return static_cast<uint8_t *>(params[i]); };
  return twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, [&] {
    cross_entropy_grad_scale(gm(0), gm(1), gm(2), gm(3), gm(4), nullptr, reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int CrossEntropyGradScale(int nparam, void **params, int *ndims,
                                                                           int64_t **shapes, const char **dtypes,
                                                                           void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<int64_t> CrossEntropyGradScaleInferShape(
    int *, int64_t **, mindspore::AotExtra *) {
  return ms_ops::CrossEntropyGradScaleOutShape();
}

extern "C" __attribute__((visibility("default"))) mindspore::TypeId CrossEntropyGradScaleInferType(
    std::vector<mindspore::TypeId>, mindspore::AotExtra *) {
  return mindspore::kNumberTypeFloat32;
}
