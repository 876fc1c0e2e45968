// Host-side facts shared by the cross-entropy ops (the trio fused_linear_online_max_sum,
// fused_cross_entropy_loss_with_max_sum, fused_linear_cross_entropy_loss_grad, the loss
// reduction cross_entropy_loss_reduce with its gradient, and grad_in_forward mode's
// fused_linear_cross_entropy_grad_in_forward and cross_entropy_grad_scale): their tiling keys, the layout of
// target_mask, the value check of target and the names of the reductions. Plain C++ without MindSpore or CANN
// headers, so the pure tiling functions, the CANN registrations and the CPU entries can all use
// it. Kernels do not include it: they test the key literals (CANN needs literals in TILING_KEY_IS).
#ifndef MS_OPS_COMMON_CROSS_ENTROPY_COMMON_H_
#define MS_OPS_COMMON_CROSS_ENTROPY_COMMON_H_

#include <cstdint>
#include <string>

namespace ms_ops {

// Element type of input/weight (and of the gradients that have their dtype).
enum class CeFloat : uint8_t { kF32, kF16, kBF16 };

// Tiling keys of the ops whose kernels are templated on (float dtype, target dtype); a kernel
// selects its instance with the same literals.
constexpr uint64_t kCeKeyF32I32 = 1;
constexpr uint64_t kCeKeyF32I64 = 2;
constexpr uint64_t kCeKeyF16I32 = 3;
constexpr uint64_t kCeKeyF16I64 = 4;
constexpr uint64_t kCeKeyBF16I32 = 5;
constexpr uint64_t kCeKeyBF16I64 = 6;

inline uint64_t CrossEntropyKey(CeFloat data, bool int64Target) {
  const uint64_t base = data == CeFloat::kF32 ? kCeKeyF32I32 : data == CeFloat::kF16 ? kCeKeyF16I32 : kCeKeyBF16I32;
  return base + (int64Target ? 1 : 0);
}

// target_mask: bit r % 8 of byte r / 8 is 1 when row r's target lies outside the shard
// [vocab_start_index, vocab_end_index) ("masked"), LSB first; the pad bits of the last byte are 1.
inline int64_t TargetMaskBytes(int64_t rows) { return (rows + 7) / 8; }

// The first target that is neither a vocabulary id in [0, vocabSize) nor ignoreIndex, described
// for the entry's error ("value 123456 at [7] is outside [0, 32000) and is not ignore_index
// (-100)"); empty when all are valid. Int: int32_t or int64_t.
template <typename Int>
std::string BadTargetMessage(const Int *target, int64_t rows, int64_t vocabSize, int64_t ignoreIndex) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = target[r];
    if ((t >= 0 && t < vocabSize) || t == ignoreIndex) continue;
    return "value " + std::to_string(t) + " at [" + std::to_string(r) + "] is outside [0, " + std::to_string(vocabSize) +
           ") and is not ignore_index (" + std::to_string(ignoreIndex) + ")";
  }
  return "";
}

// The reductions of the per-token losses, as the tiling data carries them; the attribute value
// "mean", "sum" or "none" (PyTorch's names).
enum class CeReduction : uint32_t { kMean = 0, kSum = 1, kNone = 2 };

// false for any other name.
inline bool ParseReduction(const std::string &name, CeReduction *out) {
  if (name == "mean") *out = CeReduction::kMean;
  else if (name == "sum") *out = CeReduction::kSum;
  else if (name == "none") *out = CeReduction::kNone;
  else return false;
  return true;
}

}  // namespace ms_ops

#endif  // MS_OPS_COMMON_CROSS_ENTROPY_COMMON_H_
