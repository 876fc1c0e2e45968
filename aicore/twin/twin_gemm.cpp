#include "twin_gemm.h"

#include "twin_transpose.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace ms_ops {
namespace twin {
namespace {

// GCC vector extensions rather than intrinsics: one source for AVX2, AVX-512 and anything else.
typedef float v8f __attribute__((vector_size(32)));

// Register tile: kMR streamed lines x NR packed lanes. With AVX-512 a panel row is one or two
// 16-lane vectors and 12 lines make 12 or 24 accumulators (of 32 zmm registers); otherwise two
// 8-lane vectors and 6 lines (16 ymm registers: 12 accumulators + 2 panel vectors + 1 broadcast,
// none spilled). 8-lane vectors on an AVX-512 core ran this kernel at half its FMA rate (105 of
// about 200 GFLOP/s on one Sapphire Rapids-class core). With one 16-lane vector a step is 13 loads
// (a panel row and 12 broadcasts) for 12 FMAs, bound by the two load ports; two vectors make it 14
// for 24, FMA-bound: 32 lanes where op(A) has more than 16 rows. Every C element gets the same
// operations whatever the width.
#ifdef __AVX512F__
typedef float vf __attribute__((vector_size(64)));
constexpr int kMR = 12, kWideNR = 32;
#else
typedef v8f vf;
constexpr int kMR = 6, kWideNR = 16;
#endif
constexpr int kNR = 16;
constexpr int kLanes = sizeof(vf) / sizeof(float);
// k depth of a packed block: a panel (16 or 32 KiB) and the kMR streamed lines stay in L1. Also
// the k block of the block-chain semantics (twin_blas.h): the fp16/bf16 widening panels of
// matmul_intf.h (kWidenPanel, 256) split k on its boundaries.
constexpr int kKC = 256;
// Rows of op(A) packed at a time (a 512 KiB block at kKC, kept in L2 while op(B)'s columns stream
// past it), and columns of B that the row path sweeps with every row of A before moving on (B's
// 480 KiB block stays in L2 while A's rows stream past).
constexpr int kMC = 512, kNC = 480;
// Rows of C from which the row path copies B's block first (kSR-row groups reading it: 8).
constexpr int kPackRows = 64;
// Lane-wise fused multiply-add. Written with fmaf, not `c + a * b`: the library is built with
// -std=c++17, where GCC does not contract, and contraction would be the compiler's choice anyway;
// fmaf is one rounding on every target, and GCC turns this loop into one vfmadd where the ISA has it.
inline vf Fma(vf a, vf b, vf c) {
#ifdef __AVX512F__
  // GCC makes 16 scalar fmaf calls of the lane loop at this width.
  return _mm512_fmadd_ps(a, b, c);
#elif defined(__FMA__)
  // And at 8 lanes, scalar ones too in the row kernel (its products ran at 38 of OpenBLAS's 127).
  return _mm256_fmadd_ps(a, b, c);
#else
  vf r;
  for (int l = 0; l < kLanes; ++l) r[l] = __builtin_fmaf(a[l], b[l], c[l]);
  return r;
#endif
}

#ifdef __AVX512F__
// A broadcast (which GCC folds into the multiply-add's memory operand), not `vf{} + x`, an add.
inline vf Splat(float x) { return _mm512_set1_ps(x); }
#elif defined(__AVX__)
inline vf Splat(float x) { return _mm256_set1_ps(x); }
#else
inline vf Splat(float x) { return vf{} + x; }
#endif

template <class V = v8f>
inline V Load(const float *p) {
  V v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <class V>
inline void Store(float *p, V v) { std::memcpy(p, &v, sizeof(v)); }

// w <= NR floats. Not a memcpy of w: GCC makes a variable-size copy `rep movs`, whose start-up
// cost per row dominated these short rows.
template <int NR>
inline void CopyRow(float *dst, const float *src, int w) {
  if (w == NR) {
    for (int h = 0; h < NR; h += 8) Store(dst + h, Load(src + h));
  } else {
    for (int l = 0; l < w; ++l) dst[l] = src[l];
  }
}

// t[r][l] += (fma chain from +0 over kk = 0..kc-1 of line[r][kk * ks] * panel[kk][l]): the one
// arithmetic of every C element (line r a column of op(B), lane l a row of op(A)). A partial per
// k block, added to C, as OpenBLAS sums: one chain over all of k loses accuracy that the kernels'
// error bounds expect.
template <int NR>
void Micro(int kc, const float *panel, const float *const line[kMR], ptrdiff_t ks, float *t, bool add = true) {
  constexpr int kVecs = NR / kLanes;
  vf acc[kMR][kVecs];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r)
    for (int h = 0; h < kVecs; ++h) acc[r][h] = vf{};
  ptrdiff_t o = 0;
  for (int kk = 0; kk < kc; ++kk, o += ks, panel += NR) {
    vf b[kVecs];
    for (int h = 0; h < kVecs; ++h) b[h] = Load<vf>(panel + h * kLanes);
#pragma GCC unroll 12  // the accumulators must stay registers
    for (int r = 0; r < kMR; ++r) {
      const vf s = Splat(line[r][o]);
      for (int h = 0; h < kVecs; ++h) acc[r][h] = Fma(s, b[h], acc[r][h]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r)
    for (int h = 0; h < kVecs; ++h)
      Store(t + r * NR + h * kLanes, add ? Load<vf>(t + r * NR + h * kLanes) + acc[r][h] : acc[r][h]);
}

#ifdef __AVX512F__
// Lines [0, nr) of a register tile's sums t (line r's NR lanes at t + r * NR) into C's rows
// [0, mr) (row i, column r: lane i of line r), added to C's values when `load`: 16 x 16
// transposes and masked row stores, where element by element the stores were a third of the
// kernel's time.
template <int NR>
void StoreTransposed(const float *t, float *c, int ldc, int mr, int nr, bool load) {
  static_assert(NR % 16 == 0 && kMR <= 16, "16 x 16 transposes hold the tile");
  const __mmask16 m = static_cast<__mmask16>((1u << nr) - 1);
  for (int h = 0; h * 16 < mr; ++h) {
    __m512i r[16];
    for (int l = 0; l < 16; ++l)
      r[l] = l < kMR ? _mm512_castps_si512(_mm512_load_ps(t + l * NR + h * 16)) : _mm512_setzero_si512();
    Transpose16(r);
    for (int i = h * 16; i < mr && i < h * 16 + 16; ++i) {
      float *row = c + size_t(i) * ldc;
      __m512 v = _mm512_castsi512_ps(r[i - h * 16]);
      if (load) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, row), v);
      _mm512_mask_storeu_ps(row, m, v);
    }
  }
}
#endif

// A matrix read in place: element (i, kk) at p[i * rs + kk * ks].
struct View {
  const float *p;
  ptrdiff_t rs, ks;
  const float *At(int i, int kk) const { return p + i * rs + kk * ks; }
};

// op(X) of a stored row-major X with leading dimension ld, as rows x depth: transposed, its
// element (i, kk) is X[kk][i].
View Op(const float *x, int ld, bool trans) { return trans ? View{x, 1, ld} : View{x, ld, 1}; }

// Lanes l = 0..7 of out (row stride NR) for depths 0..7 from line[l][0..7].
template <int NR>
void Transpose8(const float *const line[8], float *out) {
  v8f r[8];
  for (int i = 0; i < 8; ++i) r[i] = Load(line[i]);
  Transpose8x8(r);
  for (int j = 0; j < 8; ++j) Store(out + j * NR, r[j]);
}

#if !defined(__AVX512F__)
// StoreTransposed's contract without AVX-512: 8 x 8 transposes of the tile, then each row's nr
// <= kMR columns as one 4-float and one 2-float store (masked ymm stores are slow on AMD cores).
// Element by element, the stores and C's loads took about a quarter of an AVX2 build's products
// of 128 x 512 x 128.
template <int NR>
void StoreTransposed(const float *t, float *c, int ldc, int mr, int nr, bool load) {
  static_assert(kMR == 6, "each row's columns are stored as 4 + 2");
  for (int h = 0; h * 8 < mr; ++h) {
    v8f r[8];
    for (int l = 0; l < 8; ++l) r[l] = l < kMR ? Load(t + l * NR + h * 8) : v8f{};
    Transpose8x8(r);
    for (int i = h * 8; i < mr && i < h * 8 + 8; ++i) {
      float *row = c + size_t(i) * ldc;
      const v8f v = r[i - h * 8];
#ifdef __AVX__
      if (nr == kMR) {
        __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
        if (load) {
          lo = _mm_add_ps(_mm_loadu_ps(row), lo);
          hi = _mm_add_ps(_mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64 *>(row + 4)), hi);
        }
        _mm_storeu_ps(row, lo);
        _mm_storel_pi(reinterpret_cast<__m64 *>(row + 4), hi);
        continue;
      }
#endif
      for (int l = 0; l < nr; ++l) row[l] = load ? row[l] + v[l] : v[l];
    }
  }
}
#endif

// Packs the first `lanes` lines of v (depth k0..k0+kc-1) into panels of NR lanes, each kc x
// NR contiguous in kk; lanes past the end are zero (their results are never stored).
template <int NR>
void Pack(const View &v, int lanes, int k0, int kc, float *out) {
  for (int p = 0; p < lanes; p += NR, out += kc * NR) {
    const int w = std::min(NR, lanes - p);
    if (w < NR) std::memset(out, 0, sizeof(float) * kc * NR);
    if (v.ks == 1) {  // each line contiguous in depth: a transpose, 8 x 8 at a time
      int kk = 0;
      if (w == NR)
        for (; kk + 8 <= kc; kk += 8)
          for (int h = 0; h < NR; h += 8) {
            const float *line[8];
            for (int l = 0; l < 8; ++l) line[l] = v.At(p + h + l, k0 + kk);
            Transpose8<NR>(line, out + kk * NR + h);
          }
      for (int l = 0; l < w; ++l) {
        const float *src = v.At(p + l, k0);
        for (int k = kk; k < kc; ++k) out[k * NR + l] = src[k];
      }
    } else {  // lines adjacent (rs == 1): every View that Op makes is contiguous along one of them
      for (int kk = 0; kk < kc; ++kk) CopyRow<NR>(out + kk * NR, v.At(p, k0 + kk), w);
    }
  }
}

// kMR streamed lines from line j0 at depth k0; past the last of `count` lines, the last one again
// (computed, never stored), so that edge tiles run the same Micro.
void Lines(const View &v, int j0, int count, int k0, const float *line[kMR]) {
  for (int r = 0; r < kMR; ++r) line[r] = v.At(j0 + std::min(r, count - 1), k0);
}

// Lines [j0, j0 + count) of v (each contiguous in depth) at depth k0..k0+kc-1 asked into L2
// while the lines before them are used: the hardware prefetcher does not follow a register
// tile's 12 streams. With every operand in memory 256 x 512 x 128 ran at 87 GFLOP/s (193 warm);
// this and PrefetchColumns took it to 119-129 (OpenBLAS 131-134).
void PrefetchLines(const View &v, int j0, int count, int k0, int kc) {
  for (int r = 0; r < count; ++r) {
    const char *p = reinterpret_cast<const char *>(v.At(j0 + r, k0));
    for (int o = 0; o < kc * int(sizeof(float)); o += 64) __builtin_prefetch(p + o, 0, 2);
  }
}

// Columns [0, w) of `rows` rows of C asked into L2 for writing, a register tile's width ahead of
// its stores: PackedA writes C a few columns at a time down all rows, a pattern the hardware
// prefetcher does not follow, and a C not in cache ran 256 x 512 x 128 at 142 against 181 GFLOP/s
// with C cached (OpenBLAS: 159 and 168).
void PrefetchColumns(const float *c, int ldc, int rows, int w) {
  for (int i = 0; i < rows; ++i) {
    __builtin_prefetch(c + size_t(i) * ldc, 1, 2);
    __builtin_prefetch(c + size_t(i) * ldc + w - 1, 1, 2);
  }
}

// Per-thread packing buffers (kBuffers of them), 64-byte aligned: Gemm runs on many threads at once.
constexpr int kBuffers = 2;
float *Buffer(int slot, size_t floats) {
  struct Free {
    void operator()(float *p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Free> buf[kBuffers];
  thread_local size_t size[kBuffers] = {};
  if (floats > size[slot]) {
    const size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    buf[slot].reset(static_cast<float *>(std::aligned_alloc(64, bytes)));
    size[slot] = bytes / sizeof(float);
  }
  return buf[slot].get();
}

// C^T = op(B)^T op(A)^T: op(A) packed (its rows are the lanes), the columns of op(B) streamed,
// each register tile stored transposed.
template <int NR>
void PackedA(const View &a, const View &bt, int m, int n, int k, float *c, int ldc, bool accumulate) {
  alignas(64) float t[kMR * NR];
  const float *line[kMR];
  for (int pc = 0; pc < k; pc += kKC) {
    const int kc = std::min(kKC, k - pc);
    const bool load = accumulate || pc > 0;
    for (int i0 = 0; i0 < m; i0 += kMC) {
      const int mc = std::min(kMC, m - i0);
      PrefetchColumns(c + size_t(i0) * ldc, ldc, mc, std::min(kMR, n));
      float *packed = Buffer(0, size_t(kc) * ((mc + NR - 1) / NR * NR));
      Pack<NR>(View{a.At(i0, 0), a.rs, a.ks}, mc, pc, kc, packed);
      for (int j0 = 0; j0 < n; j0 += kMR) {
        const int nr = std::min(kMR, n - j0);
        Lines(bt, j0, nr, pc, line);
        PrefetchLines(bt, j0 + kMR, std::min(kMR, n - j0 - kMR), pc, kc);
        for (int p = 0; p < mc; p += NR) {
          const int mr = std::min(NR, mc - p);
          float *cb = c + size_t(i0 + p) * ldc + j0;
          if (j0 + kMR < n) PrefetchColumns(cb + kMR, ldc, mr, std::min(kMR, n - j0 - kMR));
          Micro<NR>(kc, packed + size_t(p) * kc, line, bt.ks, t, false);
          StoreTransposed<NR>(t, cb, ldc, mr, nr, load);
        }
      }
    }
  }
}

// C = op(A) B (+ C when `accumulate`) with B's rows contiguous: each row of C straight from B's
// rows, kSR rows by kSV vectors at a time, no transpose. PackedA streams B's columns as lines here
// (12 broadcasts from one row of B per step) and pays a 16 x 16 transpose per register tile
// whatever k is: on one Sapphire Rapids-class core, 16 x 576 x 128 ran at 147 against 194 GFLOP/s
// this way, 16 x 576 x 512 at 103 against 134, and at k = 16 (the sparse attention gradient's
// dSᵀ Q over a group of 16 heads) PackedA with its packing was slower than OpenBLAS. 8 x 48 tiles
// rather than 4 x 64: 16 accumulators left the loop waiting on FMA latency (256 x 128 x 512: 131
// against 195 GFLOP/s), and 12 x 32 ran 16-row products with a 4-row remainder (81 against 166).
// Each element gets Micro's arithmetic: per block of kKC k, one chain from +0, added to C.
#ifdef __AVX512F__
constexpr int kSR = 8, kSV = 3;  // 24 accumulators + 3 rows of B + 1 broadcast of 32 zmm registers
#else
// 12 + 2 + 1 of 16 ymm registers: 4 x 2 tiles (8 accumulators) ran 128 x 512 x 1008 at 106 GFLOP/s
// against 122 on a Zen 5 core built for AVX2.
constexpr int kSR = 6, kSV = 2;
#endif

template <int R, int V>
inline void RowsTile(const View &a, int i0, const float *b, int ldb, int j0, int k, float *c, int ldc,
                        bool accumulate) {
  vf acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < V; ++h) acc[r][h] = vf{};
  for (int kk = 0; kk < k; ++kk) {
    vf bv[V];
    for (int h = 0; h < V; ++h) bv[h] = Load<vf>(b + size_t(kk) * ldb + j0 + h * kLanes);
    for (int r = 0; r < R; ++r) {
      const vf s = Splat(*a.At(i0 + r, kk));
      for (int h = 0; h < V; ++h) acc[r][h] = Fma(s, bv[h], acc[r][h]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < V; ++h) {
      float *p = c + size_t(i0 + r) * ldc + j0 + h * kLanes;
      Store(p, accumulate ? Load<vf>(p) + acc[r][h] : acc[r][h]);
    }
}

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
// The first w lanes of a vector: masked loads give 0 in the others, masked stores leave them.
#ifdef __AVX512F__
typedef __mmask16 Lanes;
inline Lanes FirstLanes(int w) { return static_cast<__mmask16>((1u << w) - 1); }
inline vf LoadLanes(Lanes m, const float *p) { return (vf)_mm512_maskz_loadu_ps(m, p); }
inline void StoreLanes(Lanes m, float *p, vf v) { _mm512_mask_storeu_ps(p, m, (__m512)v); }
#else
typedef __m256i Lanes;
inline Lanes FirstLanes(int w) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(w), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline vf LoadLanes(Lanes m, const float *p) { return (vf)_mm256_maskload_ps(p, m); }
inline void StoreLanes(Lanes m, float *p, vf v) { _mm256_maskstore_ps(p, m, (__m256)v); }
#endif

// RowsTile's arithmetic on the last w < kLanes columns, through masked loads and stores: a scalar
// chain per element ran these columns at a fiftieth of the vector rate with AVX-512, and made the
// 7 last columns of 128 x 111 x 512 three quarters of its time with AVX2 (28 against 119 GFLOP/s at
// 112 columns).
template <int R>
void RowsTail(const View &a, int i0, const float *b, int ldb, int j0, int w, int k, float *c, int ldc,
              bool accumulate) {
  const Lanes mask = FirstLanes(w);
  vf acc[R];
  for (int r = 0; r < R; ++r) acc[r] = vf{};
  for (int kk = 0; kk < k; ++kk) {
    const vf bv = LoadLanes(mask, b + size_t(kk) * ldb + j0);
    for (int r = 0; r < R; ++r) acc[r] = Fma(Splat(*a.At(i0 + r, kk)), bv, acc[r]);
  }
  for (int r = 0; r < R; ++r) {
    float *p = c + size_t(i0 + r) * ldc + j0;
    StoreLanes(mask, p, accumulate ? LoadLanes(mask, p) + acc[r] : acc[r]);
  }
}
#else
// Without masked loads and stores: one scalar chain per element of the last w columns.
template <int R>
void RowsTail(const View &a, int i0, const float *b, int ldb, int j0, int w, int k, float *c, int ldc,
              bool accumulate) {
  for (int j = j0; j < j0 + w; ++j)
    for (int r = 0; r < R; ++r) {
      float t = 0.0f;
      for (int kk = 0; kk < k; ++kk) t = __builtin_fmaf(*a.At(i0 + r, kk), b[size_t(kk) * ldb + j], t);
      float &e = c[size_t(i0 + r) * ldc + j];
      e = accumulate ? e + t : t;
    }
}
#endif

template <int R, int V>
void RowsOfC(const View &a, int i0, const float *b, int ldb, int n, int k, float *c, int ldc, bool accumulate) {
  int j0 = 0;
  for (; j0 + V * kLanes <= n; j0 += V * kLanes) RowsTile<R, V>(a, i0, b, ldb, j0, k, c, ldc, accumulate);
  // The rest in as few tiles as fit: single-vector tiles are bound by their loads (one row of B
  // and R broadcasts for R FMAs).
  if constexpr (V > 2) {
    if (j0 + 2 * kLanes <= n) {
      RowsTile<R, 2>(a, i0, b, ldb, j0, k, c, ldc, accumulate);
      j0 += 2 * kLanes;
    }
  }
  for (; j0 + kLanes <= n; j0 += kLanes) RowsTile<R, 1>(a, i0, b, ldb, j0, k, c, ldc, accumulate);
  if (j0 < n) RowsTail<R>(a, i0, b, ldb, j0, n - j0, k, c, ldc, accumulate);
}

// Rows of C in groups of R (then 8, 4 and single rows), each RowsOfC<., V>.
template <int R, int V>
void RowGroups(const View &a, const float *b, int ldb, int m, int n, int k, float *c, int ldc, bool accumulate) {
  int i0 = 0;
  for (; i0 + R <= m; i0 += R) RowsOfC<R, V>(a, i0, b, ldb, n, k, c, ldc, accumulate);
  if constexpr (R > 8) {
    if (i0 + 8 <= m) {
      RowsOfC<8, V>(a, i0, b, ldb, n, k, c, ldc, accumulate);
      i0 += 8;
    }
  }
  if constexpr (R > 4) {
    if (i0 + 4 <= m) {
      RowsOfC<4, V>(a, i0, b, ldb, n, k, c, ldc, accumulate);
      i0 += 4;
    }
  }
  for (; i0 < m; ++i0) RowsOfC<1, V>(a, i0, b, ldb, n, k, c, ldc, accumulate);
}

void FromRowsOfB(const View &a, const float *b, int ldb, int m, int n, int k, float *c, int ldc, bool accumulate) {
  for (int pc = 0; pc < k; pc += kKC) {
    const int kc = std::min(kKC, k - pc);
    const bool add = accumulate || pc > 0;
    const View ak{a.At(0, pc), a.rs, a.ks};
    for (int j0 = 0; j0 < n; j0 += kNC) {
      const int nc = std::min(kNC, n - j0);
      const float *bk = b + size_t(pc) * ldb + j0;
      int ld = ldb;
      if (m >= kPackRows) {
        // B's block copied with a row stride that is no multiple of 1 KiB: B's rows in place
        // (a BSND tensor's 4 KiB apart) share a few cache sets (256 x 128 x 512 ran at 159
        // against 194 GFLOP/s with B's rows 4 KiB apart, at 136 with 8 KiB).
        ld = (nc + 15) / 16 * 16 + 16;
        float *packed = Buffer(1, size_t(kc) * ld);
        for (int kk = 0; kk < kc; ++kk)
          std::memcpy(packed + size_t(kk) * ld, bk + size_t(kk) * ldb, sizeof(float) * nc);
        bk = packed;
      }
#ifdef __AVX512F__
      // Widths that are whole 32-column tiles but not 48-column ones (128: a head dim) in 12 x 32
      // tiles, the same 24 accumulators, rather than leave a third of the columns to 8 x 32 ones.
      if (nc % (3 * kLanes) != 0 && nc % (2 * kLanes) == 0 && m >= 12) {
        RowGroups<12, 2>(ak, bk, ld, m, nc, kc, c + j0, ldc, add);
        continue;
      }
#endif
      RowGroups<kSR, kSV>(ak, bk, ld, m, nc, kc, c + j0, ldc, add);
    }
  }
}

}  // namespace

void Gemm(bool transA, bool transB, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,
          int ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate)
      for (int i = 0; i < m; ++i) std::memset(c + size_t(i) * ldc, 0, sizeof(float) * n);
    return;
  }
  if (!transB) return FromRowsOfB(Op(a, lda, transA), b, ldb, m, n, k, c, ldc, accumulate);
  // op(A) as m lines of depth k; op(B) as n lines (its columns) of depth k.
  if (m > kNR) return PackedA<kWideNR>(Op(a, lda, transA), Op(b, ldb, !transB), m, n, k, c, ldc, accumulate);
  PackedA<kNR>(Op(a, lda, transA), Op(b, ldb, !transB), m, n, k, c, ldc, accumulate);
}

}  // namespace twin
}  // namespace ms_ops
