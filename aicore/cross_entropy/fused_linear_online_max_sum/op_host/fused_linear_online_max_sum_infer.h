// Shape and dtype inference of fused_linear_online_max_sum, shared by the CANN InferShape and the
// CPU entry's <Op>InferShape/<Op>InferType. Shapes are dim vectors; -1 is an unknown dim and {-2}
// an unknown rank. Inference never fails: what it cannot know stays -1, and the kernel entry
// reports inconsistent shapes when the values arrive.
#ifndef MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_INFER_H_
#define MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_INFER_H_

#include <cstdint>
#include <vector>

namespace ms_ops {

// Input order of the op: input [BT, H], weight [V, H], target [BT].
enum FusedLinearOnlineMaxSumInput { kFlomsInput, kFlomsWeight, kFlomsTarget };
// Output order: the per-row f32 results, target_mask, masked_target, the logits, sum_logits_local.
enum FusedLinearOnlineMaxSumOutput {
  kFlomsLogitsMax, kFlomsSumExp, kFlomsPredicted, kFlomsTargetMask, kFlomsMaskedTarget, kFlomsLogits,
  kFlomsSumLogits, kFlomsNumOutputs
};

// Dim `axis` of a shape whose rank must be `rank`; -1 when the rank is unknown or different.
inline int64_t FlomsDim(const std::vector<int64_t> &shape, size_t rank, size_t axis) {
  if (shape.size() != rank) return -1;
  return shape[axis] < 0 ? -1 : shape[axis];
}

// BT from input's rows or, failing that, target's length; V from weight's rows.
inline std::vector<std::vector<int64_t>> FusedLinearOnlineMaxSumOutShapes(const std::vector<std::vector<int64_t>> &in,
                                                                          bool returnLogits) {
  int64_t rows = FlomsDim(in[kFlomsInput], 2, 0);
  if (rows < 0) rows = FlomsDim(in[kFlomsTarget], 1, 0);
  const int64_t vocab = FlomsDim(in[kFlomsWeight], 2, 0);
  const std::vector<int64_t> perRow{rows};
  const std::vector<int64_t> logits = returnLogits ? std::vector<int64_t>{rows, vocab} : std::vector<int64_t>{0};
  return {perRow, perRow, perRow, {rows < 0 ? -1 : (rows + 7) / 8}, perRow, logits, perRow};
}

// float32 for the per-row results and the logits, uint8 for target_mask, target's dtype for
// masked_target.
template <typename DType>
inline std::vector<DType> FusedLinearOnlineMaxSumOutTypes(const std::vector<DType> &in, DType f32, DType u8) {
  return {f32, f32, f32, u8, in[kFlomsTarget], f32, f32};
}

}  // namespace ms_ops

#endif  // MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_INFER_H_
