// CANN OpDef of FlashAttentionScoreGradMsops (ms_ops flash_attention_score_grad: dq, dk, dv of
// flash_attention_score). Built only by the CANN toolchain; tiling and inference
// are registered in flash_attention_score_grad_tiling.cpp.
#include "../../../cann/cann_op_def.h"

namespace ops {

class FlashAttentionScoreGradMsops : public OpDef {
 public:
  explicit FlashAttentionScoreGradMsops(const char *name) : OpDef(name) {
    // One column per supported combination: each float type with real_shift of that type or
    // float32 (slopes), and a uint8 or a bool attn_mask (ms_ops/kernels/attention.py's rows).
    const std::vector<ge::DataType> data = {ge::DT_FLOAT,   ge::DT_FLOAT,   ge::DT_FLOAT16, ge::DT_FLOAT16, ge::DT_FLOAT16,
                                            ge::DT_FLOAT16, ge::DT_BF16,    ge::DT_BF16,    ge::DT_BF16,    ge::DT_BF16};
    const std::vector<ge::DataType> pse = {ge::DT_FLOAT,   ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_FLOAT16, ge::DT_FLOAT,
                                           ge::DT_FLOAT,   ge::DT_BF16,  ge::DT_BF16,    ge::DT_FLOAT,   ge::DT_FLOAT};
    const std::vector<ge::DataType> masks = {ge::DT_UINT8, ge::DT_BOOL, ge::DT_UINT8, ge::DT_BOOL, ge::DT_UINT8,
                                             ge::DT_BOOL,  ge::DT_UINT8, ge::DT_BOOL, ge::DT_UINT8, ge::DT_BOOL};
    const std::vector<ge::DataType> f32(data.size(), ge::DT_FLOAT), i64(data.size(), ge::DT_INT64);
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    for (const char *in : {"query", "key", "value", "dy"})
      this->Input(in).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    // Always present ([1] placeholders when unused, as the Python wrapper passes them); prefix
    // and the cumulative lengths are read by the TilingFunc too.
    this->Input("real_shift").ParamType(REQUIRED).DataType(pse).Format(nd).UnknownShapeFormat(nd);
    this->Input("attn_mask").ParamType(REQUIRED).DataType(masks).Format(nd).UnknownShapeFormat(nd);
    for (const char *in : {"prefix", "actual_seq_qlen", "actual_seq_kvlen"})
      this->Input(in).ParamType(REQUIRED).ValueDepend(REQUIRED).DataType(i64).Format(nd).UnknownShapeFormat(nd);
    // keep_prob < 1: drop_mask's bits, or with its [1] placeholder bits drawn from dropout_seed
    // ([2]: seed, offset; read by the kernel).
    const std::vector<ge::DataType> u8(data.size(), ge::DT_UINT8);
    this->Input("drop_mask").ParamType(REQUIRED).DataType(u8).Format(nd).UnknownShapeFormat(nd);
    this->Input("dropout_seed").ParamType(REQUIRED).DataType(i64).Format(nd).UnknownShapeFormat(nd);
    this->Input("softmax_max").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Input("softmax_sum").ParamType(REQUIRED).DataType(f32).Format(nd).UnknownShapeFormat(nd);
    this->Input("attention_in").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    for (const char *out : {"dq", "dk", "dv"})
      this->Output(out).ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Output("dpse").ParamType(REQUIRED).DataType(pse).Format(nd).UnknownShapeFormat(nd);
    // Order: ms_ops::FaAttr (flash_attention_cann.h).
    this->Attr("head_num").AttrType(REQUIRED).Int();
    this->Attr("scale_value").AttrType(OPTIONAL).Float(1.0f);
    this->Attr("pre_tokens").AttrType(OPTIONAL).Int(2147483647);
    this->Attr("next_tokens").AttrType(OPTIONAL).Int(2147483647);
    this->Attr("input_layout").AttrType(OPTIONAL).String("BSH");
    this->Attr("sparse_mode").AttrType(OPTIONAL).Int(0);
    this->Attr("pse_type").AttrType(OPTIONAL).Int(1);
    this->Attr("keep_prob").AttrType(OPTIONAL).Float(1.0f);

    ms_ops::AddAiCoreConfig(*this, "flash_attention_score_grad");
  }
};

OP_ADD(FlashAttentionScoreGradMsops);

}  // namespace ops
