// Tiling of moe_finalize_routing_grad, shared by the host tiling function and the kernel.
#ifndef MS_OPS_MOE_FINALIZE_ROUTING_GRAD_TILING_DATA_H_
#define MS_OPS_MOE_FINALIZE_ROUTING_GRAD_TILING_DATA_H_

#include <cstdint>

struct MoeFinalizeRoutingGradTilingData {
  int64_t rows;          // R: rows of grad_y
  int64_t topK;          // K
  int64_t hidden;        // H
  int64_t expandedRows;  // N: rows of expanded_x / grad_expanded_x, flat (E*C in drop/pad modes)
  int64_t biasRows;      // rows of bias (0 without bias)
  int64_t scalesNumel;   // elements of grad_scales (R*K, or the placeholder's count without scales)
  int64_t biasNumel;     // elements of grad_bias (E*H, or the placeholder's count without bias)
  uint32_t hChunk;       // H elements per UB chunk (a multiple of 16)
  uint32_t batchRows;    // rows whose indices, scales and experts are loaded at once
  uint32_t windowSlots;  // slots of grad_expanded_x whose pairs one index scan gathers
  uint32_t biasCols;     // grad_bias: H columns of one work item ...
  uint32_t biasColsPad;  // ... padded to 16 elements: the UB row pitch of the accumulators
  uint32_t biasExperts;  // grad_bias: experts accumulated at once by one work item
  uint32_t dropPadMode;  // 0..3: bit 1 selects the row-major index layout
  uint32_t hasBias;
  uint32_t hasScales;
  uint32_t reserved;
};

// Tiling keys (data dtype, scales dtype); the kernel tests the same literals with TILING_KEY_IS.
constexpr uint64_t kMoeFinalizeRoutingGradKeyF32 = 1;
constexpr uint64_t kMoeFinalizeRoutingGradKeyF16 = 2;
constexpr uint64_t kMoeFinalizeRoutingGradKeyF16ScalesF32 = 3;
constexpr uint64_t kMoeFinalizeRoutingGradKeyBF16 = 4;
constexpr uint64_t kMoeFinalizeRoutingGradKeyBF16ScalesF32 = 5;

#endif  // MS_OPS_MOE_FINALIZE_ROUTING_GRAD_TILING_DATA_H_
