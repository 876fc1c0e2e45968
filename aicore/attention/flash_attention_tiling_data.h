// Tiling shared by flash_attention_score and flash_attention_score_grad (host and kernel).
// A head's Q/K/V/O is a matrix of S rows of D elements; rows are `rowStride` elements apart and
// element (b, s, n, d) of a sequence starting at packed row `start` (TND; 0 otherwise) sits at
// b*strideB + (start + s)*rowStride + n*strideN + d, which covers BSH/BSND (rows N*D apart), SBH
// (rows B*N*D apart), BNSD (rows D apart) and TND (strideB 0, sequences packed along T).
#ifndef MS_OPS_FLASH_ATTENTION_TILING_DATA_H_
#define MS_OPS_FLASH_ATTENTION_TILING_DATA_H_

#include <cstdint>

#include "../common/cube_tiling.h"

struct FlashAttentionTilingData {
  // seq1/seq2: every sequence's length, or with TND (packed != 0) the longest one.
  int64_t batch, heads1, heads2, seq1, seq2, dim;
  int64_t qRows, kRows;  // rows of all sequences: B*S1 and B*S2, or T1 and T2
  int64_t qStrideB, qStrideN, qRow;   // query
  int64_t kStrideB, kStrideN, kRow;   // key
  // value (head dim dimV <= dim), and attention_out and its gradient (dimV too).
  int64_t dimV, vStrideB, vStrideN, vRow, oStrideB, oStrideN, oRow;
  // softmax_max/softmax_sum: [B, N1, S1, 8] or, packed, [T1, N1, 8].
  int64_t statStrideB, statStrideN, statRow;
  // The visible keys of a sequence follow from sparse_mode, pre/next_tokens (clamped to +-2^40),
  // its lengths and its prefix (flash_attention_kernel.h FaSegment).
  int64_t sparseMode, preTokens, nextTokens;
  int64_t bandBatch;  // modes 7 and 8: the sequence that is a band (mode 4); -1 when none
  // Work items: (query head, query tile) and (key head, key tile) over all sequences.
  int64_t qTiles, kTiles;
  // attn_mask read by the kernel (modes 0, 1 and 5): element (b, n1, i, j) at
  // b*maskStrideB + n1*maskStrideN + i*maskRow + j (broadcast dims have stride 0).
  int64_t maskStrideB, maskStrideN, maskRow, maskElems;
  // real_shift: pseKind 0 none, 1 a tensor (element (b, n1, i, j) at b*pseStrideB + n1*pseStrideN
  // + i*pseRow + j; pseBase >= 0: the ALiBi-compressed last 1024 rows, row i read from row
  // max(i - pseBase, 0) shifted by pseBase + row - i), 2 / 3 slopes ([B, N1] or [N1]: slope at
  // b*pseStrideB + n1) giving -slope*|i - j| / -slope*sqrt|i - j|. pseAddFirst: pse_type 1,
  // scale*(QKᵀ + pse); otherwise scale*QKᵀ + pse. pseGrad: the backward writes d real_shift.
  int64_t pseStrideB, pseStrideN, pseRow, pseElems, pseBase;
  uint32_t pseKind, pseAddFirst, pseGrad;
  uint32_t packed;   // TND: sequence b is rows [cumQ[b-1], cumQ[b]) of query, the same for key
  uint32_t hasMask;  // attn_mask is read tile by tile
  uint32_t hasPrefix;
  float scale;
  uint32_t mTile;  // query rows per tile
  uint32_t nTile;  // key rows per tile
  TCubeTiling mmNT;  // A x Bᵀ (S = Q Kᵀ, dP = dO Vᵀ)
  TCubeTiling mmNN;  // A x B (O += P V, dQ += dS K)
  TCubeTiling mmTN;  // Aᵀ x B (dV += Pᵀ dO, dK += dSᵀ Q); unused by the forward
  // Dropout (flash_attention_dropout.h): dropKind 0 none, 1 drop_mask bits (dropElems bytes),
  // 2 Philox bits from dropout_seed; an element is kept when its draw < dropThreshold, and scaled
  // by dropScale = 1 / keep_prob.
  uint64_t dropThreshold;
  int64_t dropElems;
  uint32_t dropKind;
  float dropScale;
};

namespace ms_ops {
// Keys visible beyond this distance are all keys (pre/next_tokens' "unlimited" 2147483647).
constexpr int64_t kFaFar = int64_t(1) << 40;
// Query and key tiles are whole multiples of this many rows (flash_attention_tiling.h), and a
// kernel's key loop that skips invisible keys starts on such a multiple.
constexpr int64_t kFaTileUnit = 128;
// The backward's D = Σ dO ∘ O of every query row and head, [N1, qRows] after the blocks' tiles
// in the workspace: its floats, rounded up to whole 32-byte blocks.
inline uint64_t FaRowDFloats(const FlashAttentionTilingData &d) { return (uint64_t(d.qRows) * d.heads1 + 7) / 8 * 8; }
}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_TILING_DATA_H_
