// CANN OpDef of CrossEntropyLossReduceMsops (ms_ops cross_entropy_loss_reduce). Built only by the
// CANN toolchain; tiling and inference are registered in cross_entropy_loss_reduce_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class CrossEntropyLossReduceMsops : public OpDef {
 public:
  explicit CrossEntropyLossReduceMsops(const char *name) : OpDef(name) {
    // Rows: target int32 or int64; everything else float32.
    const std::vector<ge::DataType> target = {ge::DT_INT32, ge::DT_INT64};
    const std::vector<ge::DataType> f32(target.size(), ge::DT_FLOAT);
    const std::vector<ge::Format> nd(target.size(), ge::FORMAT_ND);
    this->Input("loss").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Input("target").ParamType(REQUIRED).DataType(target).Format(nd).UnknownShapeFormat(nd);
    this->Output("out").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("count").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Attr("ignore_index").AttrType(OPTIONAL).Int(-100);
    this->Attr("reduction").AttrType(OPTIONAL).String("mean");

    ms_ops::AddAiCoreConfig(*this, "cross_entropy_loss_reduce");
  }
};

OP_ADD(CrossEntropyLossReduceMsops);

}  // namespace ops
