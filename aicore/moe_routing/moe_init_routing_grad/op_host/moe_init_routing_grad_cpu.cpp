// MindSpore CPU entry of moe_init_routing_grad: checks the values of expanded_row_idx, tiles for
// the Atlas A2 profile and runs the AscendC kernel on the CPU twin.
#include <cstdint>
#include <string>
#include <vector>

#include "host_entry.h"
#include "moe_init_routing_grad_infer.h"
#include "moe_init_routing_grad_tiling.h"
#include "twin_runtime.h"

extern "C" void moe_init_routing_grad(uint8_t *gradExpandedX, uint8_t *expandedRowIdx, uint8_t *gradX,
                                      uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "moe_init_routing_grad";

// Dropless indices are positions in the sorted order, [0, R*K); drop/pad ones are slots of
// [E, C] or -1 for a dropped pair.
void CheckRowIdx(const int32_t *idx, int64_t count, int64_t low, int64_t high) {
  for (int64_t i = 0; i < count; ++i)
    if (idx[i] < low || idx[i] >= high)
      Reject("expanded_row_idx", "value " + std::to_string(idx[i]) + " at [" + std::to_string(i) +
                                     "] is outside [" + std::to_string(low) + ", " + std::to_string(high) + ")");
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extra) {
  Require(nparam == 3, "params", "expected 2 inputs and 1 output, got " + std::to_string(nparam) + " tensors");
  const DType dtype = ParseDType(dtypes[0]);
  const uint64_t key =
      FloatKey(dtype, kMoeInitRoutingGradKeyFloat, kMoeInitRoutingGradKeyHalf, kMoeInitRoutingGradKeyBFloat16);
  Require(key != 0, "grad_expanded_x",
          std::string("dtype must be float32, float16 or bfloat16, got ") + dtypes[0]);
  Require(ndims[0] == 2 || ndims[0] == 3, "grad_expanded_x",
          "must be [A, H] or [E, C, H], got shape " + ShapeStr(ndims[0], shapes[0]));
  Require(ndims[1] == 1, "expanded_row_idx", "must be 1-D [R*K], got shape " + ShapeStr(ndims[1], shapes[1]));
  Require(ParseDType(dtypes[1]) == DType::kI32, "expanded_row_idx",
          std::string("dtype must be int32, got ") + dtypes[1]);

  auto *ex = static_cast<mindspore::AotExtra *>(extra);
  Require(ex != nullptr, "attributes", "no AotExtra was passed");
  for (const char *name : {"top_k", "drop_pad_mode", "active_num"})
    Require(ex->HasAttr(name), name, "attribute is missing");
  MoeInitRoutingGradArgs args;
  args.gradRank = ndims[0];
  args.gradRows = ndims[0] == 2 ? shapes[0][0] : shapes[0][0] * shapes[0][1];
  args.hidden = shapes[0][ndims[0] - 1];
  args.flatCount = shapes[1][0];
  args.dtypeKey = key;
  args.topK = ex->Attr<int64_t>("top_k");
  args.dropPadMode = ex->Attr<int64_t>("drop_pad_mode");
  args.activeNum = ex->Attr<int64_t>("active_num");
  MoeInitRoutingGradPlan plan;
  MoeInitRoutingGradRefusal why;
  if (!MoeInitRoutingGradTiling(args, kAtlasA2, &plan, &why)) Reject(why.arg, why.reason);

  RequireOutput("grad_x", 2, ndims, shapes, dtypes, {plan.tiling.rows, plan.tiling.hidden}, dtype);
  if (args.dropPadMode == 0)
    CheckRowIdx(static_cast<const int32_t *>(params[1]), args.flatCount, 0, args.flatCount);
  else
    CheckRowIdx(static_cast<const int32_t *>(params[1]), args.flatCount, -1, args.gradRows);

  auto gm = [params](int i) { return static_cast<uint8_t *>(params[i]); };
  return twin::Launch(kOp, plan.blockDim, plan.tilingKey, [&] {
    moe_init_routing_grad(gm(0), gm(1), gm(2), nullptr, reinterpret_cast<uint8_t *>(&plan.tiling));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int MoeInitRoutingGrad(int nparam, void **params, int *ndims,
                                                                          int64_t **shapes, const char **dtypes,
                                                                          void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

// Infer hooks never throw into MindSpore: an unreadable top_k leaves R unknown, and the kernel
// entry reports the problem.
extern "C" __attribute__((visibility("default"))) std::vector<int64_t> MoeInitRoutingGradInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  int64_t topK = 0;
  try {
    if (extra != nullptr && extra->HasAttr("top_k")) topK = extra->Attr<int64_t>("top_k");
  } catch (...) {
    topK = 0;
  }
  const std::vector<int64_t> grad(shapes[0], shapes[0] + ndims[0]), rowIdx(shapes[1], shapes[1] + ndims[1]);
  return ms_ops::InferMoeInitRoutingGradShape(grad, rowIdx, topK);
}

extern "C" __attribute__((visibility("default"))) mindspore::TypeId MoeInitRoutingGradInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::InferMoeInitRoutingGradType(types.empty() ? mindspore::kTypeUnknown : types[0]);
}
