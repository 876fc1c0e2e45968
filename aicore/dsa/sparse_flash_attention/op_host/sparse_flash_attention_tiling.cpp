// CANN registration of SparseFlashAttentionMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include "../sparse_flash_attention_cann.h"

namespace optiling {

struct SparseFlashAttentionCompileInfo {};

static ge::graphStatus SparseFlashAttentionTilingFunc(gert::TilingContext *context) {
  return ms_ops::SfaTilingFunc(context, "sparse_flash_attention", false, 4);
}

static ge::graphStatus SparseFlashAttentionTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(SparseFlashAttentionMsops)
    .Tiling(SparseFlashAttentionTilingFunc)
    .TilingParse<SparseFlashAttentionCompileInfo>(SparseFlashAttentionTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus SparseFlashAttentionInferShape(gert::InferShapeContext *context) {
  const char *layout = context->GetAttrs()->GetStr(ms_ops::kSfaLayout);
  const auto shapes = ms_ops::SparseFlashAttentionOutShapes(
      ms_ops::Dims(*context->GetInputShape(0)), ms_ops::Dims(*context->GetInputShape(1)),
      ms_ops::Dims(*context->GetInputShape(2)), layout == nullptr ? "" : layout);
  for (size_t o = 0; o < shapes.size(); ++o) ms_ops::SetDims(context->GetOutputShape(o), shapes[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus SparseFlashAttentionInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, context->GetInputDataType(0));
  context->SetOutputDataType(1, ge::DT_FLOAT);
  context->SetOutputDataType(2, ge::DT_FLOAT);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(SparseFlashAttentionMsops)
    .InferShape(SparseFlashAttentionInferShape)
    .InferDataType(SparseFlashAttentionInferDataType);

}  // namespace ops
