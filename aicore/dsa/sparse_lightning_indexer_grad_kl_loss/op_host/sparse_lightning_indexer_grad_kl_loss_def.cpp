// CANN OpDef of SparseLightningIndexerGradKlLossMsops (ms_ops sparse_lightning_indexer_grad_kl_loss).
// Built only by the CANN toolchain; tiling and inference are registered in
// sparse_lightning_indexer_grad_kl_loss_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class SparseLightningIndexerGradKlLossMsops : public OpDef {
 public:
  explicit SparseLightningIndexerGradKlLossMsops(const char *name) : OpDef(name) {
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> i32(data.size(), ge::DT_INT32), i64(data.size(), ge::DT_INT64);
    const std::vector<ge::DataType> f32(data.size(), ge::DT_FLOAT);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    for (const char *in : {"query", "key", "query_index", "key_index", "weights"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Input("sparse_indices").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"softmax_max", "softmax_sum"})
      this->Input(in).ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"query_rope", "key_rope"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"actual_seq_qlen", "actual_seq_klen"})
      this->Input(in).ParamType(REQUIRED).DataType(i64).Format(nd).UnknownShapeFormat(nd);
    for (const char *out : {"d_query_index", "d_key_index", "d_weights"})
      this->Output(out).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Output("loss").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    // Order: ms_ops::DsaKlAttr (dsa_cann.h).
    this->Attr("layout_query").AttrType(OPTIONAL).String("BSND");
    this->Attr("layout_key").AttrType(OPTIONAL).String("BSND");
    this->Attr("sparse_mode").AttrType(OPTIONAL).Int(3);
    this->Attr("pre_tokens").AttrType(OPTIONAL).Int(9223372036854775807LL);
    this->Attr("next_tokens").AttrType(OPTIONAL).Int(9223372036854775807LL);
    this->Attr("has_lengths_query").AttrType(OPTIONAL).Bool(false);
    this->Attr("has_lengths_key").AttrType(OPTIONAL).Bool(false);
    this->Attr("scale_value").AttrType(OPTIONAL).Float(1.0f);
    this->Attr("has_rope").AttrType(OPTIONAL).Bool(false);

    ms_ops::AddAiCoreConfig(*this, "sparse_lightning_indexer_grad_kl_loss");
  }
};

OP_ADD(SparseLightningIndexerGradKlLossMsops);

}  // namespace ops
