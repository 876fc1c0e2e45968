// Tiling of copy_blocks as a pure function of the shapes and the dtype, shared by the CANN
// TilingFunc and the CPU entry: the pairs in even runs over the vector cores.
#ifndef MS_OPS_COPY_BLOCKS_TILING_H_
#define MS_OPS_COPY_BLOCKS_TILING_H_

#include <cstdint>
#include <string>

#include "../../decode_tiling.h"
#include "../op_kernel/copy_blocks_tiling_data.h"

namespace ms_ops {

// Inputs key_cache, value_cache, block_mapping; output copied_blocks [1] int32.
enum CopyBlocksArg { kCbKeyCache, kCbValueCache, kCbMapping, kCbNumInputs };

struct CopyBlocksProblem {
  int64_t pairs = 0, blockElems = 0, numBlocks = 0;
  DecodeFloat dataType = DecodeFloat::kF32;
};

struct CopyBlocksTiling {
  CopyBlocksTilingData data{};
  uint32_t blockDim = 1;
  uint64_t tilingKey = 0;
  std::string error;
};

inline CopyBlocksTiling ComputeCopyBlocksTiling(const CopyBlocksProblem &p, const PlatformInfo &plat) {
  CopyBlocksTiling t;
  if (p.pairs < 0 || p.blockElems < 1 || p.numBlocks < 1) {
    t.error = "needs pairs >= 0, blocks of >= 1 element and >= 1 block";
    return t;
  }
  t.data.pairs = p.pairs;
  t.data.blockElems = p.blockElems;
  t.data.numBlocks = p.numBlocks;
  t.data.chunkElems = DecodeCopyChunkElems(p.dataType);
  t.blockDim = DecodeCopyBlockDim(p.pairs, plat);
  t.tilingKey = DecodeCopyKey(p.dataType);
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_COPY_BLOCKS_TILING_H_
