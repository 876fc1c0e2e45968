// CANN OpDef of MoeInitRoutingMsops (ms_ops moe_init_routing). Built only by the CANN toolchain;
// tiling and inference are registered in moe_init_routing_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class MoeInitRoutingMsops : public OpDef {
 public:
  explicit MoeInitRoutingMsops(const char *name) : OpDef(name) {
    const std::vector<ge::Format> nd(3, ge::FORMAT_ND);
    const std::vector<ge::DataType> i32(3, ge::DT_INT32);
    this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16}).Format(nd)
        .UnknownShapeFormat(nd);
    this->Input("expert_idx").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    this->Output("expanded_x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16})
        .Format(nd).UnknownShapeFormat(nd);
    this->Output("expanded_row_idx").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    this->Output("expert_tokens_count_or_cumsum").ParamType(REQUIRED).DataType(i32).Format(nd)
        .UnknownShapeFormat(nd);
    this->Output("expert_tokens_before_capacity").ParamType(REQUIRED).DataType(i32).Format(nd)
        .UnknownShapeFormat(nd);
    this->Attr("active_num").AttrType(OPTIONAL).Int(0);
    this->Attr("expert_capacity").AttrType(OPTIONAL).Int(0);
    this->Attr("expert_num").AttrType(OPTIONAL).Int(0);
    this->Attr("drop_pad_mode").AttrType(OPTIONAL).Int(0);
    this->Attr("expert_tokens_count_or_cumsum_flag").AttrType(OPTIONAL).Int(0);
    this->Attr("expert_tokens_before_capacity_flag").AttrType(OPTIONAL).Bool(false);

    ms_ops::AddAiCoreConfig(*this, "moe_init_routing");
  }
};

OP_ADD(MoeInitRoutingMsops);

}  // namespace ops
