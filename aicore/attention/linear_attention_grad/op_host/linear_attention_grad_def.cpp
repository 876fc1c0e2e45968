// CANN OpDef of LinearAttentionGradMsops (ms_ops linear_attention_grad: dq, dk, dv of
// linear_attention). Built only by the CANN toolchain; tiling and inference are registered in
// linear_attention_grad_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class LinearAttentionGradMsops : public OpDef {
 public:
  explicit LinearAttentionGradMsops(const char *name) : OpDef(name) {
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> f32(data.size(), ge::DT_FLOAT);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    for (const char *in : {"query", "key", "value", "dout", "attention_out"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("normalizer").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    for (const char *out : {"dq", "dk", "dv"})
      this->Output(out).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    // Order: ms_ops::LaAttr (linear_attention_cann.h).
    this->Attr("causal").AttrType(OPTIONAL).Bool(false);
    this->Attr("eps").AttrType(OPTIONAL).Float(1e-6f);
    this->Attr("input_layout").AttrType(OPTIONAL).String("BNSD");

    ms_ops::AddAiCoreConfig(*this, "linear_attention_grad");
  }
};

OP_ADD(LinearAttentionGradMsops);

}  // namespace ops
