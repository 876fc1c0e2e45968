// CANN OpDef of SparseLightningIndexerGradKlLossMsops (ms_ops sparse_lightning_indexer_grad_kl_loss).
// Built only by the CANN toolchain; tiling and inference are registered in
// sparse_lightning_indexer_grad_kl_loss_tiling.cpp.
#include "../../kl_loss_def.h"

namespace ops {

class SparseLightningIndexerGradKlLossMsops : public OpDef {
 public:
  explicit SparseLightningIndexerGradKlLossMsops(const char *name) : OpDef(name) {
    ms_ops::AddKlLossDef(*this, true, "sparse_lightning_indexer_grad_kl_loss");
  }
};

OP_ADD(SparseLightningIndexerGradKlLossMsops);

}  // namespace ops
