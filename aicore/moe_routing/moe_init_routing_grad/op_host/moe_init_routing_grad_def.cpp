// CANN OpDef of MoeInitRoutingGradMsops (ms_ops moe_init_routing_grad). Built only by the CANN
// toolchain; tiling and inference are registered in moe_init_routing_grad_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class MoeInitRoutingGradMsops : public OpDef {
 public:
  explicit MoeInitRoutingGradMsops(const char *name) : OpDef(name) {
    const std::vector<ge::Format> nd(3, ge::FORMAT_ND);
    const std::vector<ge::DataType> floats{ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    this->Input("grad_expanded_x").ParamType(REQUIRED).DataType(floats).Format(nd).UnknownShapeFormat(nd);
    this->Input("expanded_row_idx").ParamType(REQUIRED).DataType(std::vector<ge::DataType>(3, ge::DT_INT32))
        .Format(nd).UnknownShapeFormat(nd);
    this->Output("grad_x").ParamType(REQUIRED).DataType(floats).Format(nd).UnknownShapeFormat(nd);
    this->Attr("top_k").AttrType(REQUIRED).Int();
    this->Attr("drop_pad_mode").AttrType(OPTIONAL).Int(0);
    this->Attr("active_num").AttrType(OPTIONAL).Int(0);

    ms_ops::AddAiCoreConfig(*this, "moe_init_routing_grad");
  }
};

OP_ADD(MoeInitRoutingGradMsops);

}  // namespace ops
