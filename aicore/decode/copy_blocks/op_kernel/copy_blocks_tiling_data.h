// Tiling of copy_blocks, shared by the host tiling function and the kernel.
#ifndef MS_OPS_COPY_BLOCKS_TILING_DATA_H_
#define MS_OPS_COPY_BLOCKS_TILING_DATA_H_

#include <cstdint>

struct CopyBlocksTilingData {
  int64_t pairs;       // rows of block_mapping
  int64_t blockElems;  // block_size * N_kv * D: one cache block
  int64_t numBlocks;   // the caches' blocks
  uint32_t chunkElems;
  uint32_t reserved;
};

#endif  // MS_OPS_COPY_BLOCKS_TILING_DATA_H_
