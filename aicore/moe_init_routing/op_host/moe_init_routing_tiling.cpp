// CANN registration of MoeInitRoutingMsops: TilingFunc, InferShape and InferDataType, all thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>
#include <vector>

#include "moe_init_routing_infer.h"
#include "moe_init_routing_tiling.h"
#include "register/op_impl_registry.h"
#include "tiling/platform/platform_ascendc.h"

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

uint64_t DTypeKey(ge::DataType d) {
  switch (d) {
    case ge::DT_FLOAT: return kMoeInitRoutingKeyFloat;
    case ge::DT_FLOAT16: return kMoeInitRoutingKeyHalf;
    case ge::DT_BF16: return kMoeInitRoutingKeyBFloat16;
    default: return 0;
  }
}

// gert keeps an unknown rank as the single dim -2, as the pure inference expects.
std::vector<int64_t> Dims(const gert::Shape &s) {
  std::vector<int64_t> d(s.GetDimNum());
  for (size_t i = 0; i < d.size(); ++i) d[i] = s.GetDim(i);
  return d;
}

void SetDims(gert::Shape *s, const std::vector<int64_t> &d) {
  s->SetDimNum(d.size());
  for (size_t i = 0; i < d.size(); ++i) s->SetDim(i, d[i]);
}

}  // namespace

namespace optiling {

struct MoeInitRoutingCompileInfo {};

static ge::graphStatus MoeInitRoutingTilingFunc(gert::TilingContext *context) {
  auto ascendc = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  uint64_t ubSize = 0, l1Size = 0;
  ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);
  ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1Size);
  const ms_ops::PlatformInfo plat{ascendc.GetCoreNumAiv(), ascendc.GetCoreNumAic(), static_cast<uint32_t>(ubSize),
                                  static_cast<uint32_t>(l1Size)};

  const gert::Shape &x = context->GetInputShape(0)->GetStorageShape();
  const gert::Shape &expertIdx = context->GetInputShape(1)->GetStorageShape();
  const ms_ops::MoeInitRoutingAttrs attrs = ReadAttrs(context->GetAttrs());
  ms_ops::MoeInitRoutingArgs args;
  args.rows = x.GetDim(0);
  args.hidden = x.GetDim(1);
  args.topK = expertIdx.GetDim(1);
  args.dtypeKey = DTypeKey(context->GetInputDesc(0)->GetDataType());
  args.activeNum = attrs.activeNum;
  args.expertCapacity = attrs.expertCapacity;
  args.expertNum = attrs.expertNum;
  args.dropPadMode = attrs.dropPadMode;
  args.countFlag = attrs.countFlag;
  args.beforeCapacityFlag = attrs.beforeCapacityFlag;

  ms_ops::MoeInitRoutingPlan plan;
  ms_ops::MoeInitRoutingRefusal why;
  if (!ms_ops::MoeInitRoutingTiling(args, plat, &plan, &why)) {
    std::fprintf(stderr, "ms_ops moe_init_routing: %s: %s\n", why.arg.c_str(), why.reason.c_str());
    return ge::GRAPH_FAILED;
  }
  *context->GetTilingData<MoeInitRoutingTilingData>() = plan.tiling;
  context->SetBlockDim(plan.blockDim);
  context->SetTilingKey(plan.tilingKey);
  size_t *workspace = context->GetWorkspaceSizes(1);
  workspace[0] = ascendc.GetLibApiWorkSpaceSize();
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus MoeInitRoutingTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(MoeInitRoutingMsops)
    .Tiling(MoeInitRoutingTilingFunc)
    .TilingParse<MoeInitRoutingCompileInfo>(MoeInitRoutingTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus MoeInitRoutingInferShape(gert::InferShapeContext *context) {
  const auto shapes = ms_ops::InferMoeInitRoutingShapes(Dims(*context->GetInputShape(0)),
                                                        Dims(*context->GetInputShape(1)),
                                                        ReadAttrs(context->GetAttrs()));
  for (size_t o = 0; o < shapes.size(); ++o) SetDims(context->GetOutputShape(o), shapes[o]);
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
