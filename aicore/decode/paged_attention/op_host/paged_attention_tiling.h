// Tiling of paged_attention as a pure function of the shapes, attributes, dtype and platform,
// shared by the CANN TilingFunc and the CPU entry.
//
// Work items are (sequence, kv head) pairs, spread over the vector cores; an item's query rows
// (its query tokens x the group's heads) go in tiles of queryRows, and each tile streams the
// sequence's cache rows keyChunk at a time. keyChunk and queryRows start at 64 and halve (query
// rows first) until the UB holds the kernel's buffers (PaUbBytes).
#ifndef MS_OPS_PAGED_ATTENTION_TILING_H_
#define MS_OPS_PAGED_ATTENTION_TILING_H_

#include <cstdint>
#include <string>

#include "../../decode_tiling.h"
#include "../op_kernel/paged_attention_tiling_data.h"

namespace ms_ops {

// Inputs query, key_cache, value_cache, block_tables, context_lens, q_seq_lens, alibi_slopes;
// output attention_out (query's shape and dtype).
enum PagedAttentionArg {
  kPaQuery, kPaKeyCache, kPaValueCache, kPaBlockTables, kPaContextLens, kPaQSeqLens, kPaAlibi, kPaNumInputs
};

constexpr int64_t kPaMaxDim = 512;

struct PagedAttentionProblem {
  int64_t numTokens = 0, batch = 0, heads = 0, kvHeads = 0, dim = 0;
  int64_t numBlocks = 0, blockSize = 0, maxBlocks = 0;
  float scale = 1.0f;
  bool hasQSeqLens = false, hasAlibi = false;
  DecodeFloat dataType = DecodeFloat::kF32;
};

struct PagedAttentionTiling {
  PagedAttentionTilingData data{};
  uint32_t blockDim = 1;
  uint64_t tilingKey = 0;
  std::string error;
};

inline uint32_t PaPitch(int64_t dim, uint32_t elemBytes) {
  return static_cast<uint32_t>(AlignUp(uint64_t(dim), kBlockBytes / elemBytes));
}

// The kernel's UB buffers (paged_attention.cpp, Init): key and value chunks in the cache dtype,
// their fp32 casts (16-bit dtypes), one fp32 product tile, the broadcast probabilities, the
// score/index/scratch vectors, one query row in and one output row out, and the tile's scaled
// queries and accumulators in fp32.
inline uint64_t PaUbBytes(uint32_t pitch, uint32_t keyChunk, uint32_t queryRows, uint32_t elemBytes) {
  const uint64_t chunk = uint64_t(keyChunk) * pitch;
  const uint64_t vec = AlignUp(kPaMaxKeyChunk * 4, kBlockBytes);
  return 2 * AlignUp(chunk * elemBytes, kBlockBytes) + (elemBytes == 4 ? 0 : 2 * chunk * 4) + chunk * 4 +
         AlignUp(uint64_t(keyChunk), 8) * kBlockBytes + 3 * vec + 4 * kBlockBytes +
         2 * AlignUp(uint64_t(pitch) * elemBytes, kBlockBytes) + 2 * uint64_t(queryRows) * pitch * 4;
}

inline PagedAttentionTiling ComputePagedAttentionTiling(const PagedAttentionProblem &p, const PlatformInfo &plat) {
  PagedAttentionTiling t;
  if (p.heads < 1 || p.kvHeads < 1 || p.heads % p.kvHeads != 0) {
    t.error = "head_num must be a positive multiple of kv_head_num";
    return t;
  }
  if (p.dim < 1 || p.dim > kPaMaxDim || p.blockSize < 1 || p.numBlocks < 1 || p.batch < 0 || p.numTokens < 0) {
    t.error = "needs 1 <= D <= 512, block_size >= 1, num_blocks >= 1";
    return t;
  }
  const uint32_t elemBytes = DecodeElemBytes(p.dataType);
  const uint32_t pitch = PaPitch(p.dim, elemBytes);
  const int64_t group = p.heads / p.kvHeads;
  const int64_t rowsPerItem = group * (p.hasQSeqLens ? (p.numTokens > 0 ? p.numTokens : 1) : 1);
  uint32_t keyChunk = static_cast<uint32_t>(p.blockSize < kPaMaxKeyChunk ? p.blockSize : kPaMaxKeyChunk);
  uint32_t queryRows = static_cast<uint32_t>(rowsPerItem < kPaMaxQueryRows ? rowsPerItem : kPaMaxQueryRows);
  while (PaUbBytes(pitch, keyChunk, queryRows, elemBytes) > plat.ubSize) {
    if (queryRows > 8) queryRows /= 2;
    else if (keyChunk > 8) keyChunk /= 2;
    else if (queryRows > 1) queryRows /= 2;
    else {
      t.error = "the UB cannot hold one key chunk and one query row of head dim " + std::to_string(p.dim);
      return t;
    }
  }
  PagedAttentionTilingData &d = t.data;
  d.numTokens = p.numTokens;
  d.batch = p.batch;
  d.heads = p.heads;
  d.kvHeads = p.kvHeads;
  d.dim = p.dim;
  d.numBlocks = p.numBlocks;
  d.blockSize = p.blockSize;
  d.maxBlocks = p.maxBlocks;
  d.scale = p.scale;
  d.group = static_cast<uint32_t>(group);
  d.pitch = pitch;
  d.keyChunk = keyChunk;
  d.queryRows = queryRows;
  d.hasQSeqLens = p.hasQSeqLens ? 1u : 0u;
  d.hasAlibi = p.hasAlibi ? 1u : 0u;
  const int64_t items = p.batch * p.kvHeads;
  t.blockDim = static_cast<uint32_t>(items < 1 ? 1 : (items < plat.aivCoreNum ? items : plat.aivCoreNum));
  t.tilingKey = p.dataType == DecodeFloat::kF32 ? kPaKeyF32 : p.dataType == DecodeFloat::kF16 ? kPaKeyF16 : kPaKeyBF16;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_PAGED_ATTENTION_TILING_H_
