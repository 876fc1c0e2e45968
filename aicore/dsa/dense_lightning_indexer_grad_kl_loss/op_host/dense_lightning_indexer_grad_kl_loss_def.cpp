// CANN OpDef of DenseLightningIndexerGradKlLossMsops (ms_ops dense_lightning_indexer_grad_kl_loss).
// Built only by the CANN toolchain; tiling and inference are registered in
// dense_lightning_indexer_grad_kl_loss_tiling.cpp.
#include "../../kl_loss_def.h"

namespace ops {

class DenseLightningIndexerGradKlLossMsops : public OpDef {
 public:
  explicit DenseLightningIndexerGradKlLossMsops(const char *name) : OpDef(name) {
    ms_ops::AddKlLossDef(*this, false, "dense_lightning_indexer_grad_kl_loss");
  }
};

OP_ADD(DenseLightningIndexerGradKlLossMsops);

}  // namespace ops
