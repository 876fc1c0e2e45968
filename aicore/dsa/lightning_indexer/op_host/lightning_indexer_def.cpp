// CANN OpDef of LightningIndexerMsops (ms_ops lightning_indexer). Built only by the CANN toolchain;
// tiling and inference are registered in lightning_indexer_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class LightningIndexerMsops : public OpDef {
 public:
  explicit LightningIndexerMsops(const char *name) : OpDef(name) {
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> i32(data.size(), ge::DT_INT32), i64(data.size(), ge::DT_INT64);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    for (const char *in : {"query", "key", "weights"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"actual_seq_lengths_query", "actual_seq_lengths_key"})
      this->Input(in).ParamType(REQUIRED).DataType(i64).Format(nd).UnknownShapeFormat(nd);
    this->Input("block_table").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    this->Output("sparse_indices").ParamType(REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
    this->Output("sparse_values").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    // Order: ms_ops::DsaAttr (dsa_cann.h).
    this->Attr("layout_query").AttrType(OPTIONAL).String("BSND");
    this->Attr("layout_key").AttrType(OPTIONAL).String("BSND");
    this->Attr("sparse_count").AttrType(OPTIONAL).Int(2048);
    this->Attr("sparse_mode").AttrType(OPTIONAL).Int(3);
    this->Attr("pre_tokens").AttrType(OPTIONAL).Int(9223372036854775807LL);
    this->Attr("next_tokens").AttrType(OPTIONAL).Int(9223372036854775807LL);
    this->Attr("has_lengths_query").AttrType(OPTIONAL).Bool(false);
    this->Attr("has_lengths_key").AttrType(OPTIONAL).Bool(false);

    ms_ops::AddAiCoreConfig(*this, "lightning_indexer");
  }
};

OP_ADD(LightningIndexerMsops);

}  // namespace ops
