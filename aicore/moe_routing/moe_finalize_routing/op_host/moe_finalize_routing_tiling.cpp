// CANN registration of MoeFinalizeRoutingMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "moe_finalize_routing_infer.h"
#include "moe_finalize_routing_tiling.h"

namespace {

enum Input : size_t { kExpandedX, kRowIdx, kX1, kX2, kBias, kScales, kExpertIdx };
enum AttrIndex : size_t { kDropPadMode, kHasX1, kHasX2, kHasBias, kHasScales };

}  // namespace

namespace optiling {

struct MoeFinalizeRoutingCompileInfo {};

static ge::graphStatus MoeFinalizeRoutingTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const ms_ops::PlatformInfo plat = ms_ops::ReadPlatformInfo(ascendc);

  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::MoeFinalizeRoutingProblem p;
  p.dropPadMode = *attrs->GetAttrPointer<int64_t>(kDropPadMode);
  p.hasX1 = *attrs->GetAttrPointer<bool>(kHasX1);
  p.hasX2 = *attrs->GetAttrPointer<bool>(kHasX2);
  p.hasBias = *attrs->GetAttrPointer<bool>(kHasBias);
  p.hasScales = *attrs->GetAttrPointer<bool>(kHasScales);
  const gert::Shape &ex = context->GetInputShape(kExpandedX)->GetStorageShape();
  p.hidden = ex.GetDim(ex.GetDimNum() - 1);
  p.expandedRows = ex.GetShapeSize() / (p.hidden > 0 ? p.hidden : 1);
  if (p.hasScales) {
    const gert::Shape &scales = context->GetInputShape(kScales)->GetStorageShape();
    p.rows = scales.GetDim(0);
    p.topK = scales.GetDim(1);
  } else {
    p.rows = context->GetInputShape(kRowIdx)->GetStorageShape().GetDim(0);
    p.topK = 1;
  }
  if (p.hasBias) p.biasRows = context->GetInputShape(kBias)->GetStorageShape().GetDim(0);
  p.dataType = ms_ops::ToFloatEnum<ms_ops::MoeFloat>(context->GetInputDesc(kExpandedX)->GetDataType());
  p.scalesType = ms_ops::ToFloatEnum<ms_ops::MoeFloat>(context->GetInputDesc(kScales)->GetDataType());

  ms_ops::MoeFinalizeRoutingTiling t = ms_ops::ComputeMoeFinalizeRoutingTiling(p, plat);
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops moe_finalize_routing: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  // An empty output still launches one block, which finds no rows to combine.
  return ms_ops::SetTiling(context, ascendc, t.data, t.blockDim > 0 ? t.blockDim : 1, t.tilingKey);
}

static ge::graphStatus MoeFinalizeRoutingTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(MoeFinalizeRoutingMsops)
    .Tiling(MoeFinalizeRoutingTilingFunc)
    .TilingParse<MoeFinalizeRoutingCompileInfo>(MoeFinalizeRoutingTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus MoeFinalizeRoutingInferShape(gert::InferShapeContext *context) {
  std::vector<std::vector<int64_t>> in;
  for (size_t i = kExpandedX; i <= kExpertIdx; ++i) in.push_back(ms_ops::Dims(*context->GetInputShape(i)));
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const std::vector<int64_t> out = ms_ops::MoeFinalizeRoutingOutShape(
      in, *attrs->GetAttrPointer<int64_t>(kDropPadMode), *attrs->GetAttrPointer<bool>(kHasX1),
      *attrs->GetAttrPointer<bool>(kHasScales));
  ms_ops::SetDims(context->GetOutputShape(0), out);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus MoeFinalizeRoutingInferDataType(gert::InferDataTypeContext *context) {
  std::vector<ge::DataType> in;
  for (size_t i = kExpandedX; i <= kExpertIdx; ++i) in.push_back(context->GetInputDataType(i));
  context->SetOutputDataType(0, ms_ops::MoeFinalizeRoutingOutType(in));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(MoeFinalizeRoutingMsops)
    .InferShape(MoeFinalizeRoutingInferShape)
    .InferDataType(MoeFinalizeRoutingInferDataType);

}  // namespace ops
