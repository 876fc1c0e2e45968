// CANN registration of LinearAttentionMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <string>
#include <vector>

#include "../../linear_attention_cann.h"

namespace optiling {

struct LinearAttentionCompileInfo {};

static ge::graphStatus LinearAttentionTilingFunc(gert::TilingContext *context) {
  return ms_ops::LaTilingFunc(context, "linear_attention");
}

static ge::graphStatus LinearAttentionTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(LinearAttentionMsops)
    .Tiling(LinearAttentionTilingFunc)
    .TilingParse<LinearAttentionCompileInfo>(LinearAttentionTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus LinearAttentionInferShape(gert::InferShapeContext *context) {
  const char *layout = context->GetAttrs()->GetStr(ms_ops::kLaLayout);
  const auto shapes = ms_ops::LinearAttentionOutShapes(ms_ops::Dims(*context->GetInputShape(0)),
                                                       ms_ops::Dims(*context->GetInputShape(2)),
                                                       layout == nullptr ? "" : layout);
  for (size_t o = 0; o < shapes.size(); ++o) ms_ops::SetDims(context->GetOutputShape(o), shapes[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus LinearAttentionInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, context->GetInputDataType(0));
  context->SetOutputDataType(1, ge::DT_FLOAT);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(LinearAttentionMsops)
    .InferShape(LinearAttentionInferShape)
    .InferDataType(LinearAttentionInferDataType);

}  // namespace ops
