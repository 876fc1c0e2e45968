// CANN registration of LinearAttentionGradMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include "../../linear_attention_cann.h"

namespace optiling {

struct LinearAttentionGradCompileInfo {};

static ge::graphStatus LinearAttentionGradTilingFunc(gert::TilingContext *context) {
  return ms_ops::LaTilingFunc(context, "linear_attention_grad");
}

static ge::graphStatus LinearAttentionGradTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(LinearAttentionGradMsops)
    .Tiling(LinearAttentionGradTilingFunc)
    .TilingParse<LinearAttentionGradCompileInfo>(LinearAttentionGradTilingParse);

}  // namespace optiling

namespace ops {

// dq, dk, dv have the shapes and dtype of query, key, value.
static ge::graphStatus LinearAttentionGradInferShape(gert::InferShapeContext *context) {
  for (size_t i = 0; i < 3; ++i) ms_ops::SetDims(context->GetOutputShape(i), ms_ops::Dims(*context->GetInputShape(i)));
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus LinearAttentionGradInferDataType(gert::InferDataTypeContext *context) {
  for (size_t i = 0; i < 3; ++i) context->SetOutputDataType(i, context->GetInputDataType(0));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(LinearAttentionGradMsops)
    .InferShape(LinearAttentionGradInferShape)
    .InferDataType(LinearAttentionGradInferDataType);

}  // namespace ops
