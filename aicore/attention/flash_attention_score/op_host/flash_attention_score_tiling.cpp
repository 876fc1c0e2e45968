// CANN registration of FlashAttentionScoreMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <string>
#include <vector>

#include "../../flash_attention_cann.h"

namespace optiling {

struct FlashAttentionScoreCompileInfo {};

static ge::graphStatus FlashAttentionScoreTilingFunc(gert::TilingContext *context) {
  return ms_ops::FaTilingFunc(context, "flash_attention_score", false, 3);
}

static ge::graphStatus FlashAttentionScoreTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(FlashAttentionScoreMsops)
    .Tiling(FlashAttentionScoreTilingFunc)
    .TilingParse<FlashAttentionScoreCompileInfo>(FlashAttentionScoreTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus FlashAttentionScoreInferShape(gert::InferShapeContext *context) {
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const char *layout = attrs->GetStr(ms_ops::kFaLayout);
  const auto shapes = ms_ops::FlashAttentionScoreOutShapes(ms_ops::Dims(*context->GetInputShape(0)),
                                                           ms_ops::Dims(*context->GetInputShape(1)),
                                                           ms_ops::Dims(*context->GetInputShape(2)),
                                                           layout == nullptr ? "" : layout,
                                                           *attrs->GetAttrPointer<int64_t>(ms_ops::kFaHeadNum));
  for (size_t o = 0; o < shapes.size(); ++o) ms_ops::SetDims(context->GetOutputShape(o), shapes[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus FlashAttentionScoreInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, ge::DT_FLOAT);
  context->SetOutputDataType(1, ge::DT_FLOAT);
  context->SetOutputDataType(2, context->GetInputDataType(0));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(FlashAttentionScoreMsops)
    .InferShape(FlashAttentionScoreInferShape)
    .InferDataType(FlashAttentionScoreInferDataType);

}  // namespace ops
