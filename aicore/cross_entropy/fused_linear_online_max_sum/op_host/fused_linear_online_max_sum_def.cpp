// CANN OpDef of FusedLinearOnlineMaxSumMsops (ms_ops fused_linear_online_max_sum). Built only by
// the CANN toolchain; tiling and inference are registered in fused_linear_online_max_sum_tiling.cpp.
// Every output is declared required: vocab_parallel_logits has shape [0] when return_logits is
// false, and the kernel then never touches it.
#include "../../../cann/cann_op_def.h"

namespace ops {

class FusedLinearOnlineMaxSumMsops : public OpDef {
 public:
  explicit FusedLinearOnlineMaxSumMsops(const char *name) : OpDef(name) {
    // Rows: (input/weight, target) = (fp32|fp16|bf16) x (int32|int64).
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT,   ge::DT_FLOAT16,
                                            ge::DT_FLOAT16, ge::DT_BF16, ge::DT_BF16};
    const std::vector<ge::DataType> target = {ge::DT_INT32, ge::DT_INT64, ge::DT_INT32,
                                              ge::DT_INT64, ge::DT_INT32, ge::DT_INT64};
    const std::vector<ge::DataType> f32(data.size(), ge::DT_FLOAT);
    const std::vector<ge::DataType> u8(data.size(), ge::DT_UINT8);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    this->Input("input").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("weight").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("target").ParamType(REQUIRED).DataType(target).Format(nd).UnknownShapeFormat(nd);
    this->Output("logits_max_local").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("sum_exp_logits_local").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("predicted_logits_local").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("target_mask").ParamType(REQUIRED).DataType(u8).Format(nd).UnknownShapeFormat(nd);
    this->Output("masked_target").ParamType(REQUIRED).DataType(target).Format(nd).UnknownShapeFormat(nd);
    this->Output("vocab_parallel_logits").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("sum_logits_local").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Attr("vocab_start_index").AttrType(REQUIRED).Int();
    this->Attr("vocab_end_index").AttrType(REQUIRED).Int();
    this->Attr("return_logits").AttrType(OPTIONAL).Bool(false);
    this->Attr("vocab_size").AttrType(REQUIRED).Int();
    this->Attr("ignore_index").AttrType(OPTIONAL).Int(-100);

    ms_ops::AddAiCoreConfig(*this, "fused_linear_online_max_sum");
  }
};

OP_ADD(FusedLinearOnlineMaxSumMsops);

}  // namespace ops
