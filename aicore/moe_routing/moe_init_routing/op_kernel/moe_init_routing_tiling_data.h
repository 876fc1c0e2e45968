// Tiling of moe_init_routing (MoeInitRoutingV2 semantics), shared by the kernel and the host.
#ifndef MS_OPS_MOE_INIT_ROUTING_TILING_DATA_H_
#define MS_OPS_MOE_INIT_ROUTING_TILING_DATA_H_

#include <cstdint>

// Tiling keys select the element type of x / expanded_x.
constexpr uint64_t kMoeInitRoutingKeyFloat = 1;
constexpr uint64_t kMoeInitRoutingKeyHalf = 2;
constexpr uint64_t kMoeInitRoutingKeyBFloat16 = 3;

// With expert_num == 0 the kernel histograms ids in [0, this) and finds the largest one itself;
// the three int32 histograms then take 96 KiB of UB.
constexpr int64_t kMoeInitRoutingMaxScanExperts = 8192;

// Ids are compared as float, 64 to a 256-byte vector repeat: id chunks are whole repeats.
constexpr int64_t kMoeInitRoutingIdLanes = 64;
// Experts counted (one vector sum each) between two scalar reads of the sums.
constexpr int64_t kMoeInitRoutingHistGroup = 64;

struct MoeInitRoutingTilingData {
  int64_t rows;            // R, token rows of x
  int64_t topK;            // K, experts per token
  int64_t hidden;          // H
  int64_t expandedRows;    // rows of expanded_x seen as [expandedRows, H]: A (dropless) or E*C
  int64_t expertNum;       // E; 0 = dropless, ids scanned for their maximum
  int64_t histCapacity;    // entries of each UB histogram: E, or kMoeInitRoutingMaxScanExperts
  int64_t capacity;        // C, slots per expert (drop/pad mode)
  int64_t dropPadMode;     // 0 dropless, 1 drop/pad
  int64_t countMode;       // expert_tokens_count_or_cumsum written: 0 no, 1 cumsum, 2 counts
  int64_t writeBeforeCapacity;  // expert_tokens_before_capacity written (drop/pad mode only)
  int64_t rowsPerBlock;    // contiguous token rows owned by a block
  int64_t expertsPerBlock; // experts whose empty slots a block zero-fills (drop/pad mode)
  int64_t idxChunk;        // expert ids per UB chunk; a multiple of kMoeInitRoutingIdLanes, >= topK
  int64_t hiddenChunk;     // elements of a row per UB chunk (== hidden unless the row is too big)
};

#endif  // MS_OPS_MOE_INIT_ROUTING_TILING_DATA_H_
