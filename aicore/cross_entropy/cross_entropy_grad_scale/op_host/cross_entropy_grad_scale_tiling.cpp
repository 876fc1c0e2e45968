// CANN registration of CrossEntropyGradScaleMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>

#include "cann_host.h"
#include "cann_platform.h"
#include "cross_entropy_grad_scale_infer.h"
#include "cross_entropy_grad_scale_tiling.h"

namespace {

enum AttrIndex : size_t { kReduction };

}  // namespace

namespace optiling {

struct CrossEntropyGradScaleCompileInfo {};

static ge::graphStatus CrossEntropyGradScaleTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  ms_ops::CrossEntropyGradScaleProblem p;
  p.inputElems = context->GetInputShape(ms_ops::kCegsInputGrad)->GetStorageShape().GetShapeSize();
  p.weightElems = context->GetInputShape(ms_ops::kCegsWeightGrad)->GetStorageShape().GetShapeSize();
  p.dataType = ms_ops::ToFloatEnum<ms_ops::CeFloat>(context->GetInputDesc(ms_ops::kCegsInputGrad)->GetDataType());
  const char *reduction = context->GetAttrs()->GetStr(kReduction);
  if (reduction == nullptr || !ms_ops::ParseReduction(reduction, &p.reduction)) {
    std::fprintf(stderr, "ms_ops cross_entropy_grad_scale: reduction: must be 'mean' or 'sum'\n");
    return ge::GRAPH_FAILED;
  }
  const ms_ops::CrossEntropyGradScaleTiling t =
      ms_ops::ComputeCrossEntropyGradScaleTiling(p, ms_ops::ReadPlatformInfo(ascendc));
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops cross_entropy_grad_scale: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  return ms_ops::SetTiling(context, ascendc, t.data, t.blockDim, t.tilingKey);
}

static ge::graphStatus CrossEntropyGradScaleTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(CrossEntropyGradScaleMsops)
    .Tiling(CrossEntropyGradScaleTilingFunc)
    .TilingParse<CrossEntropyGradScaleCompileInfo>(CrossEntropyGradScaleTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus CrossEntropyGradScaleInferShape(gert::InferShapeContext *context) {
  ms_ops::SetDims(context->GetOutputShape(ms_ops::kCegsAppliedScale), ms_ops::CrossEntropyGradScaleOutShape());
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus CrossEntropyGradScaleInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(ms_ops::kCegsAppliedScale, ge::DT_FLOAT);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(CrossEntropyGradScaleMsops)
    .InferShape(CrossEntropyGradScaleInferShape)
    .InferDataType(CrossEntropyGradScaleInferDataType);

}  // namespace ops
