// CANN registration of PagedAttentionMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
// Context lengths and block ids are not seen here: the kernel skips ids outside the pool.
#include <cstdio>

#include "../../decode_cann.h"
#include "cann_platform.h"
#include "paged_attention_tiling.h"

namespace {

enum AttrIndex : size_t { kHeadNum, kScaleValue, kKvHeadNum, kHasQSeqLens, kHasAlibi };

}  // namespace

namespace optiling {

struct PagedAttentionCompileInfo {};

static ge::graphStatus PagedAttentionTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const gert::Shape &cache = context->GetInputShape(ms_ops::kPaKeyCache)->GetStorageShape();
  const gert::Shape &tables = context->GetInputShape(ms_ops::kPaBlockTables)->GetStorageShape();
  ms_ops::PagedAttentionProblem p;
  p.heads = *attrs->GetAttrPointer<int64_t>(kHeadNum);
  p.scale = *attrs->GetAttrPointer<float>(kScaleValue);
  p.kvHeads = *attrs->GetAttrPointer<int64_t>(kKvHeadNum);
  p.hasQSeqLens = *attrs->GetAttrPointer<bool>(kHasQSeqLens);
  p.hasAlibi = *attrs->GetAttrPointer<bool>(kHasAlibi);
  p.numTokens = context->GetInputShape(ms_ops::kPaQuery)->GetStorageShape().GetDim(0);
  if (cache.GetDimNum() == 4) {
    p.numBlocks = cache.GetDim(0);
    p.blockSize = cache.GetDim(1);
    p.dim = cache.GetDim(3);
  }
  if (tables.GetDimNum() == 2) {
    p.batch = tables.GetDim(0);
    p.maxBlocks = tables.GetDim(1);
  }
  p.dataType = ms_ops::ToDecodeFloat(context->GetInputDesc(ms_ops::kPaQuery)->GetDataType());
  const ms_ops::PagedAttentionTiling t = ms_ops::ComputePagedAttentionTiling(p, ms_ops::ReadPlatformInfo(ascendc));
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops paged_attention: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  return ms_ops::SetTiling(context, ascendc, t.data, t.blockDim, t.tilingKey);
}

static ge::graphStatus PagedAttentionTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(PagedAttentionMsops)
    .Tiling(PagedAttentionTilingFunc)
    .TilingParse<PagedAttentionCompileInfo>(PagedAttentionTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus PagedAttentionInferShape(gert::InferShapeContext *context) {
  *context->GetOutputShape(0) = *context->GetInputShape(ms_ops::kPaQuery);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus PagedAttentionInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, context->GetInputDataType(ms_ops::kPaQuery));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(PagedAttentionMsops)
    .InferShape(PagedAttentionInferShape)
    .InferDataType(PagedAttentionInferDataType);

}  // namespace ops
