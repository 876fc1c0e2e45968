// Tiling of fused_linear_cross_entropy_loss_grad, shared by the host tiling function and the kernel.
#ifndef MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD_TILING_DATA_H_
#define MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD_TILING_DATA_H_

#include <cstdint>

#include "../../../common/cube_tiling.h"

struct FusedLinearCrossEntropyLossGradTilingData {
  int64_t rows;             // BT: tokens
  int64_t hidden;           // H
  int64_t vocab;            // V: rows of weight (the local vocabulary shard)
  int64_t chunkRows;        // mt: tokens per BT chunk (a multiple of 16)
  int64_t tileCols;         // nt: vocabulary entries per V tile (a multiple of 16)
  int64_t chunks;           // M = ceil(BT / mt)
  int64_t tiles;            // ceil(V / nt)
  int64_t rounds;           // ceil(tiles / blockDim): V tile of block b in round r is r * blockDim + b
  uint64_t inputAccOffset;  // workspace bytes: fp32 [BT, H] input_grad accumulator (fp16/bf16 only)
  uint64_t blockOffset;     // workspace bytes: the first block's scratch ...
  uint64_t blockBytes;      // ... and the distance between two blocks' scratch
  uint64_t logitsOffset;    // within a block's scratch: fp32 [mt, nt] logits tile (memory-saving mode)
  uint64_t gOffset;         // G tile [mt, nt] in the input dtype (fp32 memory-saving: the logits tile)
  uint64_t weightAccOffset; // fp32 [nt, H] weight_grad tile accumulator (fp16/bf16 only)
  uint64_t scaledInputOffset;  // workspace bytes: fp32 [BT, H] X' = diag(grad) X (fp32 with softmax only)
  uint64_t partialsOffset;     // fp32 [blocks, 2, H]: sums of X' and of W over each block's share (same)
  int64_t inputRowGroups;      // R: row groups of the direct p W product (fp32 with softmax; else 1)
  int64_t inputVocabGroups;    // Kg: its vocabulary groups (K split; else 1)
  uint64_t inputPartialsOffset;  // fp32 [Kg - 1, BT, H]: vocabulary groups 1.. of p W (same)
  float smoothPerClass;     // label_smoothing / vocab_size
  float targetWeight;       // 1 - label_smoothing
  uint32_t ubChunkBytes;    // bytes of each of the four UB row buffers (two in, two out)
  uint32_t batchRows;       // rows of a G tile handled per UB pass
  TCubeTiling mmLogits;  // [mt, nt] = X[chunk] * W[tile]^T, K = H
  TCubeTiling mmWeight;  // [nt, H] += G^T * X[chunk], K = mt (fp32 with softmax: [V share, H] = p^T X', K = BT)
  TCubeTiling mmInput;  // [mt, H] += G * W[tile], K = nt (fp32 with softmax: [BT / R, H] = p W, K = V / Kg)
};

// Tiling key: the cross-entropy key of (dtype, masked_target dtype) (common/cross_entropy_common.h,
// 1..6) in memory-saving mode, plus this offset when softmax is given. The kernel tests the
// resulting literals with TILING_KEY_IS.
constexpr uint64_t kFlceGradKeySoftmaxOffset = 10;

#endif  // MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD_TILING_DATA_H_
