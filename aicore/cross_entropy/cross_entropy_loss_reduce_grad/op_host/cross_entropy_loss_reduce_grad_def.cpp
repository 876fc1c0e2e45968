// CANN OpDef of CrossEntropyLossReduceGradMsops (ms_ops cross_entropy_loss_reduce_grad). Built only
// by the CANN toolchain; tiling and inference are registered in
// cross_entropy_loss_reduce_grad_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class CrossEntropyLossReduceGradMsops : public OpDef {
 public:
  explicit CrossEntropyLossReduceGradMsops(const char *name) : OpDef(name) {
    // Rows: target int32 or int64; everything else float32.
    const std::vector<ge::DataType> target = {ge::DT_INT32, ge::DT_INT64};
    const std::vector<ge::DataType> f32(target.size(), ge::DT_FLOAT);
    const std::vector<ge::Format> nd(target.size(), ge::FORMAT_ND);
    this->Input("dout").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Input("target").ParamType(REQUIRED).DataType(target).Format(nd).UnknownShapeFormat(nd);
    this->Input("count").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("grad").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Attr("ignore_index").AttrType(OPTIONAL).Int(-100);
    this->Attr("reduction").AttrType(OPTIONAL).String("mean");

    ms_ops::AddAiCoreConfig(*this, "cross_entropy_loss_reduce_grad");
  }
};

OP_ADD(CrossEntropyLossReduceGradMsops);

}  // namespace ops
