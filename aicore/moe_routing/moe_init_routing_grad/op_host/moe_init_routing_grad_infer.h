// Shape and dtype inference of moe_init_routing_grad, shared by the CANN InferShape and the
// MindSpore CPU infer hooks: grad_x is [R, H] with R = len(expanded_row_idx) / top_k and H the
// last dim of grad_expanded_x ([A, H] dropless, [E, C, H] drop/pad). Unknown dims are -1, an
// unknown rank is [-2]; the output rank is always known.
#ifndef MS_OPS_MOE_INIT_ROUTING_GRAD_INFER_H_
#define MS_OPS_MOE_INIT_ROUTING_GRAD_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

inline std::vector<int64_t> InferMoeInitRoutingGradShape(const std::vector<int64_t> &gradExpandedX,
                                                         const std::vector<int64_t> &expandedRowIdx,
                                                         int64_t topK) {
  const bool gradKnown = gradExpandedX.size() == 2 || gradExpandedX.size() == 3;
  const int64_t hidden = gradKnown ? gradExpandedX.back() : -1;
  const int64_t flat = expandedRowIdx.size() == 1 ? expandedRowIdx[0] : -1;
  const int64_t rows = (flat >= 0 && topK >= 1) ? flat / topK : -1;
  return {rows, hidden};
}

// grad_x has the dtype of grad_expanded_x.
template <class DT>
DT InferMoeInitRoutingGradType(DT gradExpandedX) {
  return gradExpandedX;
}

}  // namespace ms_ops

#endif  // MS_OPS_MOE_INIT_ROUTING_GRAD_INFER_H_
