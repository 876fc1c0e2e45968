// CANN OpDef of FusedLinearCrossEntropyLossGradMsops (ms_ops fused_linear_cross_entropy_loss_grad).
// Built only by the CANN toolchain; tiling and inference are registered in
// fused_linear_cross_entropy_loss_grad_tiling.cpp. logits_max, sum_exp_logits and softmax are
// always passed: the ones the mode does not read (has_softmax) as [1] float32 placeholders.
#include "../../../cann/cann_op_def.h"

namespace ops {

class FusedLinearCrossEntropyLossGradMsops : public OpDef {
 public:
  explicit FusedLinearCrossEntropyLossGradMsops(const char *name) : OpDef(name) {
    // Rows: (input/weight/gradients, masked_target) for fp32, fp16, bf16 x int32, int64.
    std::vector<ge::DataType> data, index;
    for (ge::DataType t : {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16}) {
      for (ge::DataType i : {ge::DT_INT32, ge::DT_INT64}) {
        data.push_back(t);
        index.push_back(i);
      }
    }
    const std::vector<ge::DataType> f32(data.size(), ge::DT_FLOAT), u8(data.size(), ge::DT_UINT8);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    this->Input("grad").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Input("input").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("weight").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("target_mask").ParamType(REQUIRED).DataType(u8).Format(nd).UnknownShapeFormat(nd);
    this->Input("masked_target").ParamType(REQUIRED).DataType(index).Format(nd).UnknownShapeFormat(nd);
    this->Input("logits_max").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Input("sum_exp_logits").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Input("softmax").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("input_grad").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Output("weight_grad").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Attr("label_smoothing").AttrType(OPTIONAL).Float(0.0f);
    this->Attr("vocab_size").AttrType(REQUIRED).Int();
    this->Attr("has_softmax").AttrType(OPTIONAL).Bool(false);

    ms_ops::AddAiCoreConfig(*this, "fused_linear_cross_entropy_loss_grad");
  }
};

OP_ADD(FusedLinearCrossEntropyLossGradMsops);

}  // namespace ops
