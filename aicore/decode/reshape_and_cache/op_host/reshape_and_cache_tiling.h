// Tiling of reshape_and_cache as a pure function of the shapes and the dtype, shared by the CANN
// TilingFunc and the CPU entry: the tokens in even runs over the vector cores.
#ifndef MS_OPS_RESHAPE_AND_CACHE_TILING_H_
#define MS_OPS_RESHAPE_AND_CACHE_TILING_H_

#include <cstdint>
#include <string>

#include "../../decode_tiling.h"
#include "../op_kernel/reshape_and_cache_tiling_data.h"

namespace ms_ops {

// Inputs key, value, key_cache, value_cache, slot_mapping; output written_tokens [1] int32.
enum ReshapeAndCacheArg { kRacKey, kRacValue, kRacKeyCache, kRacValueCache, kRacSlotMapping, kRacNumInputs };

struct ReshapeAndCacheProblem {
  int64_t tokens = 0, rowElems = 0, slots = 0;
  DecodeFloat dataType = DecodeFloat::kF32;
};

struct ReshapeAndCacheTiling {
  ReshapeAndCacheTilingData data{};
  uint32_t blockDim = 1;
  uint64_t tilingKey = 0;
  std::string error;
};

inline ReshapeAndCacheTiling ComputeReshapeAndCacheTiling(const ReshapeAndCacheProblem &p, const PlatformInfo &plat) {
  ReshapeAndCacheTiling t;
  if (p.tokens < 0 || p.rowElems < 1 || p.slots < 0) {
    t.error = "needs tokens >= 0, a row of >= 1 element and slots >= 0";
    return t;
  }
  t.data.tokens = p.tokens;
  t.data.rowElems = p.rowElems;
  t.data.slots = p.slots;
  t.data.chunkElems = DecodeCopyChunkElems(p.dataType);
  t.blockDim = DecodeCopyBlockDim(p.tokens, plat);
  t.tilingKey = DecodeCopyKey(p.dataType);
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_RESHAPE_AND_CACHE_TILING_H_
