#include "twin_bgemm.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace ms_ops {
namespace twin {
namespace {

// Register tile: kMr rows x kNr columns of C, 16 accumulators of 16 floats. Each step of the
// chain multiplies a pair of k: a 32-bit word of op(A) (two bf16 of one row) broadcast against
// a word of op(B) per column.
constexpr int kMr = 8, kNr = 32;
constexpr int kPairs = kBgemmKBlock / 2;
constexpr int kMc = static_cast<int>(kBgemmPackAWords / kPairs);  // rows of op(A) per packing
constexpr int kNc = static_cast<int>(kBgemmPackBWords / kPairs);  // columns of op(B) per packing
static_assert(kMc % kMr == 0 && kNc % kNr == 0, "packing blocks hold whole register tiles");

inline uint32_t Word(uint16_t lo, uint16_t hi) { return uint32_t(lo) | (uint32_t(hi) << 16); }

inline uint32_t Load32(const uint16_t *p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// Lines [0, n) contiguous in k (line i at x + i * ld), kk deep, as pairs: dst[p * width + i] holds
// elements 2p (low half) and 2p + 1 (high half) of line i; an odd kk's last element pairs with 0.
void PackLines(const uint16_t *x, int ld, int n, int kk, int width, uint32_t *dst) {
  const int full = kk / 2;
  for (int i = 0; i < n; ++i) {
    const uint16_t *line = x + size_t(i) * ld;
    for (int p = 0; p < full; ++p) dst[p * width + i] = Load32(line + 2 * p);
    if (kk % 2 != 0) dst[full * width + i] = Word(line[2 * full], 0);
  }
}

// Rows [r0, r0 + mr) of op(A), k [k0, k0 + kk), as pairs: dst[p * kMr + i] holds op(A)(r0 + i,
// k0 + 2p) in its low half and (r0 + i, k0 + 2p + 1) in its high half; zeros past the rows and
// past k.
void PackA(bool transA, const uint16_t *a, int lda, int r0, int mr, int k0, int kk, uint32_t *dst) {
  const int pairs = (kk + 1) / 2;
  if (mr < kMr) std::memset(dst, 0, sizeof(uint32_t) * kMr * pairs);
  if (!transA) return PackLines(a + size_t(r0) * lda + k0, lda, mr, kk, kMr, dst);
  for (int p = 0; p < pairs; ++p) {
    const uint16_t *x0 = a + size_t(k0 + 2 * p) * lda + r0;
    uint32_t *d = dst + p * kMr;
    if (2 * p + 1 < kk) {
      const uint16_t *x1 = x0 + lda;
      if (mr == kMr) {
        const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i *>(x0));
        const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i *>(x1));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d), _mm_unpacklo_epi16(lo, hi));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d + 4), _mm_unpackhi_epi16(lo, hi));
      } else {
        for (int i = 0; i < mr; ++i) d[i] = Word(x0[i], x1[i]);
      }
    } else {
      for (int i = 0; i < mr; ++i) d[i] = Word(x0[i], 0);
    }
  }
}

// Columns [c0, c0 + nr) of op(B), k [k0, k0 + kk), as pairs: dst[p * kNr + j] holds op(B)(k0 + 2p,
// c0 + j) low and (k0 + 2p + 1, c0 + j) high; zeros past the columns and past k.
void PackB(bool transB, const uint16_t *b, int ldb, int c0, int nr, int k0, int kk, uint32_t *dst) {
  const int pairs = (kk + 1) / 2;
  if (nr < kNr) std::memset(dst, 0, sizeof(uint32_t) * kNr * pairs);
  if (transB) return PackLines(b + size_t(c0) * ldb + k0, ldb, nr, kk, kNr, dst);
  for (int p = 0; p < pairs; ++p) {
    const uint16_t *x0 = b + size_t(k0 + 2 * p) * ldb + c0;
    uint32_t *d = dst + p * kNr;
    const bool pair = 2 * p + 1 < kk;
    if (nr == kNr && pair) {
      for (int h = 0; h < kNr; h += 16) {
        const __m512i lo = _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x0 + h)));
        const __m512i hi = _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x0 + ldb + h)));
        _mm512_storeu_si512(d + h, _mm512_or_si512(lo, _mm512_maskz_slli_epi32(0xFFFF, hi, 16)));
      }
    } else {
      for (int j = 0; j < nr; ++j) d[j] = Word(x0[j], pair ? x0[ldb + j] : uint16_t(0));
    }
  }
}

// C[mr x nr] (row stride ldc) = (store) or += the chain over `pairs` packed pairs.
void Kernel(const uint32_t *pa, const uint32_t *pb, int pairs, float *c, int ldc, int mr, int nr, bool store) {
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(pb + p * kNr);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(pb + p * kNr + 16);
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512bh x = (__m512bh)_mm512_set1_epi32(static_cast<int>(pa[p * kMr + i]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], x, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], x, b1);
    }
  }
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? __mmask16(0xFFFF) : nr > 16 ? __mmask16((1u << (nr - 16)) - 1) : __mmask16(0);
  for (int i = 0; i < mr; ++i) {
    float *row = c + size_t(i) * ldc;
    if (store) {
      _mm512_mask_storeu_ps(row, m0, acc[i][0]);
      _mm512_mask_storeu_ps(row + 16, m1, acc[i][1]);
    } else {
      _mm512_mask_storeu_ps(row, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, row), acc[i][0]));
      _mm512_mask_storeu_ps(row + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, row + 16), acc[i][1]));
    }
  }
}

}  // namespace

void Bgemm(bool transA, bool transB, int m, int n, int k, const uint16_t *a, int lda, const uint16_t *b, int ldb,
           float *c, int ldc, bool accumulate, uint32_t *packA, uint32_t *packB) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate)
      for (int r = 0; r < m; ++r) std::fill(c + size_t(r) * ldc, c + size_t(r) * ldc + n, 0.0f);
    return;
  }
  for (int jc = 0; jc < n; jc += kNc) {
    const int nc = std::min(kNc, n - jc);
    for (int k0 = 0; k0 < k; k0 += kBgemmKBlock) {
      const int kk = std::min(kBgemmKBlock, k - k0), pairs = (kk + 1) / 2;
      const bool store = k0 == 0 && !accumulate;
      for (int j = 0; j < nc; j += kNr)
        PackB(transB, b, ldb, jc + j, std::min(kNr, nc - j), k0, kk, packB + size_t(j / kNr) * kNr * pairs);
      for (int ic = 0; ic < m; ic += kMc) {
        const int mc = std::min(kMc, m - ic);
        for (int i = 0; i < mc; i += kMr)
          PackA(transA, a, lda, ic + i, std::min(kMr, mc - i), k0, kk, packA + size_t(i / kMr) * kMr * pairs);
        // One packed column panel of op(B) (16 KiB) stays in L1 while the row panels pass.
        for (int j = 0; j < nc; j += kNr) {
          const uint32_t *pb = packB + size_t(j / kNr) * kNr * pairs;
          for (int i = 0; i < mc; i += kMr)
            Kernel(packA + size_t(i / kMr) * kMr * pairs, pb, pairs, c + size_t(ic + i) * ldc + jc + j, ldc,
                   std::min(kMr, mc - i), std::min(kNr, nc - j), store);
        }
      }
    }
  }
}

}  // namespace twin
}  // namespace ms_ops

#endif
