// CANN OpDef of SparseFlashAttentionGradMsops (ms_ops sparse_flash_attention_grad). Built only by
// the CANN toolchain; tiling and inference are registered in sparse_flash_attention_grad_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class SparseFlashAttentionGradMsops : public OpDef {
 public:
  explicit SparseFlashAttentionGradMsops(const char *name) : OpDef(name) {
    // One column per float type (ms_ops/kernels/sparse_flash_attention.py's rows).
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> f32(3, ge::DT_FLOAT), i32(3, ge::DT_INT32), i64(3, ge::DT_INT64);
    const std::vector<ge::Format> nd(3, ge::FORMAT_ND);
    for (const char *in : {"query", "key", "value"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("sparse_indices").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"d_out", "attention_out"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"softmax_max", "softmax_sum"})
      this->Input(in).ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"query_rope", "key_rope"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"actual_seq_lengths_query", "actual_seq_lengths_kv"})
      this->Input(in).ParamType(REQUIRED).ValueDepend(REQUIRED).DataType(i64).Format(nd).UnknownShapeFormat(nd);
    for (const char *out : {"d_query", "d_key", "d_value", "d_query_rope", "d_key_rope"})
      this->Output(out).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    // Order: ms_ops::SfaAttr (sparse_flash_attention_cann.h).
    this->Attr("scale_value").AttrType(REQUIRED).Float();
    this->Attr("sparse_block_size").AttrType(OPTIONAL).Int(1);
    this->Attr("layout").AttrType(OPTIONAL).String("BSND");
    this->Attr("sparse_mode").AttrType(OPTIONAL).Int(3);
    this->Attr("layout_kv").AttrType(OPTIONAL).String("BSND");
    this->Attr("has_lengths_query").AttrType(OPTIONAL).Bool(false);
    this->Attr("has_lengths_kv").AttrType(OPTIONAL).Bool(false);
    this->Attr("pre_tokens").AttrType(OPTIONAL).Int(9223372036854775807LL);
    this->Attr("next_tokens").AttrType(OPTIONAL).Int(9223372036854775807LL);

    ms_ops::AddAiCoreConfig(*this, "sparse_flash_attention_grad");
  }
};

OP_ADD(SparseFlashAttentionGradMsops);

}  // namespace ops
