// Tiling shared by flash_attention_score and flash_attention_score_grad (host and kernel).
// A head's Q/K/V/O is a matrix of S rows of D elements; rows are `rowStride` elements apart and
// element (b, s, n, d) sits at b*strideB + n*strideN + s*rowStride + d, which covers the layouts
// BSH/BSND (rows N*D apart), SBH (rows B*N*D apart) and BNSD (rows D apart).
#ifndef MS_OPS_FLASH_ATTENTION_TILING_DATA_H_
#define MS_OPS_FLASH_ATTENTION_TILING_DATA_H_

#include <cstdint>

#include "../common/cube_tiling.h"

struct FlashAttentionTilingData {
  int64_t batch, heads1, heads2, seq1, seq2, dim;
  int64_t qStrideB, qStrideN, qRow;   // query, attention_out and its gradient
  int64_t kStrideB, kStrideN, kRow;   // key and value
  // Key j is visible to query s iff s + lowOffset <= j <= s + highOffset (sparse_mode and
  // pre/next_tokens folded by the host; clamped to [0, S2)).
  int64_t lowOffset, highOffset;
  float scale;
  uint32_t mTile;  // query rows per tile
  uint32_t nTile;  // key rows per tile
  uint32_t pad;
  TCubeTiling mmNT;  // A x Bᵀ (S = Q Kᵀ, dP = dO Vᵀ)
  TCubeTiling mmNN;  // A x B (O += P V, dQ += dS K)
  TCubeTiling mmTN;  // Aᵀ x B (dV += Pᵀ dO, dK += dSᵀ Q); unused by the forward
};

#endif  // MS_OPS_FLASH_ATTENTION_TILING_DATA_H_
