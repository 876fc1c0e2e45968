// MindSpore CPU entry of moe_init_routing: checks what only the values tell (the expert ids),
// tiles for the Atlas A2 profile and runs the AscendC kernel on the CPU twin.
#include <cstdint>
#include <string>
#include <vector>

#include "host_entry.h"
#include "moe_init_routing_infer.h"
#include "moe_init_routing_tiling.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void moe_init_routing(uint8_t *x, uint8_t *expertIdx, uint8_t *expandedX, uint8_t *expandedRowIdx,
                                 uint8_t *expertTokensCountOrCumsum, uint8_t *expertTokensBeforeCapacity,
                                 uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "moe_init_routing";
constexpr const char *kOutputs[] = {"expanded_x", "expanded_row_idx", "expert_tokens_count_or_cumsum",
                                    "expert_tokens_before_capacity"};

MoeInitRoutingAttrs ReadAttrs(mindspore::AotExtra *extra) {
  Require(extra != nullptr, "attributes", "no AotExtra was passed");
  for (const char *name : {"active_num", "expert_capacity", "expert_num", "drop_pad_mode",
                           "expert_tokens_count_or_cumsum_flag", "expert_tokens_before_capacity_flag"})
    Require(extra->HasAttr(name), name, "attribute is missing");
  MoeInitRoutingAttrs a;
  a.activeNum = extra->Attr<int64_t>("active_num");
  a.expertCapacity = extra->Attr<int64_t>("expert_capacity");
  a.expertNum = extra->Attr<int64_t>("expert_num");
  a.dropPadMode = extra->Attr<int64_t>("drop_pad_mode");
  a.countFlag = extra->Attr<int64_t>("expert_tokens_count_or_cumsum_flag");
  a.beforeCapacityFlag = extra->Attr<bool>("expert_tokens_before_capacity_flag");
  return a;
}

// Infer hooks never throw into MindSpore: without readable attributes they assume the defaults,
// and the kernel entry reports the problem.
MoeInitRoutingAttrs AttrsOrDefaults(mindspore::AotExtra *extra) {
  try {
    return ReadAttrs(extra);
  } catch (...) {
    return MoeInitRoutingAttrs{};
  }
}

// Every id must index a histogram bin: [0, expert_num), or [0, the scan maximum) without expert_num.
void CheckExpertIds(const int32_t *ids, int64_t rows, int64_t topK, int64_t expertNum) {
  const int64_t limit = expertNum > 0 ? expertNum : kMoeInitRoutingMaxScanExperts;
  for (int64_t i = 0; i < rows * topK; ++i) {
    if (ids[i] >= 0 && ids[i] < limit) continue;
    std::string msg = "value " + std::to_string(ids[i]) + " at [" + std::to_string(i / topK) + ", " +
                      std::to_string(i % topK) + "] is outside [0, " + std::to_string(limit) + ")";
    if (expertNum == 0 && ids[i] >= limit)
      msg += "; without expert_num the kernel supports expert ids below " + std::to_string(limit) +
             ", pass expert_num";
    Reject("expert_idx", msg);
  }
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extra) {
  Require(nparam == 6, "params", "expected 2 inputs and 4 outputs, got " + std::to_string(nparam) + " tensors");
  Require(ndims[0] == 2, "x", "must be 2-D [R, H], got shape " + ShapeStr(ndims[0], shapes[0]));
  Require(ndims[1] == 2, "expert_idx", "must be 2-D [R, K], got shape " + ShapeStr(ndims[1], shapes[1]));
  const DType dtype = ParseDType(dtypes[0]);
  const uint64_t key = FloatKey(dtype, kMoeInitRoutingKeyFloat, kMoeInitRoutingKeyHalf, kMoeInitRoutingKeyBFloat16);
  Require(key != 0, "x", std::string("dtype must be float32, float16 or bfloat16, got ") + dtypes[0]);
  Require(ParseDType(dtypes[1]) == DType::kI32, "expert_idx", std::string("dtype must be int32, got ") + dtypes[1]);
  Require(shapes[1][0] == shapes[0][0], "expert_idx",
          "has " + std::to_string(shapes[1][0]) + " rows but x has " + std::to_string(shapes[0][0]));

  const MoeInitRoutingAttrs attrs = ReadAttrs(static_cast<mindspore::AotExtra *>(extra));
  const MoeInitRoutingArgs args{attrs, shapes[0][0], shapes[1][1], shapes[0][1], key};
  MoeInitRoutingPlan plan;
  MoeInitRoutingRefusal why;
  if (!MoeInitRoutingTiling(args, kAtlasA2, &plan, &why)) Reject(why.arg, why.reason);

  // The outputs were allocated from the inferred shapes; the kernel writes exactly those sizes.
  const auto want = InferMoeInitRoutingShapes({args.rows, args.hidden}, {args.rows, args.topK}, attrs);
  for (int o = 0; o < 4; ++o)
    RequireOutput(kOutputs[o], 2 + o, ndims, shapes, dtypes, want[o], o == 0 ? dtype : DType::kI32);
  CheckExpertIds(static_cast<const int32_t *>(params[1]), args.rows, args.topK, args.expertNum);

  auto gm = [params](int i) { return static_cast<uint8_t *>(params[i]); };
  const twin::Workspace workspace(plan.workspaceBytes);
  // The kernel's SyncAll needs every block live at once.
  return twin::LaunchCooperative(kOp, plan.blockDim, plan.tilingKey, [&] {
    moe_init_routing(gm(0), gm(1), gm(2), gm(3), gm(4), gm(5), workspace.data(),
                     reinterpret_cast<uint8_t *>(&plan.tiling));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int MoeInitRouting(int nparam, void **params, int *ndims,
                                                                      int64_t **shapes, const char **dtypes,
                                                                      void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> MoeInitRoutingInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  const std::vector<int64_t> x(shapes[0], shapes[0] + ndims[0]), expertIdx(shapes[1], shapes[1] + ndims[1]);
  return ms_ops::InferMoeInitRoutingShapes(x, expertIdx, ms_ops::AttrsOrDefaults(extra));
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> MoeInitRoutingInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::InferMoeInitRoutingTypes(types.empty() ? mindspore::kTypeUnknown : types[0],
                                          mindspore::kNumberTypeInt32);
}
