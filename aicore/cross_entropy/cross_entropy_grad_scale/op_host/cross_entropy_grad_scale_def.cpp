// CANN OpDef of CrossEntropyGradScaleMsops (ms_ops cross_entropy_grad_scale). Built only by the
// CANN toolchain; tiling and inference are registered in cross_entropy_grad_scale_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class CrossEntropyGradScaleMsops : public OpDef {
 public:
  explicit CrossEntropyGradScaleMsops(const char *name) : OpDef(name) {
    // Rows: the gradients' dtype fp32, fp16 or bf16; dout and count float32.
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> f32(data.size(), ge::DT_FLOAT);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    this->Input("input_grad").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("weight_grad").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("dout").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Input("count").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    // input_grad and weight_grad are scaled in place (see the kernel); count is marked consumed.
    this->Output("applied_scale").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Attr("reduction").AttrType(OPTIONAL).String("mean");

    ms_ops::AddAiCoreConfig(*this, "cross_entropy_grad_scale");
  }
};

OP_ADD(CrossEntropyGradScaleMsops);

}  // namespace ops
