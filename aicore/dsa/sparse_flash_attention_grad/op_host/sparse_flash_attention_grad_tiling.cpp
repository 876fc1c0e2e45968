// CANN registration of SparseFlashAttentionGradMsops: TilingFunc, InferShape and InferDataType,
// thin wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include "../../sparse_flash_attention/sparse_flash_attention_cann.h"

namespace optiling {

struct SparseFlashAttentionGradCompileInfo {};

static ge::graphStatus SparseFlashAttentionGradTilingFunc(gert::TilingContext *context) {
  return ms_ops::SfaTilingFunc(context, "sparse_flash_attention_grad", true, 8);
}

static ge::graphStatus SparseFlashAttentionGradTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(SparseFlashAttentionGradMsops)
    .Tiling(SparseFlashAttentionGradTilingFunc)
    .TilingParse<SparseFlashAttentionGradCompileInfo>(SparseFlashAttentionGradTilingParse);

}  // namespace optiling

namespace ops {

// The gradients have the shapes and dtype of query, key, value, query_rope and key_rope.
static ge::graphStatus SparseFlashAttentionGradInferShape(gert::InferShapeContext *context) {
  const size_t from[] = {0, 1, 2, 8, 9};
  for (size_t o = 0; o < 5; ++o) ms_ops::SetDims(context->GetOutputShape(o), ms_ops::Dims(*context->GetInputShape(from[o])));
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus SparseFlashAttentionGradInferDataType(gert::InferDataTypeContext *context) {
  for (size_t o = 0; o < 5; ++o) context->SetOutputDataType(o, context->GetInputDataType(0));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(SparseFlashAttentionGradMsops)
    .InferShape(SparseFlashAttentionGradInferShape)
    .InferDataType(SparseFlashAttentionGradInferDataType);

}  // namespace ops
