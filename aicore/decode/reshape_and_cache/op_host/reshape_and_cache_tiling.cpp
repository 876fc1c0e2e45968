// CANN registration of ReshapeAndCacheMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
// The slot values are not seen here: the kernel skips slots outside the caches.
#include <cstdio>

#include "../../decode_cann.h"
#include "cann_platform.h"
#include "reshape_and_cache_tiling.h"

namespace optiling {

struct ReshapeAndCacheCompileInfo {};

static ge::graphStatus ReshapeAndCacheTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const gert::Shape &cache = context->GetInputShape(ms_ops::kRacKeyCache)->GetStorageShape();
  ms_ops::ReshapeAndCacheProblem p;
  p.tokens = context->GetInputShape(ms_ops::kRacSlotMapping)->GetStorageShape().GetShapeSize();
  p.slots = cache.GetDimNum() == 4 ? cache.GetDim(0) * cache.GetDim(1) : -1;
  p.rowElems = cache.GetDimNum() == 4 ? cache.GetDim(2) * cache.GetDim(3) : 0;
  p.dataType = ms_ops::ToDecodeFloat(context->GetInputDesc(ms_ops::kRacKeyCache)->GetDataType());
  const ms_ops::ReshapeAndCacheTiling t = ms_ops::ComputeReshapeAndCacheTiling(p, ms_ops::ReadPlatformInfo(ascendc));
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops reshape_and_cache: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  return ms_ops::SetTiling(context, ascendc, t.data, t.blockDim, t.tilingKey);
}

static ge::graphStatus ReshapeAndCacheTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(ReshapeAndCacheMsops)
    .Tiling(ReshapeAndCacheTilingFunc)
    .TilingParse<ReshapeAndCacheCompileInfo>(ReshapeAndCacheTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus ReshapeAndCacheInferShape(gert::InferShapeContext *context) {
  ms_ops::SetDims(context->GetOutputShape(0), {1});
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus ReshapeAndCacheInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, ge::DT_INT32);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(ReshapeAndCacheMsops)
    .InferShape(ReshapeAndCacheInferShape)
    .InferDataType(ReshapeAndCacheInferDataType);

}  // namespace ops
