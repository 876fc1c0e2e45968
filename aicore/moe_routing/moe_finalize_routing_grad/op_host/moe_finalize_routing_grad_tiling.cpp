// CANN registration of MoeFinalizeRoutingGradMsops: TilingFunc, InferShape and InferDataType,
// thin wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "moe_finalize_routing_grad_infer.h"
#include "moe_finalize_routing_grad_tiling.h"

namespace {

enum AttrIndex : size_t { kDropPadMode, kActiveNum, kExpertNum, kExpertCapacity, kHasExpandedX, kHasBias, kHasScales };
constexpr size_t kNumInputs = 6, kNumOutputs = 3;

}  // namespace

namespace optiling {

struct MoeFinalizeRoutingGradCompileInfo {};

static ge::graphStatus MoeFinalizeRoutingGradTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const ms_ops::PlatformInfo plat = ms_ops::ReadPlatformInfo(ascendc);

  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::MoeFinalizeRoutingGradProblem p;
  p.dropPadMode = *attrs->GetAttrPointer<int64_t>(kDropPadMode);
  p.hasBias = *attrs->GetAttrPointer<bool>(kHasBias);
  p.hasScales = *attrs->GetAttrPointer<bool>(kHasScales);
  const gert::Shape &gradY = context->GetInputShape(ms_ops::kMfrgGradY)->GetStorageShape();
  // grad_expanded_x has expanded_x's shape, or without it the one the attributes give.
  const gert::Shape &gradEx = context->GetOutputShape(0)->GetStorageShape();
  const gert::Shape &scales = context->GetInputShape(ms_ops::kMfrgScales)->GetStorageShape();
  const gert::Shape &bias = context->GetInputShape(ms_ops::kMfrgBias)->GetStorageShape();
  p.rows = gradY.GetDim(0);
  p.hidden = gradY.GetDim(1);
  p.topK = p.hasScales ? scales.GetDim(1) : 1;
  p.expandedRows =
      ms_ops::MoeFinalizeRoutingGradDropPad(p.dropPadMode) ? gradEx.GetDim(0) * gradEx.GetDim(1) : gradEx.GetDim(0);
  p.biasRows = p.hasBias ? bias.GetDim(0) : 0;
  p.scalesNumel = scales.GetShapeSize();
  p.biasNumel = bias.GetShapeSize();
  p.dataType = ms_ops::ToFloatEnum<ms_ops::MoeFloat>(context->GetInputDesc(ms_ops::kMfrgGradY)->GetDataType());
  p.scalesType = ms_ops::ToFloatEnum<ms_ops::MoeFloat>(context->GetInputDesc(ms_ops::kMfrgScales)->GetDataType());

  ms_ops::MoeFinalizeRoutingGradTiling t = ms_ops::ComputeMoeFinalizeRoutingGradTiling(p, plat);
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops moe_finalize_routing_grad: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  const ge::graphStatus status = ms_ops::SetTiling(context, ascendc, t.data, t.blockDim, t.tilingKey);
  context->GetWorkspaceSizes(1)[0] += t.workspaceBytes;  // the slot chains, after the library's part
  return status;
}

static ge::graphStatus MoeFinalizeRoutingGradTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(MoeFinalizeRoutingGradMsops)
    .Tiling(MoeFinalizeRoutingGradTilingFunc)
    .TilingParse<MoeFinalizeRoutingGradCompileInfo>(MoeFinalizeRoutingGradTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus MoeFinalizeRoutingGradInferShape(gert::InferShapeContext *context) {
  std::vector<std::vector<int64_t>> in;
  for (size_t i = 0; i < kNumInputs; ++i) in.push_back(ms_ops::Dims(*context->GetInputShape(i)));
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::MoeFinalizeRoutingGradAttrs a;
  a.dropPadMode = *attrs->GetAttrPointer<int64_t>(kDropPadMode);
  a.activeNum = *attrs->GetAttrPointer<int64_t>(kActiveNum);
  a.expertNum = *attrs->GetAttrPointer<int64_t>(kExpertNum);
  a.expertCapacity = *attrs->GetAttrPointer<int64_t>(kExpertCapacity);
  a.hasExpandedX = *attrs->GetAttrPointer<bool>(kHasExpandedX);
  const std::vector<std::vector<int64_t>> out = ms_ops::MoeFinalizeRoutingGradOutShapes(in, a);
  for (size_t o = 0; o < kNumOutputs; ++o) ms_ops::SetDims(context->GetOutputShape(o), out[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus MoeFinalizeRoutingGradInferDataType(gert::InferDataTypeContext *context) {
  std::vector<ge::DataType> in;
  for (size_t i = 0; i < kNumInputs; ++i) in.push_back(context->GetInputDataType(i));
  const std::vector<ge::DataType> out = ms_ops::MoeFinalizeRoutingGradOutTypes(in);
  for (size_t o = 0; o < kNumOutputs; ++o) context->SetOutputDataType(o, out[o]);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(MoeFinalizeRoutingGradMsops)
    .InferShape(MoeFinalizeRoutingGradInferShape)
    .InferDataType(MoeFinalizeRoutingGradInferDataType);

}  // namespace ops
