// MindSpore CPU entry of cross_entropy_loss_reduce: checks shapes, dtypes and attributes, tiles and
// runs the kernel on the twin, for any N including 0 (the single-value results are the kernel's to
// write). Inputs: loss [N] float32, target [N] int32/int64; outputs: out ([N] for "none", else
// [1]), count ([1]), both float32.
#include <cstdint>
#include <string>
#include <vector>

#include "../../cross_entropy_common.h"
#include "cross_entropy_loss_reduce_infer.h"
#include "cross_entropy_loss_reduce_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_runtime.h"

extern "C" void cross_entropy_loss_reduce(uint8_t *loss, uint8_t *target, uint8_t *out, uint8_t *count,
                                          uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "cross_entropy_loss_reduce";
const char *const kArgNames[] = {"loss", "target", "out", "count"};

// The reduction attribute; infer hooks never throw into MindSpore, so they fall back to "mean" and
// leave the complaint to the kernel entry.
CeReduction ReadReduction(mindspore::AotExtra *extra) {
  CeReduction r = CeReduction::kMean;
  const std::string name = ReadAttr<std::string>(extra, "reduction");
  Require(ParseReduction(name, &r), "reduction", "must be 'mean', 'sum' or 'none', got '" + name + "'");
  return r;
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == kCelrNumInputs + kCelrNumOutputs, "params",
          "expected 2 inputs and 2 outputs, got " + std::to_string(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const CeReduction reduction = ReadReduction(extra);
  const int64_t ignoreIndex = ReadAttr<int64_t>(extra, "ignore_index");
  const std::vector<Arg> args = Args(nparam, params, ndims, shapes, dtypes, kArgNames);
  const Arg &loss = args[kCelrLoss], &target = args[kCelrTarget];
  RequireDType(loss, DType::kF32, "float32");
  Require(target.dtype == DType::kI32 || target.dtype == DType::kI64, target.name,
          std::string("must be int32 or int64, got ") + target.dtypeName);
  Require(loss.shape.size() == 1, loss.name, "must be 1-D [N], got " + ShapeStr(loss.shape));
  const int64_t rows = loss.shape[0];
  RequireShape(target, {rows}, "[N], N of loss");
  const auto want = CrossEntropyLossReduceOutShapes({loss.shape, target.shape}, reduction);
  for (int o = 0; o < kCelrNumOutputs; ++o)
    RequireOutput(kArgNames[kCelrNumInputs + o], kCelrNumInputs + o, ndims, shapes, dtypes, want[o], DType::kF32);

  CrossEntropyLossReduceProblem p;
  p.rows = rows;
  p.ignoreIndex = ignoreIndex;
  p.reduction = reduction;
  p.int64Target = target.dtype == DType::kI64;
  CrossEntropyLossReduceTiling t = ComputeCrossEntropyLossReduceTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  auto gm = [params](int i) { return static_cast<uint8_t *>(params[i]); };
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    cross_entropy_loss_reduce(gm(0), gm(1), gm(2), gm(3), nullptr, reinterpret_cast<uint8_t *>(&t.data));
  });
}

CeReduction ReductionOrMean(mindspore::AotExtra *extra) {
  try {
    return ReadReduction(extra);
  } catch (...) {
    return CeReduction::kMean;
  }
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int CrossEntropyLossReduce(int nparam, void **params, int *ndims,
                                                                            int64_t **shapes, const char **dtypes,
                                                                            void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> CrossEntropyLossReduceInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> in;
  for (int i = 0; i < ms_ops::kCelrNumInputs; ++i) in.emplace_back(shapes[i], shapes[i] + ndims[i]);
  return ms_ops::CrossEntropyLossReduceOutShapes(in, ms_ops::ReductionOrMean(extra));
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> CrossEntropyLossReduceInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::CrossEntropyLossReduceOutTypes(mindspore::kNumberTypeFloat32);
}
