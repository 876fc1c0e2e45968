// CANN registration of LightningIndexerGradMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
// sparse_indices' values are not seen here: the CPU entry checks them.
#include "../../dsa_cann.h"

namespace optiling {

struct LightningIndexerGradCompileInfo {};

static ge::graphStatus LightningIndexerGradTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  ms_ops::LightningIndexerProblem p;
  if (!ms_ops::DsaProblem(context, 0, 1, 5, -1, p)) {
    std::fprintf(stderr, "ms_ops lightning_indexer_grad: tiling: layouts must be BSND or TND, the same for both\n");
    return ge::GRAPH_FAILED;
  }
  p.topK = ms_ops::DsaLastDim(context, 3);
  return ms_ops::DsaSetGradTiling(
      context, ascendc,
      ms_ops::ComputeLightningIndexerGradTiling(p, ms_ops::DsaKeyTokens(context, 1), ms_ops::ReadPlatformInfo(ascendc)),
      "lightning_indexer_grad");
}

static ge::graphStatus LightningIndexerGradTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(LightningIndexerGradMsops)
    .Tiling(LightningIndexerGradTilingFunc)
    .TilingParse<LightningIndexerGradCompileInfo>(LightningIndexerGradTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus LightningIndexerGradInferShape(gert::InferShapeContext *context) {
  *context->GetOutputShape(0) = *context->GetInputShape(0);
  *context->GetOutputShape(1) = *context->GetInputShape(1);
  *context->GetOutputShape(2) = *context->GetInputShape(4);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus LightningIndexerGradInferDataType(gert::InferDataTypeContext *context) {
  for (size_t o = 0; o < 3; ++o) context->SetOutputDataType(o, context->GetInputDataType(0));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(LightningIndexerGradMsops)
    .InferShape(LightningIndexerGradInferShape)
    .InferDataType(LightningIndexerGradInferDataType);

}  // namespace ops
