// Tiling of sparse_flash_attention and sparse_flash_attention_grad (host and kernel): the problem
// as a plain struct and a pure function of it and the platform.
//
// Query and key rows are token rows: (b, s) of BSND at b*S + s, TND rows packed. A token row holds
// its heads one after the other, so head n of row r of a tensor with N heads of width W starts at
// (r*N + n)*W. Rope parts are separate tensors of width ropeDim laid out the same way; the kernels
// gather a query or key row with its rope part into one row of qkDim = dim + ropeDim elements.
#ifndef MS_OPS_SPARSE_FLASH_ATTENTION_TILING_H_
#define MS_OPS_SPARSE_FLASH_ATTENTION_TILING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/cube_tiling.h"
#include "../../common/platform.h"

struct SparseFlashAttentionTilingData {
  // seq1/seq2: every sequence's lengths (BSND); with TND (packed) the totals T1/T2, sequence b
  // then being rows [cumQ[b-1], cumQ[b]) of the query and [cumKv[b-1], cumKv[b]) of the key.
  int64_t batch, heads1, heads2, group, seq1, seq2;
  int64_t qRows, kRows;             // B*S1 and B*S2, or T1 and T2
  int64_t dim, ropeDim, qkDim, vDim;
  int64_t topK, blockSize;          // index entries per (query row, key head); keys per entry
  int64_t sparseMode;               // 3: key p visible to query i iff p <= i + s2 - s1; 0: all
  // The band around a = i + s2 - s1 (anchored at the bottom-right, as sparse_mode 3): key p is
  // visible iff a - preTokens <= p <= a + nextTokens; clamped to +-2^62 so that a +- them never
  // overflows (the defaults 2^63-1 mean no band).
  int64_t preTokens, nextTokens;
  // Paged keys (PA_BSND): key/value [blocks, pageSize, N2, D], key position p of sequence b at
  // token row blockTable[b * maxPages + p / pageSize] * pageSize + p % pageSize.
  int64_t pageSize, maxPages;
  int64_t idxChunk;                 // index entries read into UB at a time
  int64_t nTile;                    // gathered keys per tile (backward: gatherRows)
  int64_t gatherRows;               // rows per buffer of the double-buffered gather queue
  // Backward: a query row's visible keys in segments of up to segKeys (each sorted by the block
  // owning their key rows), segTiles key tiles per segment, at most `segments` per row.
  int64_t segKeys, segTiles, segments;
  int64_t roundItems;               // backward: items per block in a round (SfaGradRoundItems)
  uint32_t packed;
  // value is the key tensor itself (the MLA absorb layout passes one tensor twice, vDim == dim):
  // the value rows are the gathered key rows' first vDim elements, not gathered again.
  uint32_t valueIsKey;
  // BSND with per-batch lengths: actual_seq_lengths_query / _kv hold B lengths (<= S1 / S2);
  // query rows past their sequence's length see no key. Paged keys always have them.
  uint32_t lengthsQ, lengthsKv, paged;
  float scale;
  TCubeTiling mmNT;  // S = Q Kᵀ (backward: and dP = dO Vᵀ), the key and value rows in UB
  TCubeTiling mmNN;  // O += P V, dQ += dS K, the value and key rows in UB
  TCubeTiling mmTN;  // a tile's dV = Pᵀ dO, dK = dSᵀ Q (backward only)
};

namespace ms_ops {

enum class SfaFloat { kF32, kF16, kBF16 };

// pre_tokens / next_tokens beyond this are no band (and a query's anchor +- them cannot overflow).
constexpr int64_t kSfaFar = int64_t(1) << 62;

struct SparseFlashAttentionProblem {
  int64_t batch = 0, heads1 = 0, heads2 = 0, seq1 = 0, seq2 = 0;
  int64_t dim = 0, ropeDim = 0, vDim = 0, topK = 0, blockSize = 1, sparseMode = 3;
  bool packed = false;
  bool lengthsQ = false, lengthsKv = false;  // BSND per-batch lengths
  bool paged = false;                        // PA_BSND keys: seq2 is max_blocks * pageSize
  int64_t pageSize = 0, maxPages = 0, keyRows = 0;  // paged: block size, table width, blocks * block size
  int64_t preTokens = kSfaFar, nextTokens = kSfaFar;
  bool valueIsKey = false;  // key and value are one tensor
  std::vector<int64_t> cumQ, cumKv;  // TND only (cumKv not with paged keys: lenKv holds their lengths)
  std::vector<int64_t> lenQ, lenKv;  // BSND per-batch query and key lengths (host checks only)
  SfaFloat dataType = SfaFloat::kF32;
  float scale = 1.0f;
};

struct SparseFlashAttentionTiling {
  SparseFlashAttentionTilingData data{};
  uint32_t blockDim = 0;        // 0: nothing to compute
  uint64_t tilingKey = 0;       // 1 fp32, 2 fp16, 3 bf16
  uint64_t workspaceBytes = 0;  // all blocks' workspaces
  std::string error;
};

constexpr int64_t kSfaKeyTile = 128, kSfaIdxChunk = 512, kSfaSegKeys = 512;
// The backward's key rows go to the blocks in runs of this many: row r is block (r / 16) % B's.
constexpr int64_t kSfaOwnerRows = 16;
// Items per block in a round of the backward: an owner adds into each of its key rows about this
// many times as often per round, while the rows are in its cache.
constexpr int64_t kSfaRoundItems = 2;
// Gathered rows per queue buffer at most: past that a buffer's copies out are long enough.
constexpr int64_t kSfaGatherRows = 32;


// Key rows of the backward's accumulator: every key token row's key heads.
inline uint64_t SfaGradKeyRows(const SparseFlashAttentionTilingData &d) { return uint64_t(d.kRows * d.heads2); }

// Elements between the backward's gathered query rows [q | q_rope] and dO rows in its workspace:
// qkDim and vDim rounded up to 8, so that the fp32 key gradient rows the cube puts into UB
// (dSᵀ Q, Pᵀ dO, as wide as these rows) start 32-byte aligned.
inline uint64_t SfaGradQPitch(const SparseFlashAttentionTilingData &d) { return AlignUp(uint64_t(d.qkDim), 8); }
inline uint64_t SfaGradVPitch(const SparseFlashAttentionTilingData &d) { return AlignUp(uint64_t(d.vDim), 8); }

// Floats of a key row's gradient in the backward's fp32 accumulator: d[k | k_rope] then dv, each
// at the pitch of the rows it comes from, so that every part starts 32-byte aligned.
inline uint64_t SfaGradPitch(const SparseFlashAttentionTilingData &d) { return SfaGradQPitch(d) + SfaGradVPitch(d); }

// Columns between the rows of the backward's [G, nTile] tiles of S and dP, and between the tiles of
// a segment's P and dS: nTile rounded up to 16, so that the vector passes over all rows of a tile
// at once find every row 32-byte aligned, as fp32 and as 16-bit T.
inline uint64_t SfaGradTilePitch(const SparseFlashAttentionTilingData &d) { return AlignUp(uint64_t(d.nTile), 16); }

// Columns between the rows of a segment's [G, segTiles x SfaGradTilePitch] P and dS in a slot: its
// tiles side by side, key j of the segment at column (j / nTile) * SfaGradTilePitch + j % nTile.
inline uint64_t SfaGradSegPitch(const SparseFlashAttentionTilingData &d) {
  return uint64_t(d.segTiles) * SfaGradTilePitch(d);
}

// Floats of one block's own workspace (the kernels carve it in this order). Forward: S and P
// [G, nTile], P V and the accumulator [G, vDim], gathered Q [G, qkDim] (its key and value rows stay
// in UB). Backward: S and dP [G, SfaGradTilePitch] and the d query accumulator [G, qkDim].
inline uint64_t SfaWorkspaceFloats(const SparseFlashAttentionTilingData &d, bool grad) {
  const uint64_t g = uint64_t(d.group), n = uint64_t(d.nTile), qk = uint64_t(d.qkDim), v = uint64_t(d.vDim);
  if (!grad) return 2 * g * n + g * qk + 2 * g * v;
  return 2 * g * SfaGradTilePitch(d) + g * qk;
}

// int32 entries of a row of segment offsets in a backward slot: B + 1, rounded up to 32 bytes.
inline uint64_t SfaGradOffsetPitch(uint64_t blocks) { return AlignUp(blocks + 1, 8); }

// The backward's slot of one item (query row, key head), in 4-byte units from the slot's start,
// each part 32-byte aligned; T-typed parts take fp32-sized places. What the item's block writes
// and every block reads after the next SyncAll: the count of segments used (one int32 in a 32-byte
// block); per segment the offsets of its B owners' keys; per segment the key rows in that order
// (int32, row r*N2 + n2 of the [key rows, N2] key gradients); per segment its P and dS, each
// [G, SfaGradSegPitch]; the gathered [q | q_rope] and dO rows of the item's G heads.
struct SfaGradSlot {
  uint64_t offsets, rows, p, ds, qg, dout, total;
};

inline SfaGradSlot SfaGradSlotLayout(const SparseFlashAttentionTilingData &d, uint64_t blocks) {
  const uint64_t g = uint64_t(d.group), segs = uint64_t(d.segments);
  const uint64_t seg = g * SfaGradSegPitch(d);
  SfaGradSlot s;
  s.offsets = 8;
  s.rows = s.offsets + segs * SfaGradOffsetPitch(blocks);
  s.p = s.rows + AlignUp(segs * uint64_t(d.segKeys), 8);
  s.ds = s.p + segs * seg;
  s.qg = s.ds + segs * seg;
  s.dout = s.qg + g * SfaGradQPitch(d);
  s.total = s.dout + g * SfaGradVPitch(d);
  return s;
}

// Floats of the backward's whole workspace: the blocks' own parts, two sets of B x roundItems item
// slots (one written while the other is read) and the fp32 key gradient accumulator
// [SfaGradKeyRows, SfaGradPitch].
inline uint64_t SfaGradWorkspaceFloats(const SparseFlashAttentionTilingData &d, uint64_t blocks) {
  return blocks * SfaWorkspaceFloats(d, true) +
         2 * blocks * uint64_t(d.roundItems) * SfaGradSlotLayout(d, blocks).total +
         SfaGradKeyRows(d) * SfaGradPitch(d);
}

// Bytes of one buffer of the kernels' gather queue: `rows` rows of a main part of `main` elements
// and a rope part of `rope`, each part of a row 32-byte aligned in UB.
inline uint64_t SfaGatherBytes(int64_t rows, int64_t main, int64_t rope, uint64_t elem) {
  return uint64_t(rows) * (AlignUp(uint64_t(main) * elem, kBlockBytes) + AlignUp(uint64_t(rope) * elem, kBlockBytes));
}

// Bytes of one buffer of the gather queue: gatherRows gathered rows of `elem`-byte elements and,
// backward, at least one fp32 key gradient row (d[k | k_rope] or dv) rounded up to 16 floats: the
// owners' key gradients come into these buffers, and the narrowing of the accumulator gives its
// rows that pitch in UB so that their T rows stay 32-byte aligned.
inline uint64_t SfaQueueBytes(const SparseFlashAttentionTilingData &d, uint64_t elem, bool grad) {
  const int64_t main = d.dim > d.vDim ? d.dim : d.vDim, wide = d.qkDim > d.vDim ? d.qkDim : d.vDim;
  const uint64_t gathered = SfaGatherBytes(d.gatherRows, main, d.ropeDim, elem);
  const uint64_t keyRow = AlignUp(uint64_t(wide), 16) * 4;
  return grad && keyRow > gathered ? keyRow : gathered;
}

inline TCubeTiling SfaCubeTiling(SfaFloat t, uint32_t blockDim, int64_t m, int64_t n, int64_t k) {
  return SingleShapeCubeTiling(blockDim, m, n, k, 128, 256, t == SfaFloat::kF32 ? 32 : 64, 2);
}

inline SparseFlashAttentionTiling ComputeSparseFlashAttentionTiling(const SparseFlashAttentionProblem &p,
                                                                    const PlatformInfo &platform, bool grad) {
  SparseFlashAttentionTiling t;
  if (p.heads1 < 1 || p.heads2 < 1 || p.heads1 % p.heads2 != 0 || p.dim < 1 || p.vDim < 1 || p.ropeDim < 0 ||
      p.topK < 1 || p.blockSize < 1) {
    t.error = "needs N1 a multiple of N2 >= 1, D >= 1, sparse count >= 1 and sparse_block_size >= 1";
    return t;
  }
  SparseFlashAttentionTilingData &d = t.data;
  d.batch = p.batch;
  d.heads1 = p.heads1;
  d.heads2 = p.heads2;
  d.group = p.heads1 / p.heads2;
  d.seq1 = p.seq1;
  d.seq2 = p.seq2;
  d.packed = p.packed ? 1 : 0;
  d.valueIsKey = p.valueIsKey && p.vDim == p.dim ? 1 : 0;
  d.qRows = p.packed ? p.seq1 : p.batch * p.seq1;
  d.kRows = p.paged ? p.keyRows : p.packed ? p.seq2 : p.batch * p.seq2;
  d.lengthsQ = p.lengthsQ ? 1 : 0;
  d.lengthsKv = p.lengthsKv || p.paged ? 1 : 0;
  d.paged = p.paged ? 1 : 0;
  d.pageSize = p.pageSize;
  d.maxPages = p.maxPages;
  d.preTokens = p.preTokens < -kSfaFar ? -kSfaFar : p.preTokens > kSfaFar ? kSfaFar : p.preTokens;
  d.nextTokens = p.nextTokens < -kSfaFar ? -kSfaFar : p.nextTokens > kSfaFar ? kSfaFar : p.nextTokens;
  d.dim = p.dim;
  d.ropeDim = p.ropeDim;
  d.qkDim = p.dim + p.ropeDim;
  d.vDim = p.vDim;
  d.topK = p.topK;
  d.blockSize = p.blockSize;
  d.sparseMode = p.sparseMode;
  d.scale = p.scale;
  d.idxChunk = p.topK < kSfaIdxChunk ? p.topK : kSfaIdxChunk;
  d.nTile = kSfaKeyTile;
  // UB: index chunk, 8 fp32 rows (queues and scratch) of max(qkDim, vDim) and of the forward's
  // nTile or the backward's 8 tile rows (its vector passes take 8 rows of S at a time, and its
  // tiles are at most kSfaGatherRows keys), a T row of zeros, the tile's key positions and 5
  // per-row states of a group; the rest goes to the gather queue's two buffers: up to
  // kSfaGatherRows gathered rows each and, backward, at least one key row's fp32 gradients
  // (SfaQueueBytes).
  const int64_t wide = d.qkDim > d.vDim ? d.qkDim : d.vDim, tileCols = grad ? 8 * kSfaGatherRows : d.nTile;
  const int64_t row = wide > tileCols ? wide : tileCols;
  const uint64_t rowBytes = AlignUp(uint64_t(row) * 4, kBlockBytes);
  // Backward: in place of the tile's key positions, three int32 arrays of a segment's keys (the
  // positions, their rows, the rows sorted by owner) and three of B + 1 owner counts.
  const int64_t listed = p.topK * p.blockSize, segBound = listed < kSfaSegKeys ? listed : kSfaSegKeys;
  const uint64_t keyLists = grad ? 3 * AlignUp(uint64_t(segBound) * 4, kBlockBytes) +
                                       3 * AlignUp(SfaGradOffsetPitch(platform.aicCoreNum) * 4, kBlockBytes)
                                 : AlignUp(uint64_t(d.nTile) * 4, kBlockBytes);
  const uint64_t ub = AlignUp(uint64_t(d.idxChunk) * 4, kBlockBytes) + 8 * rowBytes + keyLists +
                      5 * AlignUp(uint64_t(d.group) * 4, kBlockBytes) + 64;
  const uint64_t sz = p.dataType == SfaFloat::kF32 ? 4 : 2;
  const uint64_t gatherRow = SfaGatherBytes(1, d.dim > d.vDim ? d.dim : d.vDim, d.ropeDim, sz);
  const uint64_t fit = ub < platform.ubSize ? (platform.ubSize - ub) / (2 * gatherRow) : 0;
  d.gatherRows = fit < uint64_t(kSfaGatherRows) ? int64_t(fit) : kSfaGatherRows;
  if (fit < 1 || ub + 2 * SfaQueueBytes(d, sz, grad) > platform.ubSize) {
    t.error = "head dims " + std::to_string(wide) + " / group " + std::to_string(d.group) + " exceed the UB of a core";
    return t;
  }
  // The backward's key tile is one buffer of gathered rows: its key rows stay in UB from the
  // scores to d query.
  if (grad) {
    d.nTile = d.gatherRows;
    d.segKeys = segBound;
    d.segTiles = int64_t(CeilDiv(uint64_t(segBound), uint64_t(d.nTile)));
    d.segments = int64_t(CeilDiv(uint64_t(listed), uint64_t(segBound)));
    d.roundItems = kSfaRoundItems;
    // The backward keeps key rows as int32 in UB and its slots.
    if (SfaGradKeyRows(d) >= (uint64_t(1) << 31)) {
      t.error = "key rows x key heads must stay below 2^31";
      return t;
    }
  }
  const uint64_t items = uint64_t(d.qRows) * uint64_t(p.heads2);
  uint64_t blocks = items < platform.aicCoreNum ? items : platform.aicCoreNum;
  // The backward always runs: block 0 writes the zeros of absent rope parts' placeholders, and
  // every key gradient is written (zeros where no query selects the key).
  if (grad && blocks == 0) blocks = 1;
  t.blockDim = static_cast<uint32_t>(blocks);
  d.mmNT = SfaCubeTiling(p.dataType, t.blockDim, d.group, d.nTile, wide);
  d.mmNN = SfaCubeTiling(p.dataType, t.blockDim, d.group, wide, d.nTile);
  d.mmTN = SfaCubeTiling(p.dataType, t.blockDim, d.nTile, int64_t(AlignUp(uint64_t(wide), 8)), d.group);
  t.tilingKey = p.dataType == SfaFloat::kF32 ? 1 : p.dataType == SfaFloat::kF16 ? 2 : 3;
  t.workspaceBytes = (grad ? SfaGradWorkspaceFloats(d, blocks) : blocks * SfaWorkspaceFloats(d, false)) * 4;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_SPARSE_FLASH_ATTENTION_TILING_H_
