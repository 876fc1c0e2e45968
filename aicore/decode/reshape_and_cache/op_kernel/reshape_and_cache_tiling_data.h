// Tiling of reshape_and_cache, shared by the host tiling function and the kernel.
#ifndef MS_OPS_RESHAPE_AND_CACHE_TILING_DATA_H_
#define MS_OPS_RESHAPE_AND_CACHE_TILING_DATA_H_

#include <cstdint>

struct ReshapeAndCacheTilingData {
  int64_t tokens;    // T: rows of key and value, entries of slot_mapping
  int64_t rowElems;  // N_kv * D: one token's key (or value) row, one cache slot
  int64_t slots;     // num_blocks * block_size: the slots of each cache
  uint32_t chunkElems;
  uint32_t reserved;
};

#endif  // MS_OPS_RESHAPE_AND_CACHE_TILING_DATA_H_
