// CANN registration of FusedLinearOnlineMaxSumMsops: TilingFunc, InferShape and InferDataType,
// thin wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
// Target values are not checked here (they are device data); a target outside the shard is simply
// masked by the kernel.
#include <cstdio>
#include <vector>

#include "cann_cube.h"
#include "cann_host.h"
#include "cann_platform.h"
#include "../../cross_entropy_common.h"
#include "fused_linear_online_max_sum_infer.h"
#include "fused_linear_online_max_sum_tiling.h"

namespace {

enum Input : size_t { kInput, kWeight, kTarget };
enum AttrIndex : size_t { kVocabStart, kVocabEnd, kReturnLogits, kVocabSize, kIgnoreIndex };

}  // namespace

namespace optiling {

struct FusedLinearOnlineMaxSumCompileInfo {};

// The cube's tiling of one logits tile, from CANN's Matmul tiling API for this SoC (the pure
// tiling's TCubeTiling carries the same shapes, which is all the twin's Matmul reads).
static bool FillCubeTiling(const platform_ascendc::PlatformAscendC &ascendc, ge::DataType dtype,
                           FusedLinearOnlineMaxSumTilingData &d) {
  return ms_ops::ApiCubeTiling(ascendc, ms_ops::CubeType(dtype), false, true, d.mTile, d.nTile, d.hidden, d.rows,
                               d.returnLogits != 0 ? d.vocab : d.nTile, d.hidden, d.mm);
}

static ge::graphStatus FusedLinearOnlineMaxSumTilingFunc(gert::TilingContext *context) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const ms_ops::PlatformInfo plat = ms_ops::ReadPlatformInfo(ascendc);
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const gert::Shape &input = context->GetInputShape(kInput)->GetStorageShape();
  const ge::DataType dtype = context->GetInputDesc(kInput)->GetDataType();

  ms_ops::FusedLinearOnlineMaxSumProblem p;
  p.rows = input.GetDim(0);
  p.hidden = input.GetDim(1);
  p.vocab = context->GetInputShape(kWeight)->GetStorageShape().GetDim(0);
  p.vocabStart = *attrs->GetAttrPointer<int64_t>(kVocabStart);
  p.returnLogits = *attrs->GetAttrPointer<bool>(kReturnLogits);
  p.dataType = ms_ops::ToFloatEnum<ms_ops::CeFloat>(dtype);
  p.int64Target = context->GetInputDesc(kTarget)->GetDataType() == ge::DT_INT64;
  p.vocabEnd = *attrs->GetAttrPointer<int64_t>(kVocabEnd);
  if (p.vocabEnd > *attrs->GetAttrPointer<int64_t>(kVocabSize)) {
    std::fprintf(stderr, "ms_ops fused_linear_online_max_sum: vocab_size: must be >= vocab_end_index\n");
    return ge::GRAPH_FAILED;
  }

  ms_ops::FusedLinearOnlineMaxSumTiling t = ms_ops::ComputeFusedLinearOnlineMaxSumTiling(p, plat);
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops fused_linear_online_max_sum: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  if (t.blockDim > 0 && !FillCubeTiling(ascendc, dtype, t.data)) {
    std::fprintf(stderr, "ms_ops fused_linear_online_max_sum: tiling: the Matmul tiling API refused the tile\n");
    return ge::GRAPH_FAILED;
  }
  // An empty BT still launches one block, which finds no rows.
  const ge::graphStatus status = ms_ops::SetTiling(context, ascendc, t.data, t.blockDim > 0 ? t.blockDim : 1,
                                                   t.tilingKey);
  // The blocks' logits tiles and partial statistics, after the library's part.
  context->GetWorkspaceSizes(1)[0] += t.workspaceBytes;
  return status;
}

static ge::graphStatus FusedLinearOnlineMaxSumTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(FusedLinearOnlineMaxSumMsops)
    .Tiling(FusedLinearOnlineMaxSumTilingFunc)
    .TilingParse<FusedLinearOnlineMaxSumCompileInfo>(FusedLinearOnlineMaxSumTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus FusedLinearOnlineMaxSumInferShape(gert::InferShapeContext *context) {
  std::vector<std::vector<int64_t>> in;
  for (size_t i = kInput; i <= kTarget; ++i) in.push_back(ms_ops::Dims(*context->GetInputShape(i)));
  const auto shapes =
      ms_ops::FusedLinearOnlineMaxSumOutShapes(in, *context->GetAttrs()->GetAttrPointer<bool>(kReturnLogits));
  for (size_t o = 0; o < shapes.size(); ++o) ms_ops::SetDims(context->GetOutputShape(o), shapes[o]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus FusedLinearOnlineMaxSumInferDataType(gert::InferDataTypeContext *context) {
  std::vector<ge::DataType> in;
  for (size_t i = kInput; i <= kTarget; ++i) in.push_back(context->GetInputDataType(i));
  const auto types = ms_ops::FusedLinearOnlineMaxSumOutTypes(in, ge::DT_FLOAT, ge::DT_UINT8);
  for (size_t o = 0; o < types.size(); ++o) context->SetOutputDataType(o, types[o]);
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(FusedLinearOnlineMaxSumMsops)
    .InferShape(FusedLinearOnlineMaxSumInferShape)
    .InferDataType(FusedLinearOnlineMaxSumInferDataType);

}  // namespace ops
