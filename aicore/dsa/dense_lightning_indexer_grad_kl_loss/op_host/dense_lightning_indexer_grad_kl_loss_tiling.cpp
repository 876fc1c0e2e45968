// CANN registration of DenseLightningIndexerGradKlLossMsops: TilingFunc, InferShape and
// InferDataType, thin wrappers over the pure functions the CPU entry also uses. Built only by the
// CANN toolchain. Inputs as the sparse loss's without sparse_indices. The keys per sequence are
// bounded by the key length (BSND) or the packed length (TND): the lengths' values are not seen here.
#include "../../dsa_cann.h"

namespace optiling {

struct DenseLightningIndexerGradKlLossCompileInfo {};

static ge::graphStatus DenseLightningIndexerGradKlLossTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  ms_ops::LightningIndexerProblem p;
  if (!ms_ops::DsaProblem(context, 2, 3, 9, -1, p, true)) {
    std::fprintf(stderr, "ms_ops dense_lightning_indexer_grad_kl_loss: tiling: layout must be BSND or TND\n");
    return ge::GRAPH_FAILED;
  }
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const std::vector<int64_t> q = ms_ops::Dims(context->GetInputShape(0)->GetStorageShape());
  const std::vector<int64_t> k = ms_ops::Dims(context->GetInputShape(1)->GetStorageShape());
  ms_ops::DsaMainAttention main;
  if (q.size() >= 3 && k.size() >= 3) {
    main.n1 = q[q.size() - 2];
    main.dim = q.back();
    main.n2 = k[k.size() - 2];
  }
  main.ropeDim = *attrs->GetAttrPointer<bool>(ms_ops::kKlHasRope) ? ms_ops::DsaLastDim(context, 7) : 0;
  main.scale = *attrs->GetAttrPointer<float>(ms_ops::kKlScaleValue);
  const int64_t keys = ms_ops::DsaKeyTokens(context, 3);
  p.topK = p.kLenMode == 2 ? keys : p.batch > 0 ? keys / p.batch : 0;
  p.topK = p.topK > 0 ? p.topK : 1;
  return ms_ops::DsaSetGradTiling(context, ascendc,
                                  ms_ops::ComputeLightningIndexerGradTiling(p, ms_ops::DsaKeyTokens(context, 3),
                                                                            ms_ops::ReadPlatformInfo(ascendc), main),
                                  "dense_lightning_indexer_grad_kl_loss");
}

static ge::graphStatus DenseLightningIndexerGradKlLossTilingParse(gert::TilingParseContext *) {
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_OPTILING(DenseLightningIndexerGradKlLossMsops)
    .Tiling(DenseLightningIndexerGradKlLossTilingFunc)
    .TilingParse<DenseLightningIndexerGradKlLossCompileInfo>(DenseLightningIndexerGradKlLossTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus DenseLightningIndexerGradKlLossInferShape(gert::InferShapeContext *context) {
  *context->GetOutputShape(0) = *context->GetInputShape(2);
  *context->GetOutputShape(1) = *context->GetInputShape(3);
  *context->GetOutputShape(2) = *context->GetInputShape(4);
  ms_ops::SetDims(context->GetOutputShape(3), {1});
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus DenseLightningIndexerGradKlLossInferDataType(gert::InferDataTypeContext *context) {
  for (size_t o = 0; o < 3; ++o) context->SetOutputDataType(o, context->GetInputDataType(2));
  context->SetOutputDataType(3, ge::DT_FLOAT);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(DenseLightningIndexerGradKlLossMsops)
    .InferShape(DenseLightningIndexerGradKlLossInferShape)
    .InferDataType(DenseLightningIndexerGradKlLossInferDataType);

}  // namespace ops
