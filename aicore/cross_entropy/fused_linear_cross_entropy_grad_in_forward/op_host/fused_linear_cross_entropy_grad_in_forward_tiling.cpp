// CANN registration of FusedLinearCrossEntropyGradInForwardMsops: TilingFunc, InferShape and
// InferDataType, thin wrappers over the pure functions the CPU entry also uses. Built only by the
// CANN toolchain. Target values are device data and are not checked here (the CPU entry checks
// them); the three Matmul tilings come from the AscendC tiling API for the largest product of
// each kind, and the kernel sets each part's (tail) shapes at run time.
#include <cstdio>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "fused_linear_cross_entropy_grad_in_forward_infer.h"
#include "fused_linear_cross_entropy_grad_in_forward_tiling.h"
#include "../../cross_entropy_cann_tiling.h"

namespace {

enum AttrIndex : size_t { kIgnoreIndex, kLabelSmoothing, kBlockBytes };

}  // namespace

namespace optiling {

struct FusedLinearCrossEntropyGradInForwardCompileInfo {};

static ge::graphStatus FusedLinearCrossEntropyGradInForwardTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const ms_ops::PlatformInfo plat = ms_ops::ReadPlatformInfo(ascendc);

  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::FlceGradInForwardProblem p;
  p.ignoreIndex = *attrs->GetAttrPointer<int64_t>(kIgnoreIndex);
  p.labelSmoothing = *attrs->GetAttrPointer<float>(kLabelSmoothing);
  const int64_t blockBytes = *attrs->GetAttrPointer<int64_t>(kBlockBytes);
  if (blockBytes < 1) {
    std::fprintf(stderr, "ms_ops fused_linear_cross_entropy_grad_in_forward: block_bytes: must be >= 1\n");
    return ge::GRAPH_FAILED;
  }
  p.blockBytes = static_cast<uint64_t>(blockBytes);
  const gert::Shape &input = context->GetInputShape(ms_ops::kFlceGifInput)->GetStorageShape();
  p.rows = input.GetDim(0);
  p.hidden = input.GetDim(1);
  p.vocab = context->GetInputShape(ms_ops::kFlceGifWeight)->GetStorageShape().GetDim(0);
  p.dataType = ms_ops::ToFloatEnum<ms_ops::CeFloat>(context->GetInputDesc(ms_ops::kFlceGifInput)->GetDataType());
  p.int64Target = context->GetInputDesc(ms_ops::kFlceGifTarget)->GetDataType() == ge::DT_INT64;

  ms_ops::FlceGradInForwardTiling t = ms_ops::ComputeFlceGradInForwardTiling(p, plat);
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops fused_linear_cross_entropy_grad_in_forward: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  FusedLinearCrossEntropyGradInForwardTilingData &d = t.data;
  const matmul_tiling::DataType in = ms_ops::CubeType(context->GetInputDesc(ms_ops::kFlceGifInput)->GetDataType());
  if (!ms_ops::CubeTiling(ascendc, d.mmLogits, in, false, true, d.mmLogits) ||
      !ms_ops::CubeTiling(ascendc, d.mmWeight, in, true, false, d.mmWeight) ||
      !ms_ops::CubeTiling(ascendc, d.mmInput, in, false, false, d.mmInput)) {
    std::fprintf(stderr,
                 "ms_ops fused_linear_cross_entropy_grad_in_forward: tiling: no Matmul tiling for the part shapes\n");
    return ge::GRAPH_FAILED;
  }
  const ge::graphStatus status = ms_ops::SetTiling(context, ascendc, d, t.blockDim, t.tilingKey);
  context->GetWorkspaceSizes(1)[0] += t.workspaceBytes;  // logits, partials, accumulators after the library's part
  return status;
}

static ge::graphStatus FusedLinearCrossEntropyGradInForwardTilingParse(gert::TilingParseContext *) {
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_OPTILING(FusedLinearCrossEntropyGradInForwardMsops)
    .Tiling(FusedLinearCrossEntropyGradInForwardTilingFunc)
    .TilingParse<FusedLinearCrossEntropyGradInForwardCompileInfo>(FusedLinearCrossEntropyGradInForwardTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus FusedLinearCrossEntropyGradInForwardInferShape(gert::InferShapeContext *context) {
  std::vector<std::vector<int64_t>> in;
  for (size_t i = 0; i < ms_ops::kFlceGifNumInputs; ++i) in.push_back(ms_ops::Dims(*context->GetInputShape(i)));
  const std::vector<std::vector<int64_t>> out = ms_ops::FlceGradInForwardOutShapes(in);
  for (size_t o = 0; o < ms_ops::kFlceGifNumOutputs; ++o) ms_ops::SetDims(context->GetOutputShape(o), out[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus FusedLinearCrossEntropyGradInForwardInferDataType(gert::InferDataTypeContext *context) {
  std::vector<ge::DataType> in;
  for (size_t i = 0; i < ms_ops::kFlceGifNumInputs; ++i) in.push_back(context->GetInputDataType(i));
  const std::vector<ge::DataType> out = ms_ops::FlceGradInForwardOutTypes(in, ge::DT_FLOAT);
  for (size_t o = 0; o < ms_ops::kFlceGifNumOutputs; ++o) context->SetOutputDataType(o, out[o]);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(FusedLinearCrossEntropyGradInForwardMsops)
    .InferShape(FusedLinearCrossEntropyGradInForwardInferShape)
    .InferDataType(FusedLinearCrossEntropyGradInForwardInferDataType);

}  // namespace ops
