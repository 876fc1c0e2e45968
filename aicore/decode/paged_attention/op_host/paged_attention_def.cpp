// CANN OpDef of PagedAttentionMsops (ms_ops paged_attention). Built only by the CANN toolchain;
// tiling and inference are registered in paged_attention_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class PagedAttentionMsops : public OpDef {
 public:
  explicit PagedAttentionMsops(const char *name) : OpDef(name) {
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> i32(data.size(), ge::DT_INT32);
    const std::vector<ge::DataType> f32(data.size(), ge::DT_FLOAT);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    for (const char *in : {"query", "key_cache", "value_cache"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"block_tables", "context_lens", "q_seq_lens"})
      this->Input(in).ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    this->Input("alibi_slopes").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Output("attention_out").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    // Order: the enum in paged_attention_tiling.cpp.
    this->Attr("head_num").AttrType(OPTIONAL).Int(1);
    this->Attr("scale_value").AttrType(OPTIONAL).Float(1.0f);
    this->Attr("kv_head_num").AttrType(OPTIONAL).Int(1);
    this->Attr("has_q_seq_lens").AttrType(OPTIONAL).Bool(false);
    this->Attr("has_alibi").AttrType(OPTIONAL).Bool(false);

    ms_ops::AddAiCoreConfig(*this, "paged_attention");
  }
};

OP_ADD(PagedAttentionMsops);

}  // namespace ops
