// Tiling of cross_entropy_grad_scale, shared by the host tiling function and the kernel.
#ifndef MS_OPS_CROSS_ENTROPY_GRAD_SCALE_TILING_DATA_H_
#define MS_OPS_CROSS_ENTROPY_GRAD_SCALE_TILING_DATA_H_

#include <cstdint>

struct CrossEntropyGradScaleTilingData {
  int64_t inputElems;   // elements of input_grad (N * H; 0 for N = 0)
  int64_t weightElems;  // elements of weight_grad (V * H)
  int64_t inputChunks;  // ceil(inputElems / chunkElems): chunk c < inputChunks is input_grad's
  int64_t chunks;       // inputChunks + ceil(weightElems / chunkElems)
  uint32_t chunkElems;  // elements per UB pass
  uint32_t reduction;   // CeReduction: 0 mean, 1 sum
};

// Tiling keys by the dtype of the gradients; the kernel tests the same literals.
constexpr uint64_t kCegsKeyF32 = 1;
constexpr uint64_t kCegsKeyF16 = 2;
constexpr uint64_t kCegsKeyBF16 = 3;

#endif  // MS_OPS_CROSS_ENTROPY_GRAD_SCALE_TILING_DATA_H_
