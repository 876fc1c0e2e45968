// CANN OpDef of CopyBlocksMsops (ms_ops copy_blocks). Built only by the CANN toolchain; tiling and
// inference are registered in copy_blocks_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class CopyBlocksMsops : public OpDef {
 public:
  explicit CopyBlocksMsops(const char *name) : OpDef(name) {
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> i32(data.size(), ge::DT_INT32);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    for (const char *in : {"key_cache", "value_cache"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("block_mapping").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    // key_cache and value_cache are written in place (see the kernel).
    this->Output("copied_blocks").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);

    ms_ops::AddAiCoreConfig(*this, "copy_blocks");
  }
};

OP_ADD(CopyBlocksMsops);

}  // namespace ops
