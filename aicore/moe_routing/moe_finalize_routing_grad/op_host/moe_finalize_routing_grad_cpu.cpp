// MindSpore CPU entry of moe_finalize_routing_grad: checks the arguments (shapes, dtypes and, since
// tensors are host memory here, the index values), tiles for Atlas A2 and runs the kernel on the
// twin. Inputs: grad_y, expanded_row_idx, expanded_x, scales, expert_idx, bias; outputs:
// grad_expanded_x, grad_scales, grad_bias. An absent expanded_x/scales/bias is a [1] placeholder
// (has_* false) that is not read; the gradient of an absent scales/bias has the placeholder's
// shape and is all zeros, grad_expanded_x without expanded_x has the shape the attributes give.
#include <cstdint>
#include <string>
#include <vector>

#include "host_entry.h"
#include "../../moe_finalize_routing_entry.h"
#include "moe_finalize_routing_grad_infer.h"
#include "moe_finalize_routing_grad_tiling.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void moe_finalize_routing_grad(uint8_t *gradY, uint8_t *expandedRowIdx, uint8_t *expandedX,
                                          uint8_t *scales, uint8_t *expertIdx, uint8_t *bias, uint8_t *gradExpandedX,
                                          uint8_t *gradScales, uint8_t *gradBias, uint8_t *workspace,
                                          uint8_t *tiling);

namespace {

using namespace ms_ops::moe_entry;
using namespace ms_ops;

constexpr int kNumInputs = 6, kNumOutputs = 3;
const char *const kArgNames[] = {"grad_y", "expanded_row_idx", "expanded_x",  "scales",     "expert_idx",
                                 "bias",   "grad_expanded_x",  "grad_scales", "grad_bias"};

int64_t Numel(const Arg &a) { return ms_ops::Numel(static_cast<int>(a.shape.size()), a.shape.data()); }

MoeFinalizeRoutingGradAttrs ReadAttrs(mindspore::AotExtra *extra) {
  MoeFinalizeRoutingGradAttrs a;
  a.dropPadMode = ReadDropPadMode(extra);
  a.activeNum = ReadAttr<int64_t>(extra, "active_num");
  a.expertNum = ReadAttr<int64_t>(extra, "expert_num");
  a.expertCapacity = ReadAttr<int64_t>(extra, "expert_capacity");
  a.hasExpandedX = ReadAttr<bool>(extra, "has_expanded_x");
  Require(a.activeNum >= 0, "active_num", "must be >= 0, got " + std::to_string(a.activeNum));
  Require(a.expertNum >= 0, "expert_num", "must be >= 0, got " + std::to_string(a.expertNum));
  Require(a.expertCapacity >= 0, "expert_capacity", "must be >= 0, got " + std::to_string(a.expertCapacity));
  return a;
}

// The shape of grad_expanded_x: expanded_x's, which a non-zero active_num / expert_num /
// expert_capacity must agree with; without expanded_x the one the attributes give.
std::vector<int64_t> ExpandedShape(const Arg &ex, const Arg &gy, const Arg &idx, int64_t hidden, bool hasScales,
                                   const MoeFinalizeRoutingGradAttrs &a) {
  const bool dropPad = IsDropPad(a.dropPadMode);
  if (!a.hasExpandedX) {
    Require(!hasScales, ex.name, "is required with scales (grad_scales reads it)");
    if (dropPad) {
      Require(a.expertNum > 0, "expert_num", "must be > 0 without expanded_x in drop/pad mode");
      Require(a.expertCapacity > 0, "expert_capacity", "must be > 0 without expanded_x in drop/pad mode");
    }
    return MoeFinalizeRoutingGradExpandedShape(gy.shape, idx.shape, a);
  }
  const int64_t exHidden = ExpandedRowsAndHidden(ex, a.dropPadMode).second;
  Require(exHidden == hidden, ex.name,
          "must have H = " + std::to_string(hidden) + " (as grad_y) in its last dim, got " + ShapeStr(ex.shape));
  const std::vector<int64_t> fromAttrs = MoeFinalizeRoutingGradExpandedShape(gy.shape, idx.shape, a);
  if (dropPad) {
    Require(a.expertNum == 0 || ex.shape[0] == a.expertNum, ex.name,
            "has E = " + std::to_string(ex.shape[0]) + " experts but expert_num is " + std::to_string(a.expertNum));
    Require(a.expertCapacity == 0 || ex.shape[1] == a.expertCapacity, ex.name,
            "has C = " + std::to_string(ex.shape[1]) + " slots per expert but expert_capacity is " +
                std::to_string(a.expertCapacity));
  } else {
    Require(a.activeNum == 0 || ex.shape[0] == fromAttrs[0], ex.name,
            "has " + std::to_string(ex.shape[0]) + " rows but active_num " + std::to_string(a.activeNum) + " gives " +
                std::to_string(fromAttrs[0]));
  }
  return ex.shape;
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == kNumInputs + kNumOutputs, "nparam",
          "expected 9 tensors (6 inputs, 3 outputs), got " + std::to_string(nparam));
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const MoeFinalizeRoutingGradAttrs attrs = ReadAttrs(extra);
  const int64_t mode = attrs.dropPadMode;
  const bool hasBias = ReadAttr<bool>(extra, "has_bias"), hasScales = ReadAttr<bool>(extra, "has_scales");
  const std::vector<Arg> args = Args(nparam, params, ndims, shapes, dtypes, kArgNames);
  const Arg &gy = args[0], &idx = args[1], &ex = args[2], &scales = args[3], &expert = args[4], &bias = args[5],
            &gradX = args[6], &gradScales = args[7], &gradBias = args[8];

  RequireFloat(gy);
  const DType dt = gy.dtype;
  RequireDType(idx, DType::kI32, "int32");
  // Placeholders too: their dtypes fix the outputs' (and a zero gradient is written in it).
  RequireDType(ex, dt, gy.dtypeName);
  RequireScalesDType(scales, gy);
  RequireDType(bias, dt, gy.dtypeName);
  if (hasBias) RequireDType(expert, DType::kI32, "int32");
  RequireDType(gradX, dt, gy.dtypeName);
  RequireDType(gradScales, scales.dtype, scales.dtypeName);
  RequireDType(gradBias, dt, gy.dtypeName);

  Require(gy.shape.size() == 2, gy.name, "must be 2-D [R, H], got " + ShapeStr(gy.shape));
  const int64_t rows = gy.shape[0], hidden = gy.shape[1];
  Require(idx.shape.size() == 1, idx.name, "must be 1-D [R*K], got " + ShapeStr(idx.shape));
  int64_t topK = 1;
  if (hasScales) {
    Require(scales.shape.size() == 2 && scales.shape[0] == rows && scales.shape[1] >= 1, scales.name,
            "must be [R, K] with R = " + std::to_string(rows) + " and K >= 1, got " + ShapeStr(scales.shape));
    topK = scales.shape[1];
  }
  Require(idx.shape[0] == rows * topK, idx.name,
          "has " + std::to_string(idx.shape[0]) + " entries, expected R*K = " + std::to_string(rows * topK) +
              (hasScales ? " (scales is " + ShapeStr(scales.shape) + ")" : " (K = 1 without scales)"));
  const std::vector<int64_t> exShape = ExpandedShape(ex, gy, idx, hidden, hasScales, attrs);
  const int64_t expandedRows = IsDropPad(mode) ? exShape[0] * exShape[1] : exShape[0];
  const int64_t biasRows = hasBias ? CheckBias(bias, expert, rows, topK, hidden) : 0;
  RequireShape(gradX, exShape, attrs.hasExpandedX ? "the shape of expanded_x" : "from the attributes");
  RequireShape(gradScales, scales.shape, "the shape of scales");
  RequireShape(gradBias, bias.shape, "the shape of bias");
  CheckRouting(idx, hasBias ? &expert : nullptr, rows, topK, expandedRows, biasRows, mode);

  ms_ops::MoeFinalizeRoutingGradProblem prob;
  prob.rows = rows;
  prob.topK = topK;
  prob.hidden = hidden;
  prob.expandedRows = expandedRows;
  prob.biasRows = biasRows;
  prob.scalesNumel = Numel(scales);
  prob.biasNumel = Numel(bias);
  prob.dropPadMode = mode;
  prob.hasBias = hasBias;
  prob.hasScales = hasScales;
  prob.dataType = ToFloatEnum<MoeFloat>(dt);
  prob.scalesType = ToFloatEnum<MoeFloat>(scales.dtype);
  ms_ops::MoeFinalizeRoutingGradTiling t = ms_ops::ComputeMoeFinalizeRoutingGradTiling(prob, ms_ops::kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  const twin::Workspace workspace(t.workspaceBytes);
  // The kernel's SyncAll needs every block live at once.
  return twin::LaunchCooperative("moe_finalize_routing_grad", t.blockDim, t.tilingKey, [&] {
    moe_finalize_routing_grad(gy.data, idx.data, ex.data, scales.data, expert.data, bias.data, gradX.data,
                              gradScales.data, gradBias.data, workspace.data(), reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int MoeFinalizeRoutingGrad(int nparam, void **params, int *ndims,
                                                                            int64_t **shapes, const char **dtypes,
                                                                            void *stream, void *extra) {
  return ms_ops::GuardedEntry("moe_finalize_routing_grad", extra,
                              [&] { return Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> MoeFinalizeRoutingGradInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  std::vector<std::vector<int64_t>> in;
  for (int i = 0; i < kNumInputs; ++i) in.emplace_back(shapes[i], shapes[i] + ndims[i]);
  // Infer hooks never throw into MindSpore: unreadable attributes leave grad_expanded_x unknown,
  // and the kernel entry reports them.
  try {
    return ms_ops::MoeFinalizeRoutingGradOutShapes(in, ReadAttrs(extra));
  } catch (...) {
    return {{-2}, in[ms_ops::kMfrgScales], in[ms_ops::kMfrgBias]};
  }
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId> MoeFinalizeRoutingGradInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::MoeFinalizeRoutingGradOutTypes(types);
}
