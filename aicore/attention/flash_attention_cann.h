// The CANN registrations' common part for flash_attention_score and flash_attention_score_grad:
// the problem from the TilingContext, the three Matmul tilings from CANN's tiling API, and the
// TilingFunc body. CANN-only: never compiled by the CPU build.
#ifndef MS_OPS_FLASH_ATTENTION_CANN_H_
#define MS_OPS_FLASH_ATTENTION_CANN_H_

#include <cstdio>
#include <string>
#include <vector>

#include "cann_cube.h"
#include "cann_host.h"
#include "cann_platform.h"
#include "flash_attention_infer.h"

namespace ms_ops {

// Attribute order of both OpDefs.
enum FaAttr : size_t { kFaHeadNum, kFaScale, kFaPreTokens, kFaNextTokens, kFaLayout, kFaSparseMode, kFaPseType, kFaKeepProb };

// optBase: the index of real_shift, followed by attn_mask, prefix, actual_seq_qlen,
// actual_seq_kvlen, drop_mask and dropout_seed.
inline ge::graphStatus FaTilingFunc(gert::TilingContext *context, const char *op, bool grad, size_t optBase) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const PlatformInfo plat = ReadPlatformInfo(ascendc);
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const ge::DataType dtype = context->GetInputDesc(0)->GetDataType();
  FlashAttentionProblem p;
  const int64_t heads = *attrs->GetAttrPointer<int64_t>(kFaHeadNum);
  p.scale = *attrs->GetAttrPointer<float>(kFaScale);
  p.preTokens = *attrs->GetAttrPointer<int64_t>(kFaPreTokens);
  p.nextTokens = *attrs->GetAttrPointer<int64_t>(kFaNextTokens);
  p.sparseMode = *attrs->GetAttrPointer<int64_t>(kFaSparseMode);
  p.dataType = ToFloatEnum<FaFloat>(dtype);
  const char *layout = attrs->GetStr(kFaLayout);
  std::string error;
  if (layout == nullptr || !FaParseLayout(layout, p.layout)) {
    error = "input_layout must be BSH, SBH, BSND, BNSD or TND";
  } else {
    int64_t s2 = -1, d2 = -1;
    const bool packed = p.layout == FaLayout::kTND;
    FaDims(p.layout, Dims(context->GetInputShape(0)->GetStorageShape()), FaRank(p.layout) == 3 && !packed ? heads : 0,
           0, p.batch, p.seq1, p.heads1, p.dim);
    int64_t b2 = -1;
    FaDims(p.layout, Dims(context->GetInputShape(1)->GetStorageShape()), 0, p.dim, b2, s2, p.heads2, d2);
    p.seq2 = s2;
    if (p.heads1 != heads || d2 != p.dim || b2 != p.batch) error = "query/key shapes do not match head_num and layout";
    int64_t b3 = -1, s3 = -1, n3 = -1;
    FaDims(p.layout, Dims(context->GetInputShape(2)->GetStorageShape()), FaRank(p.layout) == 3 && !packed ? p.heads2 : 0,
           0, b3, s3, n3, p.dimV);
    if (b3 != b2 || s3 != s2 || n3 != p.heads2 || p.dimV < 1 || p.dimV > p.dim)
      error = "value must have key's batch, length and heads and a head dim 1..D";
    if (packed) {
      p.cumQ = InputValues(context, optBase + 3);
      p.cumKv = InputValues(context, optBase + 4);
      p.batch = static_cast<int64_t>(p.cumQ.size());
      if (p.cumQ.empty() || p.cumQ.back() != p.seq1 || p.cumKv.size() != p.cumQ.size() || p.cumKv.back() != s2)
        error = "actual_seq_qlen/actual_seq_kvlen must be cumulative lengths ending at T1/T2";
    }
    p.hasPrefix = p.sparseMode == 5 || p.sparseMode == 6;
    if (p.hasPrefix && int64_t(InputValues(context, optBase + 2).size()) != p.batch) error = "prefix needs one entry per batch";
    const std::vector<int64_t> mask = Dims(context->GetInputShape(optBase + 1)->GetStorageShape());
    const bool fullMask = p.sparseMode == 0 || p.sparseMode == 1 || p.sparseMode == 5;
    // TND: attn_mask and real_shift are per sequence, padded to the longest one.
    const int64_t t1 = p.seq1, t2 = p.seq2;
    if (packed) {
      p.seq1 = FaLongest(p.cumQ);
      p.seq2 = FaLongest(p.cumKv);
    }
    if (mask.size() != 1 && fullMask && !FaSetMask(p, mask)) error = "attn_mask shape does not fit sparse_mode";
    const std::string pseError = FaSetPse(p, Dims(context->GetInputShape(optBase)->GetStorageShape()),
                                          *attrs->GetAttrPointer<int64_t>(kFaPseType));
    if (!pseError.empty()) error = "real_shift " + pseError;
    p.seq1 = t1;
    p.seq2 = t2;
  }
  FlashAttentionTiling t;
  if (error.empty()) {
    t = ComputeFlashAttentionTiling(p, plat, grad);
    error = t.error;
    const std::string dropError = FaSetDropout(t.data, p, *attrs->GetAttrPointer<float>(kFaKeepProb),
                                               Dims(context->GetInputShape(optBase + 5)->GetStorageShape()));
    if (error.empty() && !dropError.empty()) error = dropError;
    FaSetValueDim(t.data, p);
  }
  if (error.empty() && t.blockDim > 0) {
    const int64_t m = t.data.mTile, n = t.data.nTile, d = t.data.dim;
    if (!ApiCubeTiling(ascendc, CubeType(dtype), false, true, m, n, d, t.data.mmNT) ||
        !ApiCubeTiling(ascendc, CubeType(dtype), false, false, m, d, n, t.data.mmNN) ||
        !ApiCubeTiling(ascendc, CubeType(dtype), true, false, n, d, m, t.data.mmTN))
      error = "the Matmul tiling API refused a tile";
  }
  if (!error.empty()) {
    std::fprintf(stderr, "ms_ops %s: tiling: %s\n", op, error.c_str());
    return ge::GRAPH_FAILED;
  }
  // An empty problem still launches one block, which finds no work item.
  const ge::graphStatus status = SetTiling(context, ascendc, t.data, t.blockDim > 0 ? t.blockDim : 1, t.tilingKey);
  context->GetWorkspaceSizes(1)[0] += t.workspaceBytes;  // tiles and sums (ComputeFlashAttentionTiling)
  return status;
}

}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_CANN_H_
