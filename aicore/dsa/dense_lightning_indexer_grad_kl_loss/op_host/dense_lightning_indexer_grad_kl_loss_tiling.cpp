// CANN registration of DenseLightningIndexerGradKlLossMsops: TilingFunc, InferShape and
// InferDataType, thin wrappers over dsa_cann.h's KL-loss functions. Built only by the CANN toolchain.
#include "../../dsa_cann.h"

namespace optiling {

struct DenseLightningIndexerGradKlLossCompileInfo {};

static ge::graphStatus DenseLightningIndexerGradKlLossTilingFunc(gert::TilingContext *context) {
  return ms_ops::DsaKlTiling(context, false, "dense_lightning_indexer_grad_kl_loss");
}

static ge::graphStatus DenseLightningIndexerGradKlLossTilingParse(gert::TilingParseContext *) {
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_OPTILING(DenseLightningIndexerGradKlLossMsops)
    .Tiling(DenseLightningIndexerGradKlLossTilingFunc)
    .TilingParse<DenseLightningIndexerGradKlLossCompileInfo>(DenseLightningIndexerGradKlLossTilingParse);

}  // namespace optiling

namespace ops {

IMPL_OP_INFERSHAPE(DenseLightningIndexerGradKlLossMsops)
    .InferShape(ms_ops::DsaKlInferShape)
    .InferDataType(ms_ops::DsaKlInferDataType);

}  // namespace ops
