// Shape and dtype inference of moe_finalize_routing_grad, shared by the CANN InferShape and the
// CPU entry's <Op>InferShape/<Op>InferType. Each gradient has the shape and dtype of the input it
// differentiates (an absent scales or bias is a placeholder, and so is its gradient), so unknown
// dims (-1) and an unknown rank ({-2}) pass through unchanged. Without expanded_x (allowed when
// scales are absent, as in CANN), grad_expanded_x's shape comes from the attributes, as CANN's
// MoeFinalizeRoutingV2Grad defines it, and its dtype is grad_y's.
#ifndef MS_OPS_MOE_FINALIZE_ROUTING_GRAD_INFER_H_
#define MS_OPS_MOE_FINALIZE_ROUTING_GRAD_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Input order: grad_y, expanded_row_idx, expanded_x, scales, expert_idx, bias.
// Output order: grad_expanded_x, grad_scales, grad_bias.
enum MoeFinalizeRoutingGradInput { kMfrgGradY, kMfrgRowIdx, kMfrgExpandedX, kMfrgScales, kMfrgExpertIdx, kMfrgBias };

constexpr int kMfrgOutputSource[3] = {kMfrgExpandedX, kMfrgScales, kMfrgBias};

struct MoeFinalizeRoutingGradAttrs {
  int64_t dropPadMode = 0;  // 0..3, the forward's modes; 1 and 3 are drop/pad
  int64_t activeNum = 0;
  int64_t expertNum = 0;
  int64_t expertCapacity = 0;
  bool hasExpandedX = true;
};

inline bool MoeFinalizeRoutingGradDropPad(int64_t mode) { return mode == 1 || mode == 3; }

// grad_expanded_x without expanded_x: [E, C, H] (drop/pad) or [A, H] (dropless), A = active_num
// when 0 < active_num < R*K, else R*K (the length of expanded_row_idx).
inline std::vector<int64_t> MoeFinalizeRoutingGradExpandedShape(const std::vector<int64_t> &gradY,
                                                                const std::vector<int64_t> &rowIdx,
                                                                const MoeFinalizeRoutingGradAttrs &a) {
  const int64_t hidden = gradY.size() == 2 ? gradY[1] : -1;
  if (MoeFinalizeRoutingGradDropPad(a.dropPadMode)) return {a.expertNum, a.expertCapacity, hidden};
  const int64_t pairs = rowIdx.size() == 1 ? rowIdx[0] : -1;
  if (pairs < 0) return {-1, hidden};
  return {(a.activeNum > 0 && a.activeNum < pairs) ? a.activeNum : pairs, hidden};
}

inline std::vector<std::vector<int64_t>> MoeFinalizeRoutingGradOutShapes(const std::vector<std::vector<int64_t>> &in,
                                                                         const MoeFinalizeRoutingGradAttrs &a) {
  const std::vector<int64_t> expanded =
      a.hasExpandedX ? in[kMfrgExpandedX] : MoeFinalizeRoutingGradExpandedShape(in[kMfrgGradY], in[kMfrgRowIdx], a);
  return {expanded, in[kMfrgOutputSource[1]], in[kMfrgOutputSource[2]]};
}

// An absent expanded_x is a placeholder of grad_y's dtype, so the first output can follow it.
template <typename DType>
inline std::vector<DType> MoeFinalizeRoutingGradOutTypes(const std::vector<DType> &in) {
  return {in[kMfrgOutputSource[0]], in[kMfrgOutputSource[1]], in[kMfrgOutputSource[2]]};
}

}  // namespace ms_ops

#endif  // MS_OPS_MOE_FINALIZE_ROUTING_GRAD_INFER_H_
