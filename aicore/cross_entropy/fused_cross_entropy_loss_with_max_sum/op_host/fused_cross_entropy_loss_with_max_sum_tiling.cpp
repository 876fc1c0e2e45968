// CANN registration of FusedCrossEntropyLossWithMaxSumMsops: TilingFunc, InferShape and
// InferDataType, thin wrappers over the pure functions the CPU entry also uses. Built only by the
// CANN toolchain.
#include <cstdio>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "fused_cross_entropy_loss_with_max_sum_infer.h"
#include "fused_cross_entropy_loss_with_max_sum_tiling.h"

namespace {

enum AttrIndex : size_t { kLabelSmoothing, kVocabSize, kHasLogits };

}  // namespace

namespace optiling {

struct FusedCrossEntropyLossWithMaxSumCompileInfo {};

static ge::graphStatus FusedCrossEntropyLossWithMaxSumTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::FusedCrossEntropyLossWithMaxSumProblem p;
  p.rows = context->GetInputShape(ms_ops::kFcelMax)->GetStorageShape().GetDim(0);
  p.hasLogits = *attrs->GetAttrPointer<bool>(kHasLogits);
  if (p.hasLogits) {
    p.vocab = context->GetInputShape(ms_ops::kFcelLogits)->GetStorageShape().GetDim(1);
    p.logitsType = ms_ops::ToFloatEnum<ms_ops::CeFloat>(context->GetInputDesc(ms_ops::kFcelLogits)->GetDataType());
  }
  p.labelSmoothing = *attrs->GetAttrPointer<float>(kLabelSmoothing);
  p.vocabSize = *attrs->GetAttrPointer<int64_t>(kVocabSize);

  const ms_ops::FusedCrossEntropyLossWithMaxSumTiling t =
      ms_ops::ComputeFusedCrossEntropyLossWithMaxSumTiling(p, ms_ops::ReadPlatformInfo(ascendc));
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops fused_cross_entropy_loss_with_max_sum: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  // An empty BT still launches one block, which finds no rows.
  return ms_ops::SetTiling(context, ascendc, t.data, t.blockDim > 0 ? t.blockDim : 1, t.tilingKey);
}

static ge::graphStatus FusedCrossEntropyLossWithMaxSumTilingParse(gert::TilingParseContext *) {
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_OPTILING(FusedCrossEntropyLossWithMaxSumMsops)
    .Tiling(FusedCrossEntropyLossWithMaxSumTilingFunc)
    .TilingParse<FusedCrossEntropyLossWithMaxSumCompileInfo>(FusedCrossEntropyLossWithMaxSumTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus FusedCrossEntropyLossWithMaxSumInferShape(gert::InferShapeContext *context) {
  std::vector<std::vector<int64_t>> in;
  for (size_t i = 0; i < ms_ops::kFcelNumInputs; ++i) in.push_back(ms_ops::Dims(*context->GetInputShape(i)));
  const auto shapes =
      ms_ops::FusedCrossEntropyLossWithMaxSumOutShapes(in, *context->GetAttrs()->GetAttrPointer<bool>(kHasLogits));
  for (size_t o = 0; o < shapes.size(); ++o) ms_ops::SetDims(context->GetOutputShape(o), shapes[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus FusedCrossEntropyLossWithMaxSumInferDataType(gert::InferDataTypeContext *context) {
  const auto types = ms_ops::FusedCrossEntropyLossWithMaxSumOutTypes(ge::DT_FLOAT);
  for (size_t o = 0; o < types.size(); ++o) context->SetOutputDataType(o, types[o]);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(FusedCrossEntropyLossWithMaxSumMsops)
    .InferShape(FusedCrossEntropyLossWithMaxSumInferShape)
    .InferDataType(FusedCrossEntropyLossWithMaxSumInferDataType);

}  // namespace ops
