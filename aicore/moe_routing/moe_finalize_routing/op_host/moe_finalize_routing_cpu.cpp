// MindSpore CPU entry of moe_finalize_routing: checks the arguments (shapes, dtypes and, since
// tensors are host memory here, the index values), tiles for Atlas A2 and runs the kernel on the
// twin. Inputs: expanded_x, expanded_row_idx, x1, x2, bias, scales, expert_idx; output: out.
// An absent optional input is a [1] placeholder whose has_* attribute is false; it is not read.
#include <cstdint>
#include <string>
#include <vector>

#include "host_entry.h"
#include "../../moe_finalize_routing_entry.h"
#include "moe_finalize_routing_infer.h"
#include "moe_finalize_routing_tiling.h"
#include "platform.h"
#include "twin_runtime.h"

extern "C" void moe_finalize_routing(uint8_t *expandedX, uint8_t *expandedRowIdx, uint8_t *x1, uint8_t *x2,
                                     uint8_t *bias, uint8_t *scales, uint8_t *expertIdx, uint8_t *out,
                                     uint8_t *workspace, uint8_t *tiling);

namespace {

using namespace ms_ops::moe_entry;
using namespace ms_ops;

constexpr int kNumInputs = 7;
const char *const kArgNames[] = {"expanded_x", "expanded_row_idx", "x1", "x2", "bias", "scales", "expert_idx", "out"};

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == kNumInputs + 1, "nparam", "expected 8 tensors (7 inputs, 1 output), got " + std::to_string(nparam));
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const int64_t mode = ReadDropPadMode(extra);
  const bool hasX1 = ReadAttr<bool>(extra, "has_x1"), hasX2 = ReadAttr<bool>(extra, "has_x2");
  const bool hasBias = ReadAttr<bool>(extra, "has_bias"), hasScales = ReadAttr<bool>(extra, "has_scales");
  Require(!hasX2 || hasX1, "x2", "given without x1 (has_x2 needs has_x1)");
  const std::vector<Arg> args = Args(nparam, params, ndims, shapes, dtypes, kArgNames);
  const Arg &ex = args[0], &idx = args[1], &x1 = args[2], &x2 = args[3], &bias = args[4], &scales = args[5],
            &expert = args[6], &out = args[7];

  RequireFloat(ex);
  const DType dt = ex.dtype;
  RequireDType(idx, DType::kI32, "int32");
  if (hasX1) RequireDType(x1, dt, ex.dtypeName);
  if (hasX2) RequireDType(x2, dt, ex.dtypeName);
  if (hasBias) {
    RequireDType(bias, dt, ex.dtypeName);
    RequireDType(expert, DType::kI32, "int32");
  }
  if (hasScales) RequireScalesDType(scales, ex);
  RequireDType(out, dt, ex.dtypeName);

  const auto [expandedRows, hidden] = ExpandedRowsAndHidden(ex, mode);
  Require(idx.shape.size() == 1, idx.name, "must be 1-D [R*K], got " + ShapeStr(idx.shape));
  int64_t rows = idx.shape[0], topK = 1;
  if (hasScales) {
    Require(scales.shape.size() == 2 && scales.shape[1] >= 1, scales.name,
            "must be [R, K] with K >= 1, got " + ShapeStr(scales.shape));
    rows = scales.shape[0];
    topK = scales.shape[1];
    Require(rows * topK == idx.shape[0], idx.name,
            "has " + std::to_string(idx.shape[0]) + " entries, expected R*K = " + std::to_string(rows * topK) +
                " (scales is " + ShapeStr(scales.shape) + ")");
  }
  if (hasX1) RequireShape(x1, {rows, hidden}, "[R, H]");
  if (hasX2) RequireShape(x2, {rows, hidden}, "[R, H]");
  const int64_t biasRows = hasBias ? CheckBias(bias, expert, rows, topK, hidden) : 0;
  RequireShape(out, {rows, hidden}, "[R, H]");
  CheckRouting(idx, hasBias ? &expert : nullptr, rows, topK, expandedRows, biasRows, mode);
  if (rows == 0 || hidden == 0) return 0;

  ms_ops::MoeFinalizeRoutingProblem prob;
  prob.rows = rows;
  prob.topK = topK;
  prob.hidden = hidden;
  prob.expandedRows = expandedRows;
  prob.biasRows = biasRows;
  prob.dropPadMode = mode;
  prob.hasX1 = hasX1;
  prob.hasX2 = hasX2;
  prob.hasBias = hasBias;
  prob.hasScales = hasScales;
  prob.dataType = ToFloatEnum<MoeFloat>(dt);
  prob.scalesType = ToFloatEnum<MoeFloat>(hasScales ? scales.dtype : dt);
  ms_ops::MoeFinalizeRoutingTiling t = ms_ops::ComputeMoeFinalizeRoutingTiling(prob, ms_ops::kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  return ms_ops::twin::Launch("moe_finalize_routing", t.blockDim, t.tilingKey, [&] {
    moe_finalize_routing(ex.data, idx.data, x1.data, x2.data, bias.data, scales.data, expert.data, out.data, nullptr,
                         reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int MoeFinalizeRouting(int nparam, void **params, int *ndims,
                                                                        int64_t **shapes, const char **dtypes,
                                                                        void *stream, void *extra) {
  return ms_ops::GuardedEntry("moe_finalize_routing", extra,
                              [&] { return Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<int64_t> MoeFinalizeRoutingInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  try {
    std::vector<std::vector<int64_t>> in;
    for (int i = 0; i < kNumInputs; ++i) in.emplace_back(shapes[i], shapes[i] + ndims[i]);
    return ms_ops::MoeFinalizeRoutingOutShape(in, extra->Attr<int64_t>("drop_pad_mode"), extra->Attr<bool>("has_x1"),
                                              extra->Attr<bool>("has_scales"));
  } catch (...) {
    return {-1, -1};
  }
}

extern "C" __attribute__((visibility("default"))) mindspore::TypeId MoeFinalizeRoutingInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::MoeFinalizeRoutingOutType(types);
}
