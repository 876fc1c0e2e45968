// Tiling shared by linear_attention and linear_attention_grad (host and kernel).
// A head's query/key is S rows of D elements and its value/output S rows of Dv elements; element
// (b, s, n, d) sits at b*strideB + n*strideN + s*row + d, which covers BNSD (rows D apart) and
// BSND (rows N*D apart). The normalizer is [B, N, S] float32.
//
// The fp32 workspace of one block (offsets in floats from the block's start): the chunk's
// feature rows phi(Q), phi(K) [chunk, D], its value rows with a trailing 1 [chunk, Dv + 1] (so
// that one product also yields the normalizer's sum), the backward's [dO / den, r] rows of the
// same width, two chunk x chunk score tiles, two product tiles and two [D, Dv + 1] running states.
#ifndef MS_OPS_LINEAR_ATTENTION_TILING_DATA_H_
#define MS_OPS_LINEAR_ATTENTION_TILING_DATA_H_

#include <cstdint>

#include "../common/cube_tiling.h"

struct LinearAttentionTilingData {
  int64_t batch, heads, seq, dim, vdim;
  int64_t qStrideB, qStrideN, qRow;  // query, key and their gradients
  int64_t vStrideB, vStrideN, vRow;  // value, attention_out, its gradient and dv
  float eps;
  uint32_t causal;
  uint32_t chunk;    // rows per chunk
  uint32_t vdimExt;  // vdim + 1
  uint64_t offQf, offKf, offVf, offG, offA, offB, offO, offO2, offState, offGradState;
  uint64_t blockFloats;  // one block's workspace
  TCubeTiling mmNT;  // A x Bᵀ (phi(Q) phi(K)ᵀ, G V'ᵀ, G S'ᵀ, V' R'ᵀ)
  TCubeTiling mmNN;  // A x B (phi(Q) S', masked scores x V' or x phi(K))
  TCubeTiling mmTN;  // Aᵀ x B (state updates phi(K)ᵀ V', phi(Q)ᵀ G and the transposed tiles)
};

#endif  // MS_OPS_LINEAR_ATTENTION_TILING_DATA_H_
