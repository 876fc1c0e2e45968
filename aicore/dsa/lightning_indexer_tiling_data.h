// Tiling of lightning_indexer (host and kernel).
//
// Token rows: query element (row r, head h, d) sits at (r * n1 + h) * dim + d, key element
// (row r, head n, d) at (r * n2 + n) * dim + d, weights (r, h) at r * n1 + h, and the outputs
// (r, n, j) at (r * n2 + n) * topK + j. BSND rows are b * seq1 + i (b * seq2 + s for keys), TND
// rows the packed tokens; both walk batches through the same per-batch starts and lengths.
//
// A work item is (batch, key head n, a run of up to qRows query rows of that batch); items are
// dealt round-robin to the blocks. The block's fp32 GM workspace (offsets in floats) holds the
// item's query rows [qRows * group, dim], one key tile [keyTile, dim], their scores
// [qRows * group, keyTile] and each query row's running top-k as (score, index) proposals
// [qRows, topK * 2].
#ifndef MS_OPS_DSA_LIGHTNING_INDEXER_TILING_DATA_H_
#define MS_OPS_DSA_LIGHTNING_INDEXER_TILING_DATA_H_

#include <cstdint>

#include "../common/cube_tiling.h"

struct LightningIndexerTilingData {
  int64_t batch;
  int64_t seq1, seq2;      // BSND: rows per batch; TND: 0 (the cumulative lengths give them)
  uint32_t qLenMode;       // 0: every batch has seq1 rows; 1: per-batch lengths; 2: cumulative (TND)
  uint32_t kLenMode;
  int64_t n1, n2, group, dim;
  int64_t topK;
  uint32_t sparseMode;     // 0 every key, 3 right-down causal
  uint32_t qRows;          // query rows per item
  uint32_t keyTile;        // keys per score tile: 32 * 4^j, what Sort32 + MrgSort fully sort
  int64_t blockSize;       // paged keys (PA_BSND): rows per block (0: not paged)
  int64_t maxBlocks;       // block_table's row length
  uint64_t offQ, offK, offScore, offTop;
  uint64_t blockFloats;
  TCubeTiling mmNT;        // scores = query rows x key tileᵀ
};

#endif  // MS_OPS_DSA_LIGHTNING_INDEXER_TILING_DATA_H_
