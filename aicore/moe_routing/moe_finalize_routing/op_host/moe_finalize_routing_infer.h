// Shape and dtype inference of moe_finalize_routing, shared by the CANN InferShape and the CPU
// entry's <Op>InferShape/<Op>InferType. Shapes are dim vectors; -1 is an unknown dim and {-2} an
// unknown rank. Inference never fails: what it cannot know stays -1, and the kernel entry reports
// inconsistent shapes when the values arrive.
#ifndef MS_OPS_MOE_FINALIZE_ROUTING_INFER_H_
#define MS_OPS_MOE_FINALIZE_ROUTING_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Input order of the op: expanded_x, expanded_row_idx, x1, x2, bias, scales, expert_idx.
enum MoeFinalizeRoutingInput { kMfrExpandedX, kMfrRowIdx, kMfrX1, kMfrX2, kMfrBias, kMfrScales, kMfrExpertIdx };

// Dim `axis` of a shape whose rank must be `rank`; -1 when the rank is unknown or different.
inline int64_t MoeDim(const std::vector<int64_t> &shape, size_t rank, size_t axis) {
  if (shape.size() != rank) return -1;
  return shape[axis] < 0 ? -1 : shape[axis];
}

inline int64_t MoeFirstKnown(int64_t a, int64_t b) { return a >= 0 ? a : b; }

// out = [R, H]: R from scales (K columns) or, without scales, the length of expanded_row_idx
// (K = 1); H from expanded_x's last dim. x1 fills in what those leave unknown.
inline std::vector<int64_t> MoeFinalizeRoutingOutShape(const std::vector<std::vector<int64_t>> &in,
                                                       int64_t dropPadMode, bool hasX1, bool hasScales) {
  const size_t xRank = (dropPadMode == 1 || dropPadMode == 3) ? 3 : 2;
  int64_t rows = hasScales ? MoeDim(in[kMfrScales], 2, 0) : MoeDim(in[kMfrRowIdx], 1, 0);
  int64_t hidden = MoeDim(in[kMfrExpandedX], xRank, xRank - 1);
  if (hasX1) {
    rows = MoeFirstKnown(rows, MoeDim(in[kMfrX1], 2, 0));
    hidden = MoeFirstKnown(hidden, MoeDim(in[kMfrX1], 2, 1));
  }
  return {rows, hidden};
}

// out has the dtype of expanded_x.
template <typename DType>
inline DType MoeFinalizeRoutingOutType(const std::vector<DType> &in) {
  return in[kMfrExpandedX];
}

}  // namespace ms_ops

#endif  // MS_OPS_MOE_FINALIZE_ROUTING_INFER_H_
