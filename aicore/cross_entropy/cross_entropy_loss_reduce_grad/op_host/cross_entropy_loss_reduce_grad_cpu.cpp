// MindSpore CPU entry of cross_entropy_loss_reduce_grad: checks shapes, dtypes and attributes,
// tiles and runs the kernel on the twin, for any N including 0. Inputs: dout ([N] for "none",
// else [1]) float32, target [N] int32/int64, count ([1]) float32; output: grad [N] float32.
#include <cstdint>
#include <string>
#include <vector>

#include "../../cross_entropy_common.h"
#include "cross_entropy_loss_reduce_grad_infer.h"
#include "cross_entropy_loss_reduce_grad_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_runtime.h"

extern "C" void cross_entropy_loss_reduce_grad(uint8_t *dout, uint8_t *target, uint8_t *count, uint8_t *grad,
                                               uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "cross_entropy_loss_reduce_grad";
const char *const kArgNames[] = {"dout", "target", "count", "grad"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == kCelrgNumInputs + kCelrgNumOutputs, "params",
          "expected 3 inputs and 1 output, got " + std::to_string(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  CeReduction reduction = CeReduction::kMean;
  const std::string name = ReadAttr<std::string>(extra, "reduction");
  Require(ParseReduction(name, &reduction), "reduction", "must be 'mean', 'sum' or 'none', got '" + name + "'");
  const int64_t ignoreIndex = ReadAttr<int64_t>(extra, "ignore_index");
  const std::vector<Arg> args = Args(nparam, params, ndims, shapes, dtypes, kArgNames);
  const Arg &dout = args[kCelrgDout], &target = args[kCelrgTarget], &count = args[kCelrgCount];
  Require(target.dtype == DType::kI32 || target.dtype == DType::kI64, target.name,
          std::string("must be int32 or int64, got ") + target.dtypeName);
  Require(target.shape.size() == 1, target.name, "must be 1-D [N], got " + ShapeStr(target.shape));
  const int64_t rows = target.shape[0];
  RequireDType(dout, DType::kF32, "float32");
  if (reduction == CeReduction::kNone)
    RequireShape(dout, {rows}, "[N], the gradient of reduction 'none'");
  else
    RequireShape(dout, {1}, "the gradient of a reduced loss");
  RequireDType(count, DType::kF32, "float32");
  RequireShape(count, {1}, "the forward's count");
  RequireOutput(kArgNames[kCelrgNumInputs], kCelrgNumInputs, ndims, shapes, dtypes, {rows}, DType::kF32);

  CrossEntropyLossReduceProblem p;
  p.rows = rows;
  p.ignoreIndex = ignoreIndex;
  p.reduction = reduction;
  p.int64Target = target.dtype == DType::kI64;
  CrossEntropyLossReduceTiling t = ComputeCrossEntropyLossReduceTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    cross_entropy_loss_reduce_grad(dout.data, target.data, count.data, static_cast<uint8_t *>(params[3]), nullptr,
                                   reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int CrossEntropyLossReduceGrad(int nparam, void **params,
                                                                                int *ndims, int64_t **shapes,
                                                                                const char **dtypes, void *stream,
                                                                                void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

// A single-output op: MindSpore's hooks then return one shape and one type.
extern "C" __attribute__((visibility("default"))) std::vector<int64_t> CrossEntropyLossReduceGradInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> in;
  for (int i = 0; i < ms_ops::kCelrgNumInputs; ++i) in.emplace_back(shapes[i], shapes[i] + ndims[i]);
  return ms_ops::CrossEntropyLossReduceGradOutShapes(in)[0];
}

extern "C" __attribute__((visibility("default"))) mindspore::TypeId CrossEntropyLossReduceGradInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::CrossEntropyLossReduceGradOutTypes(mindspore::kNumberTypeFloat32)[0];
}
