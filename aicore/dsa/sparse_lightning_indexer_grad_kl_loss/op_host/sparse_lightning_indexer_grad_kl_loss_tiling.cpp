// CANN registration of SparseLightningIndexerGradKlLossMsops: TilingFunc, InferShape and
// InferDataType, thin wrappers over the pure functions the CPU entry also uses. Built only by the
// CANN toolchain. sparse_indices' values are not seen here: the CPU entry checks them.
#include "../../dsa_cann.h"

namespace optiling {

struct SparseLightningIndexerGradKlLossCompileInfo {};

static ge::graphStatus SparseLightningIndexerGradKlLossTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  ms_ops::LightningIndexerProblem p;
  if (!ms_ops::DsaProblem(context, 2, 3, 10, -1, p, true)) {
    std::fprintf(stderr, "ms_ops sparse_lightning_indexer_grad_kl_loss: tiling: layout must be BSND or TND\n");
    return ge::GRAPH_FAILED;
  }
  p.topK = ms_ops::DsaLastDim(context, 5);
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const std::vector<int64_t> q = ms_ops::Dims(context->GetInputShape(0)->GetStorageShape());
  const std::vector<int64_t> k = ms_ops::Dims(context->GetInputShape(1)->GetStorageShape());
  ms_ops::DsaMainAttention main;
  if (q.size() >= 3 && k.size() >= 3) {
    main.n1 = q[q.size() - 2];
    main.dim = q.back();
    main.n2 = k[k.size() - 2];
  }
  main.ropeDim = *attrs->GetAttrPointer<bool>(ms_ops::kKlHasRope) ? ms_ops::DsaLastDim(context, 8) : 0;
  main.scale = *attrs->GetAttrPointer<float>(ms_ops::kKlScaleValue);
  return ms_ops::DsaSetGradTiling(context, ascendc,
                                  ms_ops::ComputeLightningIndexerGradTiling(p, ms_ops::DsaKeyTokens(context, 3),
                                                                            ms_ops::ReadPlatformInfo(ascendc), main),
                                  "sparse_lightning_indexer_grad_kl_loss");
}

static ge::graphStatus SparseLightningIndexerGradKlLossTilingParse(gert::TilingParseContext *) {
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_OPTILING(SparseLightningIndexerGradKlLossMsops)
    .Tiling(SparseLightningIndexerGradKlLossTilingFunc)
    .TilingParse<SparseLightningIndexerGradKlLossCompileInfo>(SparseLightningIndexerGradKlLossTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus SparseLightningIndexerGradKlLossInferShape(gert::InferShapeContext *context) {
  *context->GetOutputShape(0) = *context->GetInputShape(2);
  *context->GetOutputShape(1) = *context->GetInputShape(3);
  *context->GetOutputShape(2) = *context->GetInputShape(4);
  ms_ops::SetDims(context->GetOutputShape(3), {1});
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus SparseLightningIndexerGradKlLossInferDataType(gert::InferDataTypeContext *context) {
  for (size_t o = 0; o < 3; ++o) context->SetOutputDataType(o, context->GetInputDataType(2));
  context->SetOutputDataType(3, ge::DT_FLOAT);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(SparseLightningIndexerGradKlLossMsops)
    .InferShape(SparseLightningIndexerGradKlLossInferShape)
    .InferDataType(SparseLightningIndexerGradKlLossInferDataType);

}  // namespace ops
