// Shape and dtype inference of moe_init_routing, shared by the CANN InferShape and the MindSpore
// CPU infer hooks. Unknown dims are -1 and an unknown rank is [-2], as both frameworks use them.
// Outputs always have a known rank. Attribute errors are left to the tiling, which names them;
// here they only keep every dim non-negative.
#ifndef MS_OPS_MOE_INIT_ROUTING_INFER_H_
#define MS_OPS_MOE_INIT_ROUTING_INFER_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ms_ops {

struct MoeInitRoutingAttrs {
  int64_t activeNum = 0;
  int64_t expertCapacity = 0;
  int64_t expertNum = 0;
  int64_t dropPadMode = 0;
  int64_t countFlag = 0;  // expert_tokens_count_or_cumsum_flag
  bool beforeCapacityFlag = false;
};

// Rows of expanded_x in dropless mode: active_num truncates when 0 < active_num < R*K.
inline int64_t MoeInitRoutingActiveRows(int64_t flatCount, int64_t activeNum) {
  return (activeNum > 0 && activeNum < flatCount) ? activeNum : flatCount;
}

// Returns the shapes of expanded_x, expanded_row_idx, expert_tokens_count_or_cumsum and
// expert_tokens_before_capacity from x [R, H] and expert_idx [R, K].
inline std::vector<std::vector<int64_t>> InferMoeInitRoutingShapes(const std::vector<int64_t> &x,
                                                                   const std::vector<int64_t> &expertIdx,
                                                                   const MoeInitRoutingAttrs &a) {
  const bool xKnown = x.size() == 2, idxKnown = expertIdx.size() == 2;
  int64_t rows = xKnown ? x[0] : -1;
  if (rows < 0 && idxKnown) rows = expertIdx[0];
  const int64_t hidden = xKnown ? x[1] : -1;
  const int64_t topK = idxKnown ? expertIdx[1] : -1;
  const int64_t flat = (rows >= 0 && topK >= 0) ? rows * topK : -1;
  const int64_t experts = std::max<int64_t>(a.expertNum, 0);
  const bool dropPad = a.dropPadMode == 1;

  std::vector<int64_t> expandedX;
  if (dropPad)
    expandedX = {experts, std::max<int64_t>(a.expertCapacity, 0), hidden};
  else
    expandedX = {flat >= 0 ? MoeInitRoutingActiveRows(flat, a.activeNum) : -1, hidden};
  const bool counts = !dropPad && (a.countFlag == 1 || a.countFlag == 2);
  const bool beforeCapacity = dropPad && a.beforeCapacityFlag;
  return {expandedX, {flat}, {counts ? experts : 0}, {beforeCapacity ? experts : 0}};
}

// expanded_x keeps the dtype of x; the index and count outputs are int32.
template <class DT>
std::vector<DT> InferMoeInitRoutingTypes(DT x, DT int32) {
  return {x, int32, int32, int32};
}

}  // namespace ms_ops

#endif  // MS_OPS_MOE_INIT_ROUTING_INFER_H_
