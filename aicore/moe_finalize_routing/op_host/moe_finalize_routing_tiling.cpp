// CANN registration of MoeFinalizeRoutingMsops: TilingFunc, InferShape and InferDataType, thin
// wrappers over the pure functions the CPU entry also uses. Built only by the CANN toolchain.
#include <cstdio>
#include <vector>

#include "moe_finalize_routing_infer.h"
#include "moe_finalize_routing_tiling.h"
#include "register/op_impl_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace {

enum Input : size_t { kExpandedX, kRowIdx, kX1, kX2, kBias, kScales, kExpertIdx };
enum AttrIndex : size_t { kDropPadMode, kHasX1, kHasX2, kHasBias, kHasScales };

// UB the AscendC runtime keeps for itself (256 B, plus 8 KiB unless built without the reservation).
constexpr uint64_t kReservedUb = 256 + 8 * 1024;

ms_ops::MoeFloat ToMoeFloat(ge::DataType d) {
  return d == ge::DT_FLOAT ? ms_ops::MoeFloat::kF32 : d == ge::DT_FLOAT16 ? ms_ops::MoeFloat::kF16
                                                                          : ms_ops::MoeFloat::kBF16;
}

std::vector<int64_t> Dims(const gert::Shape &s) {
  std::vector<int64_t> d(s.GetDimNum());
  for (size_t i = 0; i < d.size(); ++i) d[i] = s.GetDim(i);
  return d;
}

}  // namespace

namespace optiling {

struct MoeFinalizeRoutingCompileInfo {};

static ge::graphStatus MoeFinalizeRoutingTilingFunc(gert::TilingContext *context) {
  auto ascendc = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  uint64_t ubSize = 0, l1Size = 0;
  ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);
  ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1Size);
  const ms_ops::PlatformInfo plat{ascendc.GetCoreNumAiv(), ascendc.GetCoreNumAic(),
                                  static_cast<uint32_t>(ubSize - kReservedUb), static_cast<uint32_t>(l1Size)};

  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  ms_ops::MoeFinalizeRoutingProblem p;
  p.dropPadMode = *attrs->GetAttrPointer<int64_t>(kDropPadMode);
  p.hasX1 = *attrs->GetAttrPointer<bool>(kHasX1);
  p.hasX2 = *attrs->GetAttrPointer<bool>(kHasX2);
  p.hasBias = *attrs->GetAttrPointer<bool>(kHasBias);
  p.hasScales = *attrs->GetAttrPointer<bool>(kHasScales);
  const gert::Shape &ex = context->GetInputShape(kExpandedX)->GetStorageShape();
  p.hidden = ex.GetDim(ex.GetDimNum() - 1);
  p.expandedRows = ex.GetShapeSize() / (p.hidden > 0 ? p.hidden : 1);
  if (p.hasScales) {
    const gert::Shape &scales = context->GetInputShape(kScales)->GetStorageShape();
    p.rows = scales.GetDim(0);
    p.topK = scales.GetDim(1);
  } else {
    p.rows = context->GetInputShape(kRowIdx)->GetStorageShape().GetDim(0);
    p.topK = 1;
  }
  if (p.hasBias) p.biasRows = context->GetInputShape(kBias)->GetStorageShape().GetDim(0);
  p.dataType = ToMoeFloat(context->GetInputDesc(kExpandedX)->GetDataType());
  p.scalesType = ToMoeFloat(context->GetInputDesc(kScales)->GetDataType());

  ms_ops::MoeFinalizeRoutingTiling t = ms_ops::ComputeMoeFinalizeRoutingTiling(p, plat);
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops moe_finalize_routing: tiling: %s\n", t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  *context->GetTilingData<MoeFinalizeRoutingTilingData>() = t.data;
  // An empty output still launches one block, which finds no rows to combine.
  context->SetBlockDim(t.blockDim > 0 ? t.blockDim : 1);
  context->SetTilingKey(t.tilingKey);
  size_t *workspace = context->GetWorkspaceSizes(1);
  workspace[0] = ascendc.GetLibApiWorkSpaceSize();
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus MoeFinalizeRoutingTilingParse(gert::TilingParseContext *) { return ge::GRAPH_SUCCESS; }

IMPL_OP_OPTILING(MoeFinalizeRoutingMsops)
    .Tiling(MoeFinalizeRoutingTilingFunc)
    .TilingParse<MoeFinalizeRoutingCompileInfo>(MoeFinalizeRoutingTilingParse);

}  // namespace optiling

namespace ops {

static ge::graphStatus MoeFinalizeRoutingInferShape(gert::InferShapeContext *context) {
  std::vector<std::vector<int64_t>> in;
  for (size_t i = kExpandedX; i <= kExpertIdx; ++i) in.push_back(Dims(*context->GetInputShape(i)));
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const std::vector<int64_t> out = ms_ops::MoeFinalizeRoutingOutShape(
      in, *attrs->GetAttrPointer<int64_t>(kDropPadMode), *attrs->GetAttrPointer<bool>(kHasX1),
      *attrs->GetAttrPointer<bool>(kHasScales));
  gert::Shape *shape = context->GetOutputShape(0);
  shape->SetDimNum(out.size());
  for (size_t i = 0; i < out.size(); ++i) shape->SetDim(i, out[i]);
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus MoeFinalizeRoutingInferDataType(gert::InferDataTypeContext *context) {
  std::vector<ge::DataType> in;
  for (size_t i = kExpandedX; i <= kExpertIdx; ++i) in.push_back(context->GetInputDataType(i));
  context->SetOutputDataType(0, ms_ops::MoeFinalizeRoutingOutType(in));
  return ge::GRAPH_SUCCESS;
}

IMPL_OP_INFERSHAPE(MoeFinalizeRoutingMsops)
    .InferShape(MoeFinalizeRoutingInferShape)
    .InferDataType(MoeFinalizeRoutingInferDataType);

}  // namespace ops
