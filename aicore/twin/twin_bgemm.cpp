#include "twin_bgemm.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__)

#include "twin_transpose.h"

#include <algorithm>
#include <cstring>

#if defined(__AMX_TILE__) && defined(__AMX_BF16__)
#define MS_OPS_TWIN_AMX 1
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#else
#define MS_OPS_TWIN_AMX 0
#endif

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
// A whole panel of op(A) (8 lines) goes 8 pairs at a time through a transpose: word by word, its
// packing took a tenth of a bf16 flash-attention forward's time.
void PackLines(const uint16_t *x, int ld, int n, int kk, int width, uint32_t *dst) {
  const int full = kk / 2;
  int p0 = 0;
  if (n == 8 && width == 8) {
    typedef uint32_t Pairs __attribute__((vector_size(32)));
    for (; p0 + 8 <= full; p0 += 8) {
      Pairs r[8];
      for (int i = 0; i < 8; ++i) std::memcpy(&r[i], x + size_t(i) * ld + 2 * p0, sizeof(Pairs));
      Transpose8x8(r);
      for (int q = 0; q < 8; ++q) std::memcpy(dst + (p0 + q) * width, &r[q], sizeof(Pairs));
    }
  }
  for (int i = 0; i < n; ++i) {
    const uint16_t *line = x + size_t(i) * ld;
    for (int p = p0; p < full; ++p) dst[p * width + i] = Load32(line + 2 * p);
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
  if (transB && nr == kNr && kk % 32 == 0) {
    // B's rows are op(B)'s columns, k contiguous: 16 x 16 blocks of words, transposed.
    for (int h = 0; h < kNr; h += 16)
      for (int p0 = 0; p0 < pairs; p0 += 16) {
        __m512i r[16];
        for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_si512(b + size_t(c0 + h + j) * ldb + k0 + 2 * p0);
        Transpose16(r);
        for (int q = 0; q < 16; ++q) _mm512_storeu_si512(dst + (p0 + q) * kNr + h, r[q]);
      }
    return;
  }
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

// The first nr (<= 32) columns of a row of C = (store) or += v0 (columns 0-15) and v1 (16-31).
inline void PutRow(float *row, __m512 v0, __m512 v1, int nr, bool store) {
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? __mmask16(0xFFFF) : nr > 16 ? __mmask16((1u << (nr - 16)) - 1) : __mmask16(0);
  if (!store) {
    v0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, row), v0);
    v1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, row + 16), v1);
  }
  _mm512_mask_storeu_ps(row, m0, v0);
  _mm512_mask_storeu_ps(row + 16, m1, v1);
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
  for (int i = 0; i < mr; ++i) PutRow(c + size_t(i) * ldc, acc[i][0], acc[i][1], nr, store);
}

#if MS_OPS_TWIN_AMX
// The AMX path. A tile is 16 rows of 64 bytes: for op(A), 16 rows x 16 pairs of k; for op(B), 16
// pairs of k x 16 columns (kNr-wide packed panels hold two); for C, 16 x 16 floats. A micro-kernel
// makes a 32 x 32 block of C from 2 x 2 C tiles (tmm0-3), two A tiles (tmm4-5) and two B tiles
// (tmm6-7); TDPBF16PS runs each element's chain over the pairs in order, as the register path does.
constexpr int kTile = 16, kStrip = 32;
static_assert(kNr == 2 * kTile && kMc % kStrip == 0, "a packed B panel is two B tiles wide");

// Linux gives a process AMX's tile state (8 KiB per thread) only when it asks; before that the
// first tile instruction faults.
bool AmxPermitted() {
  static const bool ok = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
  return ok;
}

// 1: AMX; 0: VDPBF16PS (no AMX in the build, no permission, or turned off by BgemmAmx(0)).
std::atomic<int> g_amx{-1};

bool UseAmx() {
  int v = g_amx.load(std::memory_order_relaxed);
  if (v < 0) {
    v = AmxPermitted() ? 1 : 0;
    g_amx.store(v, std::memory_order_relaxed);
  }
  return v != 0;
}

struct alignas(64) TileConfig {
  uint8_t palette, startRow, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

const TileConfig &Config() {
  static const TileConfig cfg = [] {
    TileConfig c{};
    c.palette = 1;
    for (int t = 0; t < 8; ++t) {
      c.colsb[t] = 64;
      c.rows[t] = kTile;
    }
    return c;
  }();
  return cfg;
}

// Rows [r0, r0 + mr) of op(A) (mr <= kStrip), k [k0, k0 + kk), as tile rows: dst[i * pairsPad + p]
// holds op(A)(r0 + i, k0 + 2p) low and (r0 + i, k0 + 2p + 1) high; zeros past the rows (up to 16
// or 32) and past k (up to pairsPad pairs).
void PackAStrip(bool transA, const uint16_t *a, int lda, int r0, int mr, int k0, int kk, int pairsPad,
                uint32_t *dst) {
  const int rowsPad = mr > kTile ? kStrip : kTile;
  std::memset(dst, 0, sizeof(uint32_t) * rowsPad * pairsPad);
  if (!transA) {
    for (int i = 0; i < mr; ++i)
      std::memcpy(dst + size_t(i) * pairsPad, a + size_t(r0 + i) * lda + k0, sizeof(uint16_t) * kk);
    return;
  }
  const int pairs = (kk + 1) / 2;
  int i0 = 0;
  if (kk % 32 == 0)
    // A's rows are op(A)'s columns: each pair of them interleaved into words, 16 x 16 blocks transposed.
    for (; i0 + kTile <= mr; i0 += kTile)
      for (int p0 = 0; p0 < pairs; p0 += 16) {
        __m512i r[16];
        for (int q = 0; q < 16; ++q) {
          const uint16_t *x0 = a + size_t(k0 + 2 * (p0 + q)) * lda + r0 + i0;
          const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x0)));
          const __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x0 + lda)));
          r[q] = _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
        }
        Transpose16(r);
        for (int i = 0; i < 16; ++i) _mm512_storeu_si512(dst + size_t(i0 + i) * pairsPad + p0, r[i]);
      }
  for (int p = 0; p < pairs; ++p) {
    const uint16_t *x0 = a + size_t(k0 + 2 * p) * lda + r0;
    for (int i = i0; i < mr; ++i) dst[size_t(i) * pairsPad + p] = Word(x0[i], 2 * p + 1 < kk ? x0[lda + i] : 0);
  }
}

// C[mr x nr] (row stride ldc) = (store) or += the chains over `steps` x 16 pairs: op(A)'s rows from
// `a` (tile rows, `aStride` bytes apart; 16 of them, or 32 when mr > 16), op(B) from a packed panel.
void TileKernel(const uint8_t *a, long aStride, const uint32_t *pb, int steps, float *c, int ldc, int mr, int nr,
                bool store) {
  const bool two = mr > kTile;
  _tile_zero(0);
  _tile_zero(1);
  if (two) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int s = 0; s < steps; ++s) {
    const uint32_t *b = pb + s * kTile * kNr;
    _tile_loadd(6, b, kNr * 4);
    _tile_loadd(7, b + kTile, kNr * 4);
    _tile_loadd(4, a + s * 64, aStride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if (two) {
      _tile_loadd(5, a + kTile * aStride + s * 64, aStride);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  if (store && nr == kNr && (mr == kTile || mr == kStrip)) {
    // Whole tiles of C, stored in place.
    const long stride = long(ldc) * 4;
    _tile_stored(0, c, stride);
    _tile_stored(1, c + kTile, stride);
    if (two) {
      _tile_stored(2, c + size_t(kTile) * ldc, stride);
      _tile_stored(3, c + size_t(kTile) * ldc + kTile, stride);
    }
    return;
  }
  alignas(64) float acc[kStrip][kNr];
  _tile_stored(0, &acc[0][0], kNr * 4);
  _tile_stored(1, &acc[0][kTile], kNr * 4);
  if (two) {
    _tile_stored(2, &acc[kTile][0], kNr * 4);
    _tile_stored(3, &acc[kTile][kTile], kNr * 4);
  }
  for (int i = 0; i < mr; ++i)
    PutRow(c + size_t(i) * ldc, _mm512_load_ps(&acc[i][0]), _mm512_load_ps(&acc[i][kTile]), nr, store);
}

void AmxGemm(bool transA, bool transB, int m, int n, int k, const uint16_t *a, int lda, const uint16_t *b, int ldb,
             float *c, int ldc, bool accumulate, uint32_t *packA, uint32_t *packB) {
  _tile_loadconfig(&Config());
  for (int jc = 0; jc < n; jc += kNc) {
    const int nc = std::min(kNc, n - jc);
    for (int k0 = 0; k0 < k; k0 += kBgemmKBlock) {
      const int kk = std::min(kBgemmKBlock, k - k0), pairs = (kk + 1) / 2;
      const int pairsPad = (pairs + kTile - 1) / kTile * kTile, steps = pairsPad / kTile;
      const bool store = k0 == 0 && !accumulate;
      for (int j = 0; j < nc; j += kNr) {
        uint32_t *panel = packB + size_t(j / kNr) * kNr * pairsPad;
        PackB(transB, b, ldb, jc + j, std::min(kNr, nc - j), k0, kk, panel);
        std::memset(panel + size_t(pairs) * kNr, 0, sizeof(uint32_t) * kNr * (pairsPad - pairs));
      }
      for (int ic = 0; ic < m; ic += kMc) {
        const int mc = std::min(kMc, m - ic);
        const uint8_t *strip[kMc / kStrip];
        long stride[kMc / kStrip];
        for (int i = 0; i < mc; i += kStrip) {
          const int mr = std::min(kStrip, mc - i);
          if (!transA && kk % 32 == 0 && (mr == kTile || mr == kStrip)) {
            // Whole tiles of A's rows: loaded in place.
            strip[i / kStrip] = reinterpret_cast<const uint8_t *>(a + size_t(ic + i) * lda + k0);
            stride[i / kStrip] = long(lda) * 2;
          } else {
            uint32_t *dst = packA + size_t(i / kStrip) * kStrip * pairsPad;
            PackAStrip(transA, a, lda, ic + i, mr, k0, kk, pairsPad, dst);
            strip[i / kStrip] = reinterpret_cast<const uint8_t *>(dst);
            stride[i / kStrip] = long(pairsPad) * 4;
          }
        }
        for (int j = 0; j < nc; j += kNr) {
          const uint32_t *pb = packB + size_t(j / kNr) * kNr * pairsPad;
          for (int i = 0; i < mc; i += kStrip)
            TileKernel(strip[i / kStrip], stride[i / kStrip], pb, steps, c + size_t(ic + i) * ldc + jc + j, ldc,
                       std::min(kStrip, mc - i), std::min(kNr, nc - j), store);
        }
      }
    }
  }
  // Tiles back to their initial state: a context switch then saves none of their 8 KiB.
  _tile_release();
}
#endif

}  // namespace

int BgemmAmx(int request) {
#if MS_OPS_TWIN_AMX
  if (request >= 0) g_amx.store(request != 0 && AmxPermitted() ? 1 : 0, std::memory_order_relaxed);
  return UseAmx() ? 1 : 0;
#else
  (void)request;
  return 0;
#endif
}

void Bgemm(bool transA, bool transB, int m, int n, int k, const uint16_t *a, int lda, const uint16_t *b, int ldb,
           float *c, int ldc, bool accumulate, uint32_t *packA, uint32_t *packB) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate)
      for (int r = 0; r < m; ++r) std::fill(c + size_t(r) * ldc, c + size_t(r) * ldc + n, 0.0f);
    return;
  }
#if MS_OPS_TWIN_AMX
  if (UseAmx()) return AmxGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate, packA, packB);
#endif
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

#else

namespace ms_ops {
namespace twin {

int BgemmAmx(int) { return 0; }

}  // namespace twin
}  // namespace ms_ops

#endif
