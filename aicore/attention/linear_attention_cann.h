// The CANN registrations' common part for linear_attention and linear_attention_grad: the problem
// from the TilingContext, the three fp32 Matmul tilings from CANN's tiling API, and the TilingFunc
// body. CANN-only: never compiled by the CPU build.
#ifndef MS_OPS_LINEAR_ATTENTION_CANN_H_
#define MS_OPS_LINEAR_ATTENTION_CANN_H_

#include <cstdio>
#include <string>

#include "cann_cube.h"
#include "cann_host.h"
#include "cann_platform.h"
#include "linear_attention_infer.h"

namespace ms_ops {

// Attribute order of both OpDefs.
enum LaAttr : size_t { kLaCausal, kLaEps, kLaLayout };

inline ge::graphStatus LaTilingFunc(gert::TilingContext *context, const char *op) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const PlatformInfo plat = ReadPlatformInfo(ascendc);
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  LinearAttentionProblem p;
  p.causal = *attrs->GetAttrPointer<bool>(kLaCausal);
  p.eps = *attrs->GetAttrPointer<float>(kLaEps);
  p.dataType = ToFloatEnum<LaFloat>(context->GetInputDesc(0)->GetDataType());
  const char *layout = attrs->GetStr(kLaLayout);
  std::string error;
  if (layout == nullptr || !LaParseLayout(layout, p.layout)) {
    error = "input_layout must be BNSD or BSND";
  } else {
    int64_t bv, nv, sv;
    LaDims(p.layout, Dims(context->GetInputShape(0)->GetStorageShape()), p.batch, p.heads, p.seq, p.dim);
    LaDims(p.layout, Dims(context->GetInputShape(2)->GetStorageShape()), bv, nv, sv, p.vdim);
    if (bv != p.batch || nv != p.heads || sv != p.seq) error = "value does not match query's batch, heads and length";
  }
  LinearAttentionTiling t;
  if (error.empty()) {
    t = ComputeLinearAttentionTiling(p, plat);
    error = t.error;
  }
  if (error.empty() && t.blockDim > 0) {
    LinearAttentionTilingData &d = t.data;
    const int64_t c = d.chunk, dim = d.dim, ve = d.vdimExt, wide = dim > ve ? dim : ve;
    const int64_t big = wide > c ? wide : c;
    if (!ApiCubeTiling(ascendc, matmul_tiling::DataType::DT_FLOAT, false, true, c, big, wide, d.mmNT) ||
        !ApiCubeTiling(ascendc, matmul_tiling::DataType::DT_FLOAT, false, false, big, wide, big, d.mmNN) ||
        !ApiCubeTiling(ascendc, matmul_tiling::DataType::DT_FLOAT, true, false, big, wide, c, d.mmTN))
      error = "the Matmul tiling API refused a tile";
  }
  if (!error.empty()) {
    std::fprintf(stderr, "ms_ops %s: tiling: %s\n", op, error.c_str());
    return ge::GRAPH_FAILED;
  }
  // An empty problem still launches one block, which finds no work item.
  const ge::graphStatus status = SetTiling(context, ascendc, t.data, t.blockDim > 0 ? t.blockDim : 1, t.tilingKey);
  context->GetWorkspaceSizes(1)[0] += t.workspaceBytes;  // the blocks' workspaces, after the library's part
  return status;
}

}  // namespace ms_ops

#endif  // MS_OPS_LINEAR_ATTENTION_CANN_H_
