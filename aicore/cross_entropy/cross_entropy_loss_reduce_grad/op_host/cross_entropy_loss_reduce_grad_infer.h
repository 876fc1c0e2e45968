// Shape and dtype inference of cross_entropy_loss_reduce_grad, shared by the CANN InferShape and
// the CPU entry's <Op>InferShape/<Op>InferType: the gradient of loss has target's shape ([N],
// unknown dims and rank passing through) and is float32.
#ifndef MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_GRAD_INFER_H_
#define MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_GRAD_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Inputs: dout ([N] for "none", else [1]), target [N], count ([1], the forward's); output: grad.
enum CrossEntropyLossReduceGradInput { kCelrgDout, kCelrgTarget, kCelrgCount, kCelrgNumInputs };
constexpr int kCelrgNumOutputs = 1;

inline std::vector<std::vector<int64_t>> CrossEntropyLossReduceGradOutShapes(
    const std::vector<std::vector<int64_t>> &in) {
  return {in[kCelrgTarget]};
}

template <typename DType>
inline std::vector<DType> CrossEntropyLossReduceGradOutTypes(DType f32) {
  return {f32};
}

}  // namespace ms_ops

#endif  // MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_GRAD_INFER_H_
