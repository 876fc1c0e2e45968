// CANN registration of CrossEntropyLossReduceMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>
#include <string>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "cross_entropy_loss_reduce_infer.h"
#include "cross_entropy_loss_reduce_tiling.h"

namespace {

enum AttrIndex : size_t { kIgnoreIndex, kReduction };

// "mean" when the attribute is unreadable or unknown; the TilingFunc refuses the latter.
bool Reduction(const gert::RuntimeAttrs *attrs, ms_ops::CeReduction *out) {
  const char *name = attrs->GetStr(kReduction);
  *out = ms_ops::CeReduction::kMean;
  return name != nullptr && ms_ops::ParseReduction(name, out);
}

}  // namespace

namespace optiling {

struct CrossEntropyLossReduceCompileInfo {};

static ge::graphStatus CrossEntropyLossReduceTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::CrossEntropyLossReduceProblem p;
  p.rows = context->GetInputShape(ms_ops::kCelrLoss)->GetStorageShape().GetDim(0);
  p.ignoreIndex = *attrs->GetAttrPointer<int64_t>(kIgnoreIndex);
  p.int64Target = context->GetInputDesc(ms_ops::kCelrTarget)->GetDataType() == ge::DT_INT64;
  if (!Reduction(attrs, &p.reduction)) {
    std::fprintf(stderr, "ms_ops cross_entropy_loss_reduce: reduction: must be 'mean', 'sum' or 'none'\n");
    return ge::GRAPH_FAILED;
  }
  const ms_ops::CrossEntropyLossReduceTiling t =
      ms_ops::ComputeCrossEntropyLossReduceTiling(p, ms_ops::ReadPlatformInfo(ascendc));
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops cross_entropy_loss_reduce: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  return ms_ops::SetTiling(context, ascendc, t.data, t.blockDim, t.tilingKey);
}

static ge::graphStatus CrossEntropyLossReduceTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(CrossEntropyLossReduceMsops)
    .Tiling(CrossEntropyLossReduceTilingFunc)
    .TilingParse<CrossEntropyLossReduceCompileInfo>(CrossEntropyLossReduceTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus CrossEntropyLossReduceInferShape(gert::InferShapeContext *context) {
  std::vector<std::vector<int64_t>> in;
  for (size_t i = 0; i < ms_ops::kCelrNumInputs; ++i) in.push_back(ms_ops::Dims(*context->GetInputShape(i)));
  ms_ops::CeReduction reduction;
  Reduction(context->GetAttrs(), &reduction);
  const auto shapes = ms_ops::CrossEntropyLossReduceOutShapes(in, reduction);
  for (size_t o = 0; o < shapes.size(); ++o) ms_ops::SetDims(context->GetOutputShape(o), shapes[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus CrossEntropyLossReduceInferDataType(gert::InferDataTypeContext *context) {
  const auto types = ms_ops::CrossEntropyLossReduceOutTypes(ge::DT_FLOAT);
  for (size_t o = 0; o < types.size(); ++o) context->SetOutputDataType(o, types[o]);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(CrossEntropyLossReduceMsops)
    .InferShape(CrossEntropyLossReduceInferShape)
    .InferDataType(CrossEntropyLossReduceInferDataType);

}  // namespace ops
