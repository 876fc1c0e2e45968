// Shape and dtype inference of moe_finalize_routing_grad, shared by the CANN InferShape and the
// CPU entry's <Op>InferShape/<Op>InferType. Each gradient has the shape and dtype of the input it
// differentiates (an absent scales or bias is a placeholder, and so is its gradient), so unknown
// dims (-1) and an unknown rank ({-2}) pass through unchanged.
#ifndef MS_OPS_MOE_FINALIZE_ROUTING_GRAD_INFER_H_
#define MS_OPS_MOE_FINALIZE_ROUTING_GRAD_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Input order: grad_y, expanded_row_idx, expanded_x, scales, expert_idx, bias.
// Output order: grad_expanded_x, grad_scales, grad_bias.
enum MoeFinalizeRoutingGradInput { kMfrgGradY, kMfrgRowIdx, kMfrgExpandedX, kMfrgScales, kMfrgExpertIdx, kMfrgBias };

constexpr int kMfrgOutputSource[3] = {kMfrgExpandedX, kMfrgScales, kMfrgBias};

inline std::vector<std::vector<int64_t>> MoeFinalizeRoutingGradOutShapes(const std::vector<std::vector<int64_t>> &in) {
  return {in[kMfrgOutputSource[0]], in[kMfrgOutputSource[1]], in[kMfrgOutputSource[2]]};
}

template <typename DType>
inline std::vector<DType> MoeFinalizeRoutingGradOutTypes(const std::vector<DType> &in) {
  return {in[kMfrgOutputSource[0]], in[kMfrgOutputSource[1]], in[kMfrgOutputSource[2]]};
}

}  // namespace ms_ops

#endif  // MS_OPS_MOE_FINALIZE_ROUTING_GRAD_INFER_H_
