// 16 x 16 and 8 x 8 transposes of 32-bit words in AVX-512 and AVX2 registers, shared by the twin's
// GEMMs (packing and storing).
#ifndef MS_OPS_TWIN_TRANSPOSE_H_
#define MS_OPS_TWIN_TRANSPOSE_H_

#ifdef __AVX512F__

#include "twin_intrin.h"

namespace ms_ops {
namespace twin {

// r[i] holds row i of a 16 x 16 block of words; afterwards r[j] holds its column j.
inline void Transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0xdd);
  }
}

// r[i] holds row i of an 8 x 8 block of words; afterwards r[j] holds its column j.
inline void Transpose8x8(__m256i r[8]) {
  __m256i t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // Per 128-bit lane, r[4i + j] then holds column j (low lane) and j + 4 (high lane) of rows 4i..4i+3.
  for (int i = 0; i < 2; ++i) {
    r[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm256_permute2x128_si256(r[j], r[4 + j], 0x20);
    t[4 + j] = _mm256_permute2x128_si256(r[j], r[4 + j], 0x31);
  }
  for (int j = 0; j < 8; ++j) r[j] = t[j];
}

}  // namespace twin
}  // namespace ms_ops

#endif  // __AVX512F__

#endif  // MS_OPS_TWIN_TRANSPOSE_H_
