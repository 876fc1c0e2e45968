// CANN registration of LightningIndexerMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
// The lengths' and the block table's values are not seen here: the CPU entry checks them, the
// kernel reads them.
#include <cstdio>

#include "../../dsa_cann.h"

namespace optiling {

struct LightningIndexerCompileInfo {};

static ge::graphStatus LightningIndexerTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  ms_ops::LightningIndexerProblem p;
  if (!ms_ops::DsaProblem(context, 0, 1, 3, 5, p)) {
    std::fprintf(stderr, "ms_ops lightning_indexer: tiling: layouts must be BSND or TND (keys also PA_BSND)\n");
    return ge::GRAPH_FAILED;
  }
  p.topK = *context->GetAttrs()->GetAttrPointer<int64_t>(ms_ops::kDsaSparseCount);
  const ms_ops::LightningIndexerTiling t = ms_ops::ComputeLightningIndexerTiling(p, ms_ops::ReadPlatformInfo(ascendc));
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops lightning_indexer: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  // An empty problem still launches one block, which finds no work item.
  const ge::graphStatus status = ms_ops::SetTiling(context, ascendc, t.data, t.blockDim > 0 ? t.blockDim : 1,
                                                   t.tilingKey);
  context->GetWorkspaceSizes(1)[0] += t.workspaceBytes;  // the blocks' workspaces, after the library's part
  return status;
}

static ge::graphStatus LightningIndexerTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(LightningIndexerMsops)
    .Tiling(LightningIndexerTilingFunc)
    .TilingParse<LightningIndexerCompileInfo>(LightningIndexerTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus LightningIndexerInferShape(gert::InferShapeContext *context) {
  const int64_t k = *context->GetAttrs()->GetAttrPointer<int64_t>(ms_ops::kDsaSparseCount);
  const auto out = ms_ops::DsaOutShape(ms_ops::Dims(*context->GetInputShape(0)), ms_ops::Dims(*context->GetInputShape(1)), k);
  ms_ops::SetDims(context->GetOutputShape(0), out);
  ms_ops::SetDims(context->GetOutputShape(1), out);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus LightningIndexerInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, ge::DT_INT32);
  context->SetOutputDataType(1, context->GetInputDataType(0));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(LightningIndexerMsops)
    .InferShape(LightningIndexerInferShape)
    .InferDataType(LightningIndexerInferDataType);

}  // namespace ops
