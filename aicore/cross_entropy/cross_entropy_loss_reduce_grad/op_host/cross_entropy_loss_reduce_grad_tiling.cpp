// CANN registration of CrossEntropyLossReduceGradMsops: TilingFunc, InferShape and InferDataType,
// thin wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "cross_entropy_loss_reduce_grad_infer.h"
#include "cross_entropy_loss_reduce_grad_tiling.h"

namespace {

enum AttrIndex : size_t { kIgnoreIndex, kReduction };

}  // namespace

namespace optiling {

struct CrossEntropyLossReduceGradCompileInfo {};

static ge::graphStatus CrossEntropyLossReduceGradTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::CrossEntropyLossReduceProblem p;
  p.rows = context->GetInputShape(ms_ops::kCelrgTarget)->GetStorageShape().GetDim(0);
  p.ignoreIndex = *attrs->GetAttrPointer<int64_t>(kIgnoreIndex);
  p.int64Target = context->GetInputDesc(ms_ops::kCelrgTarget)->GetDataType() == ge::DT_INT64;
  const char *reduction = attrs->GetStr(kReduction);
  if (reduction == nullptr || !ms_ops::ParseReduction(reduction, &p.reduction)) {
    std::fprintf(stderr, "ms_ops cross_entropy_loss_reduce_grad: reduction: must be 'mean', 'sum' or 'none'\n");
    return ge::GRAPH_FAILED;
  }
  const ms_ops::CrossEntropyLossReduceTiling t =
      ms_ops::ComputeCrossEntropyLossReduceTiling(p, ms_ops::ReadPlatformInfo(ascendc));
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops cross_entropy_loss_reduce_grad: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  return ms_ops::SetTiling(context, ascendc, t.data, t.blockDim, t.tilingKey);
}

static ge::graphStatus CrossEntropyLossReduceGradTilingParse(gert::TilingParseContext *) {
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_OPTILING(CrossEntropyLossReduceGradMsops)
    .Tiling(CrossEntropyLossReduceGradTilingFunc)
    .TilingParse<CrossEntropyLossReduceGradCompileInfo>(CrossEntropyLossReduceGradTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus CrossEntropyLossReduceGradInferShape(gert::InferShapeContext *context) {
  std::vector<std::vector<int64_t>> in;
  for (size_t i = 0; i < ms_ops::kCelrgNumInputs; ++i) in.push_back(ms_ops::Dims(*context->GetInputShape(i)));
  ms_ops::SetDims(context->GetOutputShape(0), ms_ops::CrossEntropyLossReduceGradOutShapes(in)[0]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus CrossEntropyLossReduceGradInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, ms_ops::CrossEntropyLossReduceGradOutTypes(ge::DT_FLOAT)[0]);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(CrossEntropyLossReduceGradMsops)
    .InferShape(CrossEntropyLossReduceGradInferShape)
    .InferDataType(CrossEntropyLossReduceGradInferDataType);

}  // namespace ops
