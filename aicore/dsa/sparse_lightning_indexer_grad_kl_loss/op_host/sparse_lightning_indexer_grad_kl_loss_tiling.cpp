// CANN registration of SparseLightningIndexerGradKlLossMsops: TilingFunc, InferShape and
// InferDataType, thin wrappers over dsa_cann.h's KL-loss functions. Built only by the CANN toolchain.
#include "../../dsa_cann.h"

namespace optiling {

struct SparseLightningIndexerGradKlLossCompileInfo {};

static ge::graphStatus SparseLightningIndexerGradKlLossTilingFunc(gert::TilingContext *context) {
  return ms_ops::DsaKlTiling(context, true, "sparse_lightning_indexer_grad_kl_loss");
}

static ge::graphStatus SparseLightningIndexerGradKlLossTilingParse(gert::TilingParseContext *) {
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_OPTILING(SparseLightningIndexerGradKlLossMsops)
    .Tiling(SparseLightningIndexerGradKlLossTilingFunc)
    .TilingParse<SparseLightningIndexerGradKlLossCompileInfo>(SparseLightningIndexerGradKlLossTilingParse);

}  // namespace optiling

namespace ops {

IMPL_OP_INFERSHAPE(SparseLightningIndexerGradKlLossMsops)
    .InferShape(ms_ops::DsaKlInferShape)
    .InferDataType(ms_ops::DsaKlInferDataType);

}  // namespace ops
