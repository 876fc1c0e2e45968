// CANN registration of MoeInitRoutingGradMsops: TilingFunc, InferShape and InferDataType, all
// thin wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>
#include <vector>

#include "moe_init_routing_grad_infer.h"
#include "moe_init_routing_grad_tiling.h"
#include "register/op_impl_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace {

enum AttrIndex : size_t { kTopK, kDropPadMode, kActiveNum };

uint64_t DTypeKey(ge::DataType d) {
  switch (d) {
    case ge::DT_FLOAT: return kMoeInitRoutingGradKeyFloat;
    case ge::DT_FLOAT16: return kMoeInitRoutingGradKeyHalf;
    case ge::DT_BF16: return kMoeInitRoutingGradKeyBFloat16;
    default: return 0;
  }
}

// gert keeps an unknown rank as the single dim -2, as the pure inference expects.
std::vector<int64_t> Dims(const gert::Shape &s) {
  std::vector<int64_t> d(s.GetDimNum());
  for (size_t i = 0; i < d.size(); ++i) d[i] = s.GetDim(i);
  return d;
}

}  // namespace

namespace optiling {

struct MoeInitRoutingGradCompileInfo {};

static ge::graphStatus MoeInitRoutingGradTilingFunc(gert::TilingContext *context) {
  auto ascendc = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  uint64_t ubSize = 0, l1Size = 0;
  ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);
  ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1Size);
  const ms_ops::PlatformInfo plat{ascendc.GetCoreNumAiv(), ascendc.GetCoreNumAic(), static_cast<uint32_t>(ubSize),
                                  static_cast<uint32_t>(l1Size)};

  const gert::Shape &grad = context->GetInputShape(0)->GetStorageShape();
  const gert::Shape &rowIdx = context->GetInputShape(1)->GetStorageShape();
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::MoeInitRoutingGradArgs args;
  args.gradRank = static_cast<int64_t>(grad.GetDimNum());
  args.gradRows = args.gradRank == 3 ? grad.GetDim(0) * grad.GetDim(1) : grad.GetDim(0);
  args.hidden = grad.GetDim(grad.GetDimNum() - 1);
  args.flatCount = rowIdx.GetDim(0);
  args.dtypeKey = DTypeKey(context->GetInputDesc(0)->GetDataType());
  args.topK = *attrs->GetAttrPointer<int64_t>(kTopK);
  args.dropPadMode = *attrs->GetAttrPointer<int64_t>(kDropPadMode);
  args.activeNum = *attrs->GetAttrPointer<int64_t>(kActiveNum);

  ms_ops::MoeInitRoutingGradPlan plan;
  ms_ops::MoeInitRoutingGradRefusal why;
  if (!ms_ops::MoeInitRoutingGradTiling(args, plat, &plan, &why)) {
    std::fprintf(stderr, "ms_ops moe_init_routing_grad: %s: %s\n", why.arg.c_str(), why.reason.c_str());
    return ge::GRAPH_FAILED;
  }
  *context->GetTilingData<MoeInitRoutingGradTilingData>() = plan.tiling;
  context->SetBlockDim(plan.blockDim);
  context->SetTilingKey(plan.tilingKey);
  size_t *workspace = context->GetWorkspaceSizes(1);
  workspace[0] = ascendc.GetLibApiWorkSpaceSize();
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus MoeInitRoutingGradTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(MoeInitRoutingGradMsops)
    .Tiling(MoeInitRoutingGradTilingFunc)
    .TilingParse<MoeInitRoutingGradCompileInfo>(MoeInitRoutingGradTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus MoeInitRoutingGradInferShape(gert::InferShapeContext *context) {
  const std::vector<int64_t> out = ms_ops::InferMoeInitRoutingGradShape(
      Dims(*context->GetInputShape(0)), Dims(*context->GetInputShape(1)),
      *context->GetAttrs()->GetAttrPointer<int64_t>(kTopK));
  gert::Shape *gradX = context->GetOutputShape(0);
  gradX->SetDimNum(out.size());
  for (size_t i = 0; i < out.size(); ++i) gradX->SetDim(i, out[i]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus MoeInitRoutingGradInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, ms_ops::InferMoeInitRoutingGradType(context->GetInputDataType(0)));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(MoeInitRoutingGradMsops)
    .InferShape(MoeInitRoutingGradInferShape)
    .InferDataType(MoeInitRoutingGradInferDataType);

}  // namespace ops
