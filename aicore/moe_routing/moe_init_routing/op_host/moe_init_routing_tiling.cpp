// CANN registration of MoeInitRoutingMsops: TilingFunc, InferShape and InferDataType, all thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "moe_init_routing_infer.h"
#include "moe_init_routing_tiling.h"

namespace {

enum AttrIndex : size_t { kActiveNum, kExpertCapacity, kExpertNum, kDropPadMode, kCountFlag, kBeforeCapacityFlag };

ms_ops::MoeInitRoutingAttrs ReadAttrs(const gert::RuntimeAttrs *attrs) {
  ms_ops::MoeInitRoutingAttrs a;
  a.activeNum = *attrs->GetAttrPointer<int64_t>(kActiveNum);
  a.expertCapacity = *attrs->GetAttrPointer<int64_t>(kExpertCapacity);
  a.expertNum = *attrs->GetAttrPointer<int64_t>(kExpertNum);
  a.dropPadMode = *attrs->GetAttrPointer<int64_t>(kDropPadMode);
  a.countFlag = *attrs->GetAttrPointer<int64_t>(kCountFlag);
  a.beforeCapacityFlag = *attrs->GetAttrPointer<bool>(kBeforeCapacityFlag);
  return a;
}

}  // namespace

namespace optiling {

struct MoeInitRoutingCompileInfo {};

static ge::graphStatus MoeInitRoutingTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const ms_ops::PlatformInfo plat = ms_ops::ReadPlatformInfo(ascendc);

  const gert::Shape &x = context->GetInputShape(0)->GetStorageShape();
  const gert::Shape &expertIdx = context->GetInputShape(1)->GetStorageShape();
  const uint64_t key = ms_ops::FloatKey(context->GetInputDesc(0)->GetDataType(), kMoeInitRoutingKeyFloat,
                                        kMoeInitRoutingKeyHalf, kMoeInitRoutingKeyBFloat16);
  const ms_ops::MoeInitRoutingArgs args{ReadAttrs(context->GetAttrs()), x.GetDim(0), expertIdx.GetDim(1), x.GetDim(1),
                                        key};

  ms_ops::MoeInitRoutingPlan plan;
  ms_ops::MoeInitRoutingRefusal why;
  if (!ms_ops::MoeInitRoutingTiling(args, plat, &plan, &why)) {
    std::fprintf(stderr, "ms_ops moe_init_routing: %s: %s\n", why.arg.c_str(), why.reason.c_str());
    return ge::GRAPH_FAILED;
  }
  const ge::graphStatus status = ms_ops::SetTiling(context, ascendc, plan.tiling, plan.blockDim, plan.tilingKey);
  context->GetWorkspaceSizes(1)[0] += plan.workspaceBytes;  // the per-block histograms, after the library's part
  return status;
}

static ge::graphStatus MoeInitRoutingTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(MoeInitRoutingMsops)
    .Tiling(MoeInitRoutingTilingFunc)
    .TilingParse<MoeInitRoutingCompileInfo>(MoeInitRoutingTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus MoeInitRoutingInferShape(gert::InferShapeContext *context) {
  const auto shapes = ms_ops::InferMoeInitRoutingShapes(ms_ops::Dims(*context->GetInputShape(0)),
                                                        ms_ops::Dims(*context->GetInputShape(1)),
                                                        ReadAttrs(context->GetAttrs()));
  for (size_t o = 0; o < shapes.size(); ++o) ms_ops::SetDims(context->GetOutputShape(o), shapes[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus MoeInitRoutingInferDataType(gert::InferDataTypeContext *context) {
  const auto types = ms_ops::InferMoeInitRoutingTypes(context->GetInputDataType(0), ge::DT_INT32);
  for (size_t o = 0; o < types.size(); ++o) context->SetOutputDataType(o, types[o]);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(MoeInitRoutingMsops)
    .InferShape(MoeInitRoutingInferShape)
    .InferDataType(MoeInitRoutingInferDataType);

}  // namespace ops
