// Shape and dtype inference of cross_entropy_grad_scale, shared by the CANN InferShape and the CPU
// entry's <Op>InferShape/<Op>InferType. The gradients are scaled in place; the one output is the
// scale applied, [1] float32.
#ifndef MS_OPS_CROSS_ENTROPY_GRAD_SCALE_INFER_H_
#define MS_OPS_CROSS_ENTROPY_GRAD_SCALE_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Inputs: input_grad, weight_grad (one float dtype; scaled in place), dout [1] and count [1]
// float32 (count set to -1 once consumed); output: applied_scale [1] float32.
enum CrossEntropyGradScaleInput { kCegsInputGrad, kCegsWeightGrad, kCegsDout, kCegsCount, kCegsNumInputs };
enum CrossEntropyGradScaleOutput { kCegsAppliedScale, kCegsNumOutputs };

inline std::vector<int64_t> CrossEntropyGradScaleOutShape() { return {1}; }

}  // namespace ms_ops

#endif  // MS_OPS_CROSS_ENTROPY_GRAD_SCALE_INFER_H_
