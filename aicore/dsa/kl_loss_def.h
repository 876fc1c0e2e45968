// The OpDef body both KL-loss ops share (CANN-only: never compiled by the CPU build): the sparse
// loss's inputs, outputs and attributes; the dense warm-up loss has no sparse_indices.
#ifndef MS_OPS_DSA_KL_LOSS_DEF_H_
#define MS_OPS_DSA_KL_LOSS_DEF_H_

#include "../cann/cann_op_def.h"

namespace ms_ops {

inline void AddKlLossDef(ops::OpDef &def, bool sparse, const char *kernelFile) {
  const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
  const std::vector<ge::DataType> i32(data.size(), ge::DT_INT32), i64(data.size(), ge::DT_INT64);
  const std::vector<ge::DataType> f32(data.size(), ge::DT_FLOAT);
  const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
  for (const char *in : {"query", "key", "query_index", "key_index", "weights"})
    def.Input(in).ParamType(ops::REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
  if (sparse) def.Input("sparse_indices").ParamType(ops::REQUIRED).DataType(i32).Format(nd).UnknownShapeFormat(nd);
  for (const char *in : {"softmax_max", "softmax_sum"})
    def.Input(in).ParamType(ops::REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
  for (const char *in : {"query_rope", "key_rope"})
    def.Input(in).ParamType(ops::REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
  for (const char *in : {"actual_seq_qlen", "actual_seq_klen"})
    def.Input(in).ParamType(ops::REQUIRED).DataType(i64).Format(nd).UnknownShapeFormat(nd);
  for (const char *out : {"d_query_index", "d_key_index", "d_weights"})
    def.Output(out).ParamType(ops::REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
  def.Output("loss").ParamType(ops::REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
  // Order: ms_ops::DsaKlAttr (dsa_cann.h).
  def.Attr("layout_query").AttrType(ops::OPTIONAL).String("BSND");
  def.Attr("layout_key").AttrType(ops::OPTIONAL).String("BSND");
  def.Attr("sparse_mode").AttrType(ops::OPTIONAL).Int(3);
  def.Attr("pre_tokens").AttrType(ops::OPTIONAL).Int(9223372036854775807LL);
  def.Attr("next_tokens").AttrType(ops::OPTIONAL).Int(9223372036854775807LL);
  def.Attr("has_lengths_query").AttrType(ops::OPTIONAL).Bool(false);
  def.Attr("has_lengths_key").AttrType(ops::OPTIONAL).Bool(false);
  def.Attr("scale_value").AttrType(ops::OPTIONAL).Float(1.0f);
  def.Attr("has_rope").AttrType(ops::OPTIONAL).Bool(false);
  AddAiCoreConfig(def, kernelFile);
}

}  // namespace ms_ops

#endif  // MS_OPS_DSA_KL_LOSS_DEF_H_
