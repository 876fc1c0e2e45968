#include "twin_gemm.h"

#include "twin_transpose.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace ms_ops {
namespace twin {
namespace {

// GCC vector extensions rather than intrinsics: one source for AVX2, AVX-512 and anything else.
typedef float v8f __attribute__((vector_size(32)));

// Register tile: kMR streamed lines x kNR packed lanes. With AVX-512 a panel row is one 16-lane
// vector and 12 lines make 12 accumulators (of 32 zmm registers); otherwise two 8-lane vectors
// and 6 lines (16 ymm registers: 12 accumulators + 2 panel vectors + 1 broadcast, none spilled).
// 8-lane vectors on an AVX-512 core ran this kernel at half its FMA rate (105 of about 200
// GFLOP/s on one Sapphire Rapids-class core). Every C element gets the same operations either way.
constexpr int kNR = 16;
#ifdef __AVX512F__
typedef float vf __attribute__((vector_size(64)));
constexpr int kMR = 12;
#else
typedef v8f vf;
constexpr int kMR = 6;
#endif
constexpr int kLanes = sizeof(vf) / sizeof(float), kVecs = kNR / kLanes;
// k depth of a packed block: a kNR-wide panel (16 KiB) and the kMR streamed lines stay in L1. Also
// the k block of the block-chain semantics (twin_blas.h): the fp16/bf16 widening panels of
// matmul_intf.h (kWidenPanel, 256) split k on its boundaries.
constexpr int kKC = 256;

// Lane-wise fused multiply-add. Written with fmaf, not `c + a * b`: the library is built with
// -std=c++17, where GCC does not contract, and contraction would be the compiler's choice anyway;
// fmaf is one rounding on every target, and GCC turns this loop into one vfmadd where the ISA has it.
inline vf Fma(vf a, vf b, vf c) {
#ifdef __AVX512F__
  // GCC makes 16 scalar fmaf calls of the lane loop at this width.
  return _mm512_fmadd_ps(a, b, c);
#else
  vf r;
  for (int l = 0; l < kLanes; ++l) r[l] = __builtin_fmaf(a[l], b[l], c[l]);
  return r;
#endif
}

#ifdef __AVX512F__
// A broadcast (which GCC folds into the multiply-add's memory operand), not `vf{} + x`, an add.
inline vf Splat(float x) { return _mm512_set1_ps(x); }
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

// w <= kNR floats. Not a memcpy of w: GCC makes a variable-size copy `rep movs`, whose start-up
// cost per row dominated these short rows.
inline void CopyRow(float *dst, const float *src, int w) {
  if (w == kNR) {
    Store(dst, Load(src));
    Store(dst + 8, Load(src + 8));
  } else {
    for (int l = 0; l < w; ++l) dst[l] = src[l];
  }
}

// t[r][l] += (fma chain from +0 over kk = 0..kc-1 of line[r][kk * ks] * panel[kk][l]): the one
// arithmetic of every C element (line r a column of op(B), lane l a row of op(A)). A partial per
// k block, added to C, as OpenBLAS sums: one chain over all of k loses accuracy that the kernels'
// error bounds expect.
void Micro(int kc, const float *panel, const float *const line[kMR], ptrdiff_t ks, float *t, bool add = true) {
  vf acc[kMR][kVecs];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r)
    for (int h = 0; h < kVecs; ++h) acc[r][h] = vf{};
  ptrdiff_t o = 0;
  for (int kk = 0; kk < kc; ++kk, o += ks, panel += kNR) {
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
      Store(t + r * kNR + h * kLanes, add ? Load<vf>(t + r * kNR + h * kLanes) + acc[r][h] : acc[r][h]);
}

#ifdef __AVX512F__
// Lines [0, nr) of a register tile's sums t (line r's kNR lanes at t + r * kNR) into C's rows
// [0, mr) (row i, column r: lane i of line r), added to C's values when `load`: a 16 x 16
// transpose and a masked row store, where element by element the stores were a third of the
// kernel's time.
void StoreTransposed(const float *t, float *c, int ldc, int mr, int nr, bool load) {
  static_assert(kNR == 16 && kMR <= 16, "one 16 x 16 transpose holds the tile");
  __m512i r[16];
  for (int l = 0; l < 16; ++l) r[l] = l < kMR ? _mm512_castps_si512(_mm512_load_ps(t + l * kNR)) : _mm512_setzero_si512();
  Transpose16(r);
  const __mmask16 m = static_cast<__mmask16>((1u << nr) - 1);
  for (int i = 0; i < mr; ++i) {
    float *row = c + size_t(i) * ldc;
    __m512 v = _mm512_castsi512_ps(r[i]);
    if (load) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, row), v);
    _mm512_mask_storeu_ps(row, m, v);
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

// Lanes l = 0..7 of out (row stride kNR) for depths 0..7 from line[l][0..7]: an 8 x 8 transpose
// in three shuffle stages (unpack, pair, swap 128-bit halves), which GCC maps to the ISA's.
void Transpose8(const float *const line[8], float *out) {
  typedef int v8i __attribute__((vector_size(32)));
  v8f r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = Load(line[i]);
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shuffle(r[i], r[i + 1], v8i{0, 8, 1, 9, 4, 12, 5, 13});
    t[i + 1] = __builtin_shuffle(r[i], r[i + 1], v8i{2, 10, 3, 11, 6, 14, 7, 15});
  }
  for (int i = 0; i < 8; i += 4)
    for (int h = 0; h < 2; ++h) {
      u[i + 2 * h] = __builtin_shuffle(t[i + h], t[i + h + 2], v8i{0, 1, 8, 9, 4, 5, 12, 13});
      u[i + 2 * h + 1] = __builtin_shuffle(t[i + h], t[i + h + 2], v8i{2, 3, 10, 11, 6, 7, 14, 15});
    }
  for (int j = 0; j < 4; ++j) {
    Store(out + j * kNR, __builtin_shuffle(u[j], u[j + 4], v8i{0, 1, 2, 3, 8, 9, 10, 11}));
    Store(out + (j + 4) * kNR, __builtin_shuffle(u[j], u[j + 4], v8i{4, 5, 6, 7, 12, 13, 14, 15}));
  }
}

// Packs the first `lanes` lines of v (depth k0..k0+kc-1) into panels of kNR lanes, each kc x
// kNR contiguous in kk; lanes past the end are zero (their results are never stored).
void Pack(const View &v, int lanes, int k0, int kc, float *out) {
  for (int p = 0; p < lanes; p += kNR, out += kc * kNR) {
    const int w = std::min(kNR, lanes - p);
    if (w < kNR) std::memset(out, 0, sizeof(float) * kc * kNR);
    if (v.ks == 1) {  // each line contiguous in depth: a transpose, 8 x 8 at a time
      int kk = 0;
      if (w == kNR)
        for (; kk + 8 <= kc; kk += 8)
          for (int h = 0; h < kNR; h += 8) {
            const float *line[8];
            for (int l = 0; l < 8; ++l) line[l] = v.At(p + h + l, k0 + kk);
            Transpose8(line, out + kk * kNR + h);
          }
      for (int l = 0; l < w; ++l) {
        const float *src = v.At(p + l, k0);
        for (int k = kk; k < kc; ++k) out[k * kNR + l] = src[k];
      }
    } else {  // lines adjacent (rs == 1): every View that Op makes is contiguous along one of them
      for (int kk = 0; kk < kc; ++kk) CopyRow(out + kk * kNR, v.At(p, k0 + kk), w);
    }
  }
}

// kMR streamed lines from line j0 at depth k0; past the last of `count` lines, the last one again
// (computed, never stored), so that edge tiles run the same Micro.
void Lines(const View &v, int j0, int count, int k0, const float *line[kMR]) {
  for (int r = 0; r < kMR; ++r) line[r] = v.At(j0 + std::min(r, count - 1), k0);
}

// Per-thread packing buffer, 64-byte aligned: Gemm runs on many threads at once.
float *Buffer(size_t floats) {
  struct Free {
    void operator()(float *p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Free> buf;
  thread_local size_t size = 0;
  if (floats > size) {
    const size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    buf.reset(static_cast<float *>(std::aligned_alloc(64, bytes)));
    size = bytes / sizeof(float);
  }
  return buf.get();
}

// C^T = op(B)^T op(A)^T: op(A) packed (its rows are the lanes), the columns of op(B) streamed,
// each register tile stored transposed.
void PackedA(const View &a, const View &bt, int m, int n, int k, float *c, int ldc, bool accumulate) {
  alignas(64) float t[kMR * kNR];
  const float *line[kMR];
  for (int pc = 0; pc < k; pc += kKC) {
    const int kc = std::min(kKC, k - pc);
    const bool load = accumulate || pc > 0;
    float *packed = Buffer(size_t(kc) * ((m + kNR - 1) / kNR * kNR));
    Pack(a, m, pc, kc, packed);
    for (int j0 = 0; j0 < n; j0 += kMR) {
      const int nr = std::min(kMR, n - j0);
      Lines(bt, j0, nr, pc, line);
      for (int p = 0; p < m; p += kNR) {
        const int mr = std::min(kNR, m - p);
        float *cb = c + size_t(p) * ldc + j0;
#ifdef __AVX512F__
        Micro(kc, packed + size_t(p) * kc, line, bt.ks, t, false);
        StoreTransposed(t, cb, ldc, mr, nr, load);
#else
        std::memset(t, 0, sizeof(t));
        if (load)
          for (int i = 0; i < mr; ++i)
            for (int r = 0; r < nr; ++r) t[r * kNR + i] = cb[size_t(i) * ldc + r];
        Micro(kc, packed + size_t(p) * kc, line, bt.ks, t);
        for (int i = 0; i < mr; ++i)
          for (int r = 0; r < nr; ++r) cb[size_t(i) * ldc + r] = t[r * kNR + i];
#endif
      }
    }
  }
}

// C = op(A) B (+ C when `accumulate`) with B's rows contiguous: each row of C straight from B's
// rows, kSR rows by kSV vectors at a time, no packing and no transpose. PackedA streams B's columns
// as lines here (12 broadcasts from one row of B per step) and pays a 16 x 16 transpose per register
// tile whatever k is: on one Sapphire Rapids-class core, 16 x 576 x 128 ran at 147 against 194
// GFLOP/s this way, 16 x 576 x 512 at 103 against 134, and at k = 16 (the sparse attention
// gradient's dSᵀ Q over a group of 16 heads) PackedA with its packing was slower than OpenBLAS.
// Each element gets Micro's arithmetic: per block of kKC k, one chain from +0, added to C.
constexpr int kSR = 4;
#ifdef __AVX512F__
constexpr int kSV = 4;  // 16 accumulators + 4 rows of B + 1 broadcast of 32 zmm registers
#else
constexpr int kSV = 2;  // 8 + 2 + 1 of 16 ymm registers
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

template <int R>
void RowsOfC(const View &a, int i0, const float *b, int ldb, int n, int k, float *c, int ldc, bool accumulate) {
  int j0 = 0;
  for (; j0 + kSV * kLanes <= n; j0 += kSV * kLanes) RowsTile<R, kSV>(a, i0, b, ldb, j0, k, c, ldc, accumulate);
  for (; j0 + kLanes <= n; j0 += kLanes) RowsTile<R, 1>(a, i0, b, ldb, j0, k, c, ldc, accumulate);
  for (; j0 < n; ++j0)
    for (int r = 0; r < R; ++r) {
      float t = 0.0f;
      for (int kk = 0; kk < k; ++kk) t = __builtin_fmaf(*a.At(i0 + r, kk), b[size_t(kk) * ldb + j0], t);
      float &e = c[size_t(i0 + r) * ldc + j0];
      e = accumulate ? e + t : t;
    }
}

void FromRowsOfB(const View &a, const float *b, int ldb, int m, int n, int k, float *c, int ldc, bool accumulate) {
  for (int pc = 0; pc < k; pc += kKC) {
    const int kc = std::min(kKC, k - pc);
    const bool add = accumulate || pc > 0;
    const View ak{a.At(0, pc), a.rs, a.ks};
    const float *bk = b + size_t(pc) * ldb;
    int i0 = 0;
    for (; i0 + kSR <= m; i0 += kSR) RowsOfC<kSR>(ak, i0, bk, ldb, n, kc, c, ldc, add);
    for (; i0 < m; ++i0) RowsOfC<1>(ak, i0, bk, ldb, n, kc, c, ldc, add);
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
  PackedA(Op(a, lda, transA), Op(b, ldb, !transB), m, n, k, c, ldc, accumulate);
}

}  // namespace twin
}  // namespace ms_ops
