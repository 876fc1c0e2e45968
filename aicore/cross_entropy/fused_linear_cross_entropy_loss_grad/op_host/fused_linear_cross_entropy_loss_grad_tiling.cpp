// CANN registration of FusedLinearCrossEntropyLossGradMsops: TilingFunc, InferShape and
// InferDataType, thin wrappers over the pure functions the CPU entry also uses. Built only by the
// CANN toolchain. The three Matmul tilings come from the AscendC tiling API for the largest
// product of each kind; the kernel sets each step's (tail) shapes at run time.
#include <cstdio>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "fused_linear_cross_entropy_loss_grad_infer.h"
#include "fused_linear_cross_entropy_loss_grad_tiling.h"
#include "../../cross_entropy_cann_tiling.h"

namespace {

enum AttrIndex : size_t { kLabelSmoothing, kVocabSize, kHasSoftmax };

}  // namespace

namespace optiling {

struct FusedLinearCrossEntropyLossGradCompileInfo {};

static ge::graphStatus FusedLinearCrossEntropyLossGradTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const ms_ops::PlatformInfo plat = ms_ops::ReadPlatformInfo(ascendc);

  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::FusedLinearCrossEntropyLossGradProblem p;
  p.labelSmoothing = *attrs->GetAttrPointer<float>(kLabelSmoothing);
  p.vocabSize = *attrs->GetAttrPointer<int64_t>(kVocabSize);
  p.hasSoftmax = *attrs->GetAttrPointer<bool>(kHasSoftmax);
  const gert::Shape &input = context->GetInputShape(ms_ops::kFlcegInput)->GetStorageShape();
  const gert::Shape &weight = context->GetInputShape(ms_ops::kFlcegWeight)->GetStorageShape();
  p.rows = input.GetDim(0);
  p.hidden = input.GetDim(1);
  p.vocab = weight.GetDim(0);
  p.dataType = ms_ops::ToFloatEnum<ms_ops::CeFloat>(context->GetInputDesc(ms_ops::kFlcegInput)->GetDataType());
  p.int64Target = context->GetInputDesc(ms_ops::kFlcegMaskedTarget)->GetDataType() == ge::DT_INT64;

  ms_ops::FusedLinearCrossEntropyLossGradTiling t = ms_ops::ComputeFusedLinearCrossEntropyLossGradTiling(p, plat);
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops fused_linear_cross_entropy_loss_grad: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  FusedLinearCrossEntropyLossGradTilingData &d = t.data;
  const matmul_tiling::DataType in = ms_ops::CubeType(context->GetInputDesc(ms_ops::kFlcegInput)->GetDataType());
  if (!ms_ops::CubeTiling(ascendc, d.mmLogits, in, false, true, d.mmLogits) ||
      !ms_ops::CubeTiling(ascendc, d.mmWeight, in, true, false, d.mmWeight) ||
      !ms_ops::CubeTiling(ascendc, d.mmInput, in, false, false, d.mmInput)) {
    std::fprintf(stderr, "ms_ops fused_linear_cross_entropy_loss_grad: tiling: no Matmul tiling for the tile shapes\n");
    return ge::GRAPH_FAILED;
  }
  *context->GetTilingData<FusedLinearCrossEntropyLossGradTilingData>() = d;
  // An empty H still launches one block, which finds nothing to do.
  context->SetBlockDim(t.blockDim > 0 ? t.blockDim : 1);
  context->SetTilingKey(t.tilingKey);
  size_t *workspace = context->GetWorkspaceSizes(1);
  workspace[0] = ascendc.GetLibApiWorkSpaceSize() + t.workspaceBytes;
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus FusedLinearCrossEntropyLossGradTilingParse(gert::TilingParseContext *) {
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_OPTILING(FusedLinearCrossEntropyLossGradMsops)
    .Tiling(FusedLinearCrossEntropyLossGradTilingFunc)
    .TilingParse<FusedLinearCrossEntropyLossGradCompileInfo>(FusedLinearCrossEntropyLossGradTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus FusedLinearCrossEntropyLossGradInferShape(gert::InferShapeContext *context) {
  std::vector<std::vector<int64_t>> in;
  for (size_t i = 0; i < ms_ops::kFlcegNumInputs; ++i) in.push_back(ms_ops::Dims(*context->GetInputShape(i)));
  const std::vector<std::vector<int64_t>> out = ms_ops::FusedLinearCrossEntropyLossGradOutShapes(in);
  for (size_t o = 0; o < ms_ops::kFlcegNumOutputs; ++o) ms_ops::SetDims(context->GetOutputShape(o), out[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus FusedLinearCrossEntropyLossGradInferDataType(gert::InferDataTypeContext *context) {
  std::vector<ge::DataType> in;
  for (size_t i = 0; i < ms_ops::kFlcegNumInputs; ++i) in.push_back(context->GetInputDataType(i));
  const std::vector<ge::DataType> out = ms_ops::FusedLinearCrossEntropyLossGradOutTypes(in);
  for (size_t o = 0; o < ms_ops::kFlcegNumOutputs; ++o) context->SetOutputDataType(o, out[o]);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(FusedLinearCrossEntropyLossGradMsops)
    .InferShape(FusedLinearCrossEntropyLossGradInferShape)
    .InferDataType(FusedLinearCrossEntropyLossGradInferDataType);

}  // namespace ops
