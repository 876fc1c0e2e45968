// CANN registration of MoeInitRoutingGradMsops: TilingFunc, InferShape and InferDataType, all
// thin wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "moe_init_routing_grad_infer.h"
#include "moe_init_routing_grad_tiling.h"

namespace {

enum AttrIndex : size_t { kTopK, kDropPadMode, kActiveNum };

}  // namespace

namespace optiling {

struct MoeInitRoutingGradCompileInfo {};

static ge::graphStatus MoeInitRoutingGradTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const ms_ops::PlatformInfo plat = ms_ops::ReadPlatformInfo(ascendc);

  const gert::Shape &grad = context->GetInputShape(0)->GetStorageShape();
  const gert::Shape &rowIdx = context->GetInputShape(1)->GetStorageShape();
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::MoeInitRoutingGradArgs args;
  args.gradRank = static_cast<int64_t>(grad.GetDimNum());
  args.gradRows = args.gradRank == 3 ? grad.GetDim(0) * grad.GetDim(1) : grad.GetDim(0);
  args.hidden = grad.GetDim(grad.GetDimNum() - 1);
  args.flatCount = rowIdx.GetDim(0);
  args.dtypeKey = ms_ops::FloatKey(context->GetInputDesc(0)->GetDataType(), kMoeInitRoutingGradKeyFloat,
                                   kMoeInitRoutingGradKeyHalf, kMoeInitRoutingGradKeyBFloat16);
  args.topK = *attrs->GetAttrPointer<int64_t>(kTopK);
  args.dropPadMode = *attrs->GetAttrPointer<int64_t>(kDropPadMode);
  args.activeNum = *attrs->GetAttrPointer<int64_t>(kActiveNum);

  ms_ops::MoeInitRoutingGradPlan plan;
  ms_ops::MoeInitRoutingGradRefusal why;
  if (!ms_ops::MoeInitRoutingGradTiling(args, plat, &plan, &why)) {
    std::fprintf(stderr, "ms_ops moe_init_routing_grad: %s: %s\n", why.arg.c_str(), why.reason.c_str());
    return ge::GRAPH_FAILED;
  }
  return ms_ops::SetTiling(context, ascendc, plan.tiling, plan.blockDim, plan.tilingKey);
}

static ge::graphStatus MoeInitRoutingGradTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(MoeInitRoutingGradMsops)
    .Tiling(MoeInitRoutingGradTilingFunc)
    .TilingParse<MoeInitRoutingGradCompileInfo>(MoeInitRoutingGradTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus MoeInitRoutingGradInferShape(gert::InferShapeContext *context) {
  const std::vector<int64_t> out = ms_ops::InferMoeInitRoutingGradShape(
      ms_ops::Dims(*context->GetInputShape(0)), ms_ops::Dims(*context->GetInputShape(1)),
      *context->GetAttrs()->GetAttrPointer<int64_t>(kTopK));
  ms_ops::SetDims(context->GetOutputShape(0), out);
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
