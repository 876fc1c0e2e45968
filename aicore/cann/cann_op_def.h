// The AI Core configuration every ms_ops OpDef registers (CANN-only: never compiled by the CPU
// build). All our kernels take their shapes from the tiling at run time, so one binary per dtype
// serves every shape and rank.
#ifndef MS_OPS_CANN_CANN_OP_DEF_H_
#define MS_OPS_CANN_CANN_OP_DEF_H_

#include "register/op_def_registry.h"

namespace ms_ops {

// `kernelFile`: the op_kernel/<kernelFile>.cpp that implements the op, whose entry function has
// the same name (without opInterface CANN would derive it from the op type, `<op>_msops`).
inline void AddAiCoreConfig(ops::OpDef &def, const char *kernelFile) {
  ops::OpAICoreConfig config;
  config.DynamicCompileStaticFlag(true)
      .DynamicFormatFlag(false)
      .DynamicRankSupportFlag(true)
      .DynamicShapeSupportFlag(true)
      .NeedCheckSupportFlag(false)
      .PrecisionReduceFlag(true)
      .ExtendCfgInfo("opFile.value", kernelFile)
      .ExtendCfgInfo("opInterface.value", kernelFile);
  def.AICore().AddConfig("ascend910b", config);
}

}  // namespace ms_ops

#endif  // MS_OPS_CANN_CANN_OP_DEF_H_
