// Shape and dtype inference of cross_entropy_grad_scale, shared by the CANN InferShape and the CPU
// entry's <Op>InferShape/<Op>InferType: each scaled gradient has the shape and dtype of the one it
// scales (unknown dims and rank passing through).
#ifndef MS_OPS_CROSS_ENTROPY_GRAD_SCALE_INFER_H_
#define MS_OPS_CROSS_ENTROPY_GRAD_SCALE_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Inputs: input_grad, weight_grad (one float dtype), dout [1] and count [1] float32; outputs:
// scaled_input_grad, scaled_weight_grad.
enum CrossEntropyGradScaleInput { kCegsInputGrad, kCegsWeightGrad, kCegsDout, kCegsCount, kCegsNumInputs };
enum CrossEntropyGradScaleOutput { kCegsScaledInputGrad, kCegsScaledWeightGrad, kCegsNumOutputs };

inline std::vector<std::vector<int64_t>> CrossEntropyGradScaleOutShapes(const std::vector<std::vector<int64_t>> &in) {
  return {in[kCegsInputGrad], in[kCegsWeightGrad]};
}

template <typename DType>
inline std::vector<DType> CrossEntropyGradScaleOutTypes(const std::vector<DType> &in) {
  return {in[kCegsInputGrad], in[kCegsWeightGrad]};
}

}  // namespace ms_ops

#endif  // MS_OPS_CROSS_ENTROPY_GRAD_SCALE_INFER_H_
