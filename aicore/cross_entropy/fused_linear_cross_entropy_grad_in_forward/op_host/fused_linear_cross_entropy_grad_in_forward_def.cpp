// CANN OpDef of FusedLinearCrossEntropyGradInForwardMsops (ms_ops
// fused_linear_cross_entropy_grad_in_forward, no CANN counterpart). Built only by the CANN
// toolchain; tiling and inference are registered in fused_linear_cross_entropy_grad_in_forward_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class FusedLinearCrossEntropyGradInForwardMsops : public OpDef {
 public:
  explicit FusedLinearCrossEntropyGradInForwardMsops(const char *name) : OpDef(name) {
    // Rows: (input/weight/gradients, target) for fp32, fp16, bf16 x int32, int64.
    std::vector<ge::DataType> data, index;
    for (ge::DataType t : {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16}) {
      for (ge::DataType i : {ge::DT_INT32, ge::DT_INT64}) {
        data.push_back(t);
        index.push_back(i);
      }
    }
    const std::vector<ge::DataType> f32(data.size(), ge::DT_FLOAT);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    this->Input("input").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("weight").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("target").ParamType(REQUIRED).DataType(index).Format(nd).UnknownShapeFormat(nd);
    this->Output("loss").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("input_grad").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Output("weight_grad").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Attr("ignore_index").AttrType(OPTIONAL).Int(-100);
    this->Attr("label_smoothing").AttrType(OPTIONAL).Float(0.0f);
    this->Attr("block_bytes").AttrType(OPTIONAL).Int(16 << 20);

    ms_ops::AddAiCoreConfig(*this, "fused_linear_cross_entropy_grad_in_forward");
  }
};

OP_ADD(FusedLinearCrossEntropyGradInForwardMsops);

}  // namespace ops
