// 8 x 8 and 16 x 16 transposes of 32-bit words in vector registers, shared by the twin's GEMMs
// (packing and storing).
#ifndef MS_OPS_TWIN_TRANSPOSE_H_
#define MS_OPS_TWIN_TRANSPOSE_H_

namespace ms_ops {
namespace twin {

// r[i] holds row i of an 8 x 8 block of 32-bit elements (V: an 8-lane vector of GCC's vector
// extension, float or integer); afterwards r[j] holds its column j. Three shuffle stages (unpack,
// pair, swap 128-bit halves), which GCC maps to the ISA's: AVX2's unpacks and permute2x128.
template <class V>
inline void Transpose8x8(V r[8]) {
  typedef int Index __attribute__((vector_size(32)));
  static_assert(sizeof(V) == sizeof(Index) && sizeof(r[0][0]) == 4, "8 lanes of 32 bits");
  V t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shuffle(r[i], r[i + 1], Index{0, 8, 1, 9, 4, 12, 5, 13});
    t[i + 1] = __builtin_shuffle(r[i], r[i + 1], Index{2, 10, 3, 11, 6, 14, 7, 15});
  }
  for (int i = 0; i < 8; i += 4)
    for (int h = 0; h < 2; ++h) {
      u[i + 2 * h] = __builtin_shuffle(t[i + h], t[i + h + 2], Index{0, 1, 8, 9, 4, 5, 12, 13});
      u[i + 2 * h + 1] = __builtin_shuffle(t[i + h], t[i + h + 2], Index{2, 3, 10, 11, 6, 7, 14, 15});
    }
  for (int j = 0; j < 4; ++j) {
    r[j] = __builtin_shuffle(u[j], u[j + 4], Index{0, 1, 2, 3, 8, 9, 10, 11});
    r[j + 4] = __builtin_shuffle(u[j], u[j + 4], Index{4, 5, 6, 7, 12, 13, 14, 15});
  }
}

}  // namespace twin
}  // namespace ms_ops

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

}  // namespace twin
}  // namespace ms_ops

#endif  // __AVX512F__

#endif  // MS_OPS_TWIN_TRANSPOSE_H_
