// CANN OpDef of FusedCrossEntropyLossWithMaxSumMsops (ms_ops fused_cross_entropy_loss_with_max_sum).
// Built only by the CANN toolchain; tiling and inference are registered in
// fused_cross_entropy_loss_with_max_sum_tiling.cpp. Every input is declared required: ms_ops
// passes a [1] placeholder for absent logits (has_logits false), and softmax then has shape [0];
// likewise for sum_logits without label smoothing. Rows: the logits' dtype (fp32, fp16, bf16);
// everything else is fp32, the softmax too (as CANN's FusedCrossEntropyLossWithMaxSum).
#include "../../../cann/cann_op_def.h"

namespace ops {

class FusedCrossEntropyLossWithMaxSumMsops : public OpDef {
 public:
  explicit FusedCrossEntropyLossWithMaxSumMsops(const char *name) : OpDef(name) {
    const std::vector<ge::DataType> logits = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> f32(logits.size(), ge::DT_FLOAT);
    const std::vector<ge::Format> nd(logits.size(), ge::FORMAT_ND);
    for (const char *in : {"logits_max", "sum_exp_logits", "predicted_logits", "sum_logits"})
      this->Input(in).ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Input("vocab_parallel_logits").ParamType(REQUIRED).DataType(logits).Format(nd).UnknownShapeFormat(nd);
    this->Output("loss").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("softmax").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Attr("label_smoothing").AttrType(OPTIONAL).Float(0.0f);
    this->Attr("vocab_size").AttrType(OPTIONAL).Int(0);
    this->Attr("has_logits").AttrType(OPTIONAL).Bool(false);

    ms_ops::AddAiCoreConfig(*this, "fused_cross_entropy_loss_with_max_sum");
  }
};

OP_ADD(FusedCrossEntropyLossWithMaxSumMsops);

}  // namespace ops
