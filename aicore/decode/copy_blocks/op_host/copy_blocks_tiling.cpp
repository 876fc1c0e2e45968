// CANN registration of CopyBlocksMsops: TilingFunc, InferShape and InferDataType, thin wrappers
// over the pure functions the CPU entry also uses. Built only by the CANN toolchain. The block ids
// are not seen here: the kernel skips ids outside the pool.
#include <cstdio>

#include "../../decode_cann.h"
#include "cann_platform.h"
#include "copy_blocks_tiling.h"

namespace optiling {

struct CopyBlocksCompileInfo {};

static ge::graphStatus CopyBlocksTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const gert::Shape &cache = context->GetInputShape(ms_ops::kCbKeyCache)->GetStorageShape();
  ms_ops::CopyBlocksProblem p;
  p.pairs = context->GetInputShape(ms_ops::kCbMapping)->GetStorageShape().GetShapeSize() / 2;
  p.numBlocks = cache.GetDimNum() == 4 ? cache.GetDim(0) : 0;
  p.blockElems = cache.GetDimNum() == 4 ? cache.GetDim(1) * cache.GetDim(2) * cache.GetDim(3) : 0;
  p.dataType = ms_ops::ToDecodeFloat(context->GetInputDesc(ms_ops::kCbKeyCache)->GetDataType());
  const ms_ops::CopyBlocksTiling t = ms_ops::ComputeCopyBlocksTiling(p, ms_ops::ReadPlatformInfo(ascendc));
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops copy_blocks: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  return ms_ops::SetTiling(context, ascendc, t.data, t.blockDim, t.tilingKey);
}

static ge::graphStatus CopyBlocksTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(CopyBlocksMsops).Tiling(CopyBlocksTilingFunc).TilingParse<CopyBlocksCompileInfo>(CopyBlocksTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus CopyBlocksInferShape(gert::InferShapeContext *context) {
  ms_ops::SetDims(context->GetOutputShape(0), {1});
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus CopyBlocksInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, ge::DT_INT32);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(CopyBlocksMsops).InferShape(CopyBlocksInferShape).InferDataType(CopyBlocksInferDataType);

}  // namespace ops
