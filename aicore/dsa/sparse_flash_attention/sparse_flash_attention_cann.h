// The CANN registrations' common part for sparse_flash_attention and its gradient: the problem
// from the TilingContext, the Matmul tilings from CANN's tiling API, and the TilingFunc body.
// CANN-only: never compiled by the CPU build. The index values live on the device: the kernels
// skip entries outside a sequence's keys (the CPU entry rejects them, and repeats, beforehand).
#ifndef MS_OPS_SPARSE_FLASH_ATTENTION_CANN_H_
#define MS_OPS_SPARSE_FLASH_ATTENTION_CANN_H_

#include <cstdio>
#include <string>
#include <vector>

#include "cann_cube.h"
#include "cann_host.h"
#include "cann_platform.h"
#include "sparse_flash_attention_infer.h"
#include "sparse_flash_attention_tiling.h"

namespace ms_ops {

// Attribute order of both OpDefs.
enum SfaAttr : size_t {
  kSfaScale, kSfaBlockSize, kSfaLayout, kSfaSparseMode, kSfaLayoutKv, kSfaHasLengthsQ, kSfaHasLengthsKv,
  kSfaPreTokens, kSfaNextTokens
};

// ropeIn: the index of query_rope, followed by key_rope, the two lengths inputs and (forward
// only) block_table.
inline ge::graphStatus SfaTilingFunc(gert::TilingContext *context, const char *op, bool grad, size_t ropeIn) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const ge::DataType dtype = context->GetInputDesc(0)->GetDataType();
  SparseFlashAttentionProblem p;
  p.scale = *attrs->GetAttrPointer<float>(kSfaScale);
  p.blockSize = *attrs->GetAttrPointer<int64_t>(kSfaBlockSize);
  p.sparseMode = *attrs->GetAttrPointer<int64_t>(kSfaSparseMode);
  p.dataType = ToFloatEnum<SfaFloat>(dtype);
  p.preTokens = *attrs->GetAttrPointer<int64_t>(kSfaPreTokens);
  p.nextTokens = *attrs->GetAttrPointer<int64_t>(kSfaNextTokens);
  p.lengthsQ = *attrs->GetAttrPointer<bool>(kSfaHasLengthsQ);
  p.lengthsKv = *attrs->GetAttrPointer<bool>(kSfaHasLengthsKv);
  const char *layout = attrs->GetStr(kSfaLayout), *layoutKv = attrs->GetStr(kSfaLayoutKv);
  p.packed = layout != nullptr && std::string(layout) == "TND";
  p.paged = !grad && layoutKv != nullptr && std::string(layoutKv) == "PA_BSND";
  const auto q = Dims(context->GetInputShape(0)->GetStorageShape()), k = Dims(context->GetInputShape(1)->GetStorageShape());
  const auto v = Dims(context->GetInputShape(2)->GetStorageShape()), idx = Dims(context->GetInputShape(3)->GetStorageShape());
  const auto qRope = Dims(context->GetInputShape(ropeIn)->GetStorageShape());
  const size_t rank = p.packed ? 3 : 4;
  std::string error;
  if (q.size() != rank || k.size() != rank || v.size() != rank || idx.size() != rank) {
    error = "query, key, value and sparse_indices must match the layout";
  } else {
    p.batch = p.packed ? 0 : q[0];
    p.seq1 = q[rank - 3];
    p.seq2 = k[rank - 3];
    p.heads1 = q[rank - 2];
    p.heads2 = k[rank - 2];
    p.dim = q[rank - 1];
    p.vDim = v[rank - 1];
    p.topK = idx[rank - 1];
    p.ropeDim = qRope.size() > 1 ? qRope.back() : 0;
    if (p.packed) {
      p.cumQ = InputValues(context, ropeIn + 2);
      p.cumKv = InputValues(context, ropeIn + 3);
      p.batch = static_cast<int64_t>(p.cumQ.size());
      if (p.cumQ.empty() || p.cumQ.back() != p.seq1 || p.cumKv.size() != p.cumQ.size() || p.cumKv.back() != p.seq2)
        error = "the actual sequence lengths must be cumulative, ending at T1/T2";
    } else if (p.paged) {
      const auto table = Dims(context->GetInputShape(ropeIn + 4)->GetStorageShape());
      p.pageSize = k[1];
      p.maxPages = table.size() == 2 ? table[1] : 0;
      p.seq2 = p.pageSize * p.maxPages;
      p.keyRows = k[0] * k[1];
      if (p.maxPages < 1) error = "block_table must be [batch, max_blocks]";
    }
  }
  SparseFlashAttentionTiling t;
  if (error.empty()) {
    t = ComputeSparseFlashAttentionTiling(p, ReadPlatformInfo(ascendc), grad);
    error = t.error;
  }
  if (error.empty()) {
    SparseFlashAttentionTilingData &d = t.data;
    const int64_t rows = d.group, keys = d.nTile, wide = d.qkDim > d.vDim ? d.qkDim : d.vDim;
    // The key and value rows are gathered into UB, where the products read them; the backward's
    // key gradients go into UB, in rows of the padded pitch (SfaGradQPitch).
    const int64_t padded = static_cast<int64_t>(AlignUp(uint64_t(wide), 8));
    const auto gm = matmul_tiling::TPosition::GM, ub = matmul_tiling::TPosition::VECOUT;
    if (!ApiCubeTiling(ascendc, CubeType(dtype), false, true, rows, keys, wide, d.mmNT, gm, ub) ||
        !ApiCubeTiling(ascendc, CubeType(dtype), false, false, rows, wide, keys, d.mmNN, gm, ub) ||
        !ApiCubeTiling(ascendc, CubeType(dtype), true, false, keys, padded, rows, d.mmTN,
                       matmul_tiling::TPosition::VECIN))
      error = "the Matmul tiling API refused a tile";
  }
  if (!error.empty()) {
    std::fprintf(stderr, "ms_ops %s: tiling: %s\n", op, error.c_str());
    return ge::GRAPH_FAILED;
  }
  const ge::graphStatus status = SetTiling(context, ascendc, t.data, t.blockDim > 0 ? t.blockDim : 1, t.tilingKey);
  context->GetWorkspaceSizes(1)[0] += t.workspaceBytes;  // the blocks' tiles, after the library's part
  return status;
}

}  // namespace ms_ops

#endif  // MS_OPS_SPARSE_FLASH_ATTENTION_CANN_H_
