// CANN OpDef of ReshapeAndCacheMsops (ms_ops reshape_and_cache). Built only by the CANN toolchain;
// tiling and inference are registered in reshape_and_cache_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class ReshapeAndCacheMsops : public OpDef {
 public:
  explicit ReshapeAndCacheMsops(const char *name) : OpDef(name) {
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> i32(data.size(), ge::DT_INT32);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    for (const char *in : {"key", "value", "key_cache", "value_cache"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("slot_mapping").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    // key_cache and value_cache are written in place (see the kernel).
    this->Output("written_tokens").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);

    ms_ops::AddAiCoreConfig(*this, "reshape_and_cache");
  }
};

OP_ADD(ReshapeAndCacheMsops);

}  // namespace ops
