// CANN OpDef of MoeFinalizeRoutingGradMsops (ms_ops moe_finalize_routing_grad). Built only by the
// CANN toolchain; tiling and inference are registered in moe_finalize_routing_grad_tiling.cpp.
// expanded_x, scales, expert_idx and bias are always passed: absent ones as [1] placeholders
// (has_* false); the gradients of absent scales/bias are then [1] zeros, and grad_expanded_x
// without expanded_x takes its shape from drop_pad_mode, active_num, expert_num, expert_capacity.
#include "../../../cann/cann_op_def.h"

namespace ops {

class MoeFinalizeRoutingGradMsops : public OpDef {
 public:
  explicit MoeFinalizeRoutingGradMsops(const char *name) : OpDef(name) {
    // Rows: (data, scales) = (fp32, fp32), (fp16, fp16), (fp16, fp32), (bf16, bf16), (bf16, fp32).
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_FLOAT16, ge::DT_BF16, ge::DT_BF16};
    const std::vector<ge::DataType> scales = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_FLOAT, ge::DT_BF16, ge::DT_FLOAT};
    const std::vector<ge::DataType> i32(data.size(), ge::DT_INT32);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    this->Input("grad_y").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("expanded_row_idx").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    this->Input("expanded_x").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("scales").ParamType(REQUIRED).DataType(scales).Format(nd).UnknownShapeFormat(nd);
    this->Input("expert_idx").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    this->Input("bias").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Output("grad_expanded_x").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Output("grad_scales").ParamType(REQUIRED).DataType(scales).Format(nd).UnknownShapeFormat(nd);
    this->Output("grad_bias").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Attr("drop_pad_mode").AttrType(OPTIONAL).Int(0);
    this->Attr("active_num").AttrType(OPTIONAL).Int(0);
    this->Attr("expert_num").AttrType(OPTIONAL).Int(0);
    this->Attr("expert_capacity").AttrType(OPTIONAL).Int(0);
    this->Attr("has_expanded_x").AttrType(OPTIONAL).Bool(true);
    this->Attr("has_bias").AttrType(OPTIONAL).Bool(false);
    this->Attr("has_scales").AttrType(OPTIONAL).Bool(false);

    ms_ops::AddAiCoreConfig(*this, "moe_finalize_routing_grad");
  }
};

OP_ADD(MoeFinalizeRoutingGradMsops);

}  // namespace ops
