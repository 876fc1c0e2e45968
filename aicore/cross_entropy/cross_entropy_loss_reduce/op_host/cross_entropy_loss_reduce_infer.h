// Shape and dtype inference of cross_entropy_loss_reduce, shared by the CANN InferShape and the CPU
// entry's <Op>InferShape/<Op>InferType. Inference never fails: an unknown N stays -1.
#ifndef MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_INFER_H_
#define MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_INFER_H_

#include <cstdint>
#include <vector>

#include "../../cross_entropy_common.h"

namespace ms_ops {

// Inputs: loss [N] float32, target [N]; outputs: out ([N] for "none", else [1]), count ([1]: the
// tokens that count). The single values are [1], not 0-d: MindSpore's GRAPH mode takes a 0-d
// shape from a C++ infer hook for a Python scalar, not a tensor.
enum CrossEntropyLossReduceInput { kCelrLoss, kCelrTarget, kCelrNumInputs };
enum CrossEntropyLossReduceOutput { kCelrOut, kCelrCount, kCelrNumOutputs };

inline std::vector<std::vector<int64_t>> CrossEntropyLossReduceOutShapes(const std::vector<std::vector<int64_t>> &in,
                                                                         CeReduction reduction) {
  if (reduction != CeReduction::kNone) return {{1}, {1}};
  const std::vector<int64_t> &loss = in[kCelrLoss];
  return {{loss.size() == 1 && loss[0] >= 0 ? loss[0] : -1}, {1}};
}

template <typename DType>
inline std::vector<DType> CrossEntropyLossReduceOutTypes(DType f32) {
  return {f32, f32};
}

}  // namespace ms_ops

#endif  // MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_INFER_H_
