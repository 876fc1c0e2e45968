// Shape and dtype inference of fused_linear_cross_entropy_grad_in_forward, shared by the CANN
// InferShape and the CPU entry's <Op>InferShape/<Op>InferType. Shapes are dim vectors; -1 is an
// unknown dim and {-2} an unknown rank. Inference never fails: what it cannot know stays -1, and
// the kernel entry reports inconsistent shapes when the values arrive.
#ifndef MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD_INFER_H_
#define MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Input order: input [N, H], weight [V, H], target [N]; output order: loss [N] float32,
// input_grad (input's shape and dtype), weight_grad (weight's).
enum FlceGradInForwardInput { kFlceGifInput, kFlceGifWeight, kFlceGifTarget, kFlceGifNumInputs };
enum FlceGradInForwardOutput { kFlceGifLoss, kFlceGifInputGrad, kFlceGifWeightGrad, kFlceGifNumOutputs };

// N from input's rows or, failing that, target's length.
inline std::vector<std::vector<int64_t>> FlceGradInForwardOutShapes(const std::vector<std::vector<int64_t>> &in) {
  const std::vector<int64_t> &x = in[kFlceGifInput], &target = in[kFlceGifTarget];
  int64_t rows = x.size() == 2 && x[0] >= 0 ? x[0] : -1;
  if (rows < 0 && target.size() == 1 && target[0] >= 0) rows = target[0];
  return {{rows}, x, in[kFlceGifWeight]};
}

template <typename DType>
inline std::vector<DType> FlceGradInForwardOutTypes(const std::vector<DType> &in, DType f32) {
  return {f32, in[kFlceGifInput], in[kFlceGifWeight]};
}

}  // namespace ms_ops

#endif  // MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD_INFER_H_
