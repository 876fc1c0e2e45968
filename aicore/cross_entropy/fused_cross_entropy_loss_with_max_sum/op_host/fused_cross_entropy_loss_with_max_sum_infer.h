// Shape and dtype inference of fused_cross_entropy_loss_with_max_sum, shared by the CANN
// InferShape and the CPU entry's <Op>InferShape/<Op>InferType. Shapes are dim vectors; -1 is an
// unknown dim and {-2} an unknown rank. Inference never fails: what it cannot know stays -1, and
// the kernel entry reports inconsistent shapes when the values arrive.
#ifndef MS_OPS_FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM_INFER_H_
#define MS_OPS_FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Input order: logits_max, sum_exp_logits, predicted_logits, sum_logits ([BT] each),
// vocab_parallel_logits ([BT, V] or a placeholder); outputs: loss, softmax.
enum FusedCrossEntropyLossWithMaxSumInput { kFcelMax, kFcelSumExp, kFcelPredicted, kFcelSumLogits, kFcelLogits,
                                            kFcelNumInputs };
enum FusedCrossEntropyLossWithMaxSumOutput { kFcelLoss, kFcelSoftmax, kFcelNumOutputs };

// loss [BT] with BT from the first of the three required statistics of known length (sum_logits
// may be a stand-in of another length); softmax the logits' shape, or [0].
inline std::vector<std::vector<int64_t>> FusedCrossEntropyLossWithMaxSumOutShapes(
    const std::vector<std::vector<int64_t>> &in, bool hasLogits) {
  int64_t rows = -1;
  for (size_t i = kFcelMax; i <= kFcelPredicted && rows < 0; ++i)
    if (in[i].size() == 1 && in[i][0] >= 0) rows = in[i][0];
  std::vector<int64_t> softmax{0};
  if (hasLogits) {
    const std::vector<int64_t> &l = in[kFcelLogits];
    softmax = l.size() == 2 ? std::vector<int64_t>{rows >= 0 ? rows : l[0], l[1]} : std::vector<int64_t>{rows, -1};
  }
  return {{rows}, softmax};
}

// Both outputs are float32, whatever the dtype of the logits (as CANN's softmax output).
template <typename DType>
inline std::vector<DType> FusedCrossEntropyLossWithMaxSumOutTypes(DType f32) {
  return {f32, f32};
}

}  // namespace ms_ops

#endif  // MS_OPS_FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM_INFER_H_
