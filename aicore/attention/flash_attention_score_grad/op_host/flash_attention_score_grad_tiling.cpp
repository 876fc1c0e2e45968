// CANN registration of FlashAttentionScoreGradMsops: TilingFunc, InferShape and InferDataType,
// thin wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include "../../flash_attention_cann.h"

namespace optiling {

struct FlashAttentionScoreGradCompileInfo {};

static ge::graphStatus FlashAttentionScoreGradTilingFunc(gert::TilingContext *context) {
  return ms_ops::FaTilingFunc(context, "flash_attention_score_grad", true, 4);
}

static ge::graphStatus FlashAttentionScoreGradTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(FlashAttentionScoreGradMsops)
    .Tiling(FlashAttentionScoreGradTilingFunc)
    .TilingParse<FlashAttentionScoreGradCompileInfo>(FlashAttentionScoreGradTilingParse);

}  // namespace optiling

namespace ops {

// dq, dk, dv: the shapes and dtype of query, key, value; dpse: real_shift's (input 4).
static ge::graphStatus FlashAttentionScoreGradInferShape(gert::InferShapeContext *context) {
  for (size_t i = 0; i < 3; ++i) ms_ops::SetDims(context->GetOutputShape(i), ms_ops::Dims(*context->GetInputShape(i)));
  ms_ops::SetDims(context->GetOutputShape(3), ms_ops::Dims(*context->GetInputShape(4)));
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus FlashAttentionScoreGradInferDataType(gert::InferDataTypeContext *context) {
  for (size_t i = 0; i < 3; ++i) context->SetOutputDataType(i, context->GetInputDataType(0));
  context->SetOutputDataType(3, context->GetInputDataType(4));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(FlashAttentionScoreGradMsops)
    .InferShape(FlashAttentionScoreGradInferShape)
    .InferDataType(FlashAttentionScoreGradInferDataType);

}  // namespace ops
