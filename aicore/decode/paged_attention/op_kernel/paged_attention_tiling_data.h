// Tiling of paged_attention, shared by the host tiling function and the kernel.
#ifndef MS_OPS_PAGED_ATTENTION_TILING_DATA_H_
#define MS_OPS_PAGED_ATTENTION_TILING_DATA_H_

#include <cstdint>

struct PagedAttentionTilingData {
  int64_t numTokens;  // query rows T (tokens of all sequences)
  int64_t batch;      // sequences B: rows of block_tables, entries of context_lens (and q_seq_lens)
  int64_t heads;      // N
  int64_t kvHeads;    // N_kv; N = group * N_kv
  int64_t dim;        // D
  int64_t numBlocks, blockSize, maxBlocks;  // the caches' pool and block_tables' width
  float scale;
  uint32_t group;       // query heads per kv head
  uint32_t pitch;       // UB row pitch of a head vector, in elements: D rounded up to 32 bytes
  uint32_t keyChunk;    // cache rows per pass (<= 64: one repeat of the score reductions)
  uint32_t queryRows;   // (query token, head) rows per tile (<= 64)
  uint32_t hasQSeqLens;
  uint32_t hasAlibi;
  uint32_t reserved;
};

// Tiling keys by dtype; the kernel tests the same literals.
constexpr uint64_t kPaKeyF32 = 1;
constexpr uint64_t kPaKeyF16 = 2;
constexpr uint64_t kPaKeyBF16 = 3;
constexpr uint32_t kPaMaxKeyChunk = 64;
constexpr uint32_t kPaMaxQueryRows = 64;

#endif  // MS_OPS_PAGED_ATTENTION_TILING_DATA_H_
