// Shape and dtype inference of fused_linear_cross_entropy_loss_grad, shared by the CANN InferShape
// and the CPU entry's <Op>InferShape/<Op>InferType. Each gradient has the shape and dtype of the
// tensor it differentiates, so unknown dims (-1) and an unknown rank ({-2}) pass through unchanged.
#ifndef MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD_INFER_H_
#define MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Input order: grad, input, weight, target_mask, masked_target, logits_max, sum_exp_logits, softmax.
// Output order: input_grad, weight_grad.
enum FusedLinearCrossEntropyLossGradInput {
  kFlcegGrad, kFlcegInput, kFlcegWeight, kFlcegTargetMask, kFlcegMaskedTarget, kFlcegLogitsMax, kFlcegSumExp,
  kFlcegSoftmax
};

constexpr int kFlcegNumInputs = 8, kFlcegNumOutputs = 2;
constexpr int kFlcegOutputSource[kFlcegNumOutputs] = {kFlcegInput, kFlcegWeight};

inline std::vector<std::vector<int64_t>> FusedLinearCrossEntropyLossGradOutShapes(
    const std::vector<std::vector<int64_t>> &in) {
  return {in[kFlcegOutputSource[0]], in[kFlcegOutputSource[1]]};
}

template <typename DType>
inline std::vector<DType> FusedLinearCrossEntropyLossGradOutTypes(const std::vector<DType> &in) {
  return {in[kFlcegOutputSource[0]], in[kFlcegOutputSource[1]]};
}

}  // namespace ms_ops

#endif  // MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD_INFER_H_
