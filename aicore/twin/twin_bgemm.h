// The twin's bf16 GEMM: the cube's bf16 x bf16 -> fp32 product on the CPU's bf16 dot-product
// instructions, when the build targets a CPU that has them: AMX tiles (TDPBF16PS: Sapphire Rapids
// and later) where Linux grants the process their state, else AVX512-BF16's VDPBF16PS (Zen 4,
// Cooper Lake). Without either the Matmul widens bf16 operands to fp32 and calls Sgemm
// (twin_blas.h). With VDPBF16PS the product runs at up to twice sgemm's rate on Zen 4 (on an AMX
// Xeon core below it: 104-112 against 110-177 GFLOP/s) and reads half the bytes; with AMX at
// several times sgemm's (700-1050 GFLOP/s on that core; benchmarks/bench_twin_gemm.py).
#ifndef MS_OPS_TWIN_BGEMM_H_
#define MS_OPS_TWIN_BGEMM_H_

#include <cstddef>
#include <cstdint>

namespace ms_ops {
namespace twin {

#if defined(__AVX512BF16__) && defined(__AVX512BW__)
constexpr bool kBgemm = true;
#else
constexpr bool kBgemm = false;
#endif

// k is cut into blocks of kBgemmKBlock from k = 0 (as Sgemm's chain semantics do, twin_blas.h).
// For each block in order, one chain from +0 per element, two products (exact in fp32) added per
// step in the hardware's order, then the chain added to C (or stored: the first block without
// `accumulate`; C is not read). An element's bits depend only on its row of op(A), its column of
// op(B), K and `accumulate`: not on m, n, its position or the transposes, and a k split over calls
// with `accumulate` keeps them when it falls on a block boundary. Inputs and results that are
// subnormal are flushed to zero, as the instruction does.
constexpr int kBgemmKBlock = 256;

// Which instruction Bgemm runs on: 1 AMX, 0 VDPBF16PS. `request` -1 only asks; 0 or 1 chooses
// (AMX only where the build has it and the process may use it), so tests can check both paths.
int BgemmAmx(int request);

// Scratch words (uint32) Bgemm packs op(A) and op(B) into; the caller provides both.
constexpr size_t kBgemmPackAWords = size_t(128) * (kBgemmKBlock / 2);
constexpr size_t kBgemmPackBWords = size_t(512) * (kBgemmKBlock / 2);

// C[m x n] (row-major, row stride ldc) = op(A) op(B), plus C when `accumulate`; A and B are bf16
// bit patterns, A m x k (transA: k x m) with row stride lda, B k x n (transB: n x k) with row
// stride ldb. Only when kBgemm.
void Bgemm(bool transA, bool transB, int m, int n, int k, const uint16_t *a, int lda, const uint16_t *b, int ldb,
           float *c, int ldc, bool accumulate, uint32_t *packA, uint32_t *packB);

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_BGEMM_H_
