// AscendC kernels on the twin's low-level cube API (ND -> NZ copies into L1, LoadData into L0A /
// L0B, Mmad into L0C, Fixpipe out), with C entry points for tests/test_twin_cube.py. Each returns
// the launch's status (0, or 1 after a twin violation, printed on stderr).
#include <cstdint>
#include <type_traits>

#include "case_utils.h"
#include "kernel_operator.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace twin_cases;

namespace {

// GetMMConfig (unqualified, as CANN declares it) starts from the template its mode names and sets
// the fields of each parameter struct given.
constexpr MatmulConfig kMdl = GetMMConfig<MatmulConfigMode::CONFIG_MDL>(
    MatmulShapeParams{128, 256, 64, 64, 128, 32}, MatmulBiasParams{false});
static_assert(kMdl.doMultiDataLoad && !kMdl.doNorm && kMdl.singleCoreN == 256 && kMdl.basicK == 32 &&
                  !kMdl.enableSetBias && kMdl.isBiasBatch,
              "GetMMConfig");
static_assert(GetMMConfig<MatmulConfigMode::CONFIG_NORM>().doNorm, "GetMMConfig without parameters");

constexpr uint32_t kFractal = 512;  // bytes of an L0A / L0B fractal

uint32_t Blocks(uint32_t x, uint32_t unit) { return (x + unit - 1) / unit; }

// What the C entry points pass: the sizes, and how B is given and the product taken.
struct MmCase {
  uint32_t m, k, n;
  int bTransposed;  // 1: B given as Bᵀ [n, k]; 0: B [k, n], its fractals transposed on the way to L0B
  int twice;        // 1: a second Mmad adds the product again (cmatrixInitVal false): C = 2 A B
  int relu;         // Fixpipe's reluEn
};

// C [m, n] (out type O) = A [m, k] B (S elements) through L1, L0A / L0B and L0C, one block.
template <typename S, typename O>
int CubeMatmul(const char *name, void *a, void *b, void *c, const MmCase &p) {
  return Run(name, 1, [&] {
    constexpr uint32_t c0 = 32 / sizeof(S), frac = kFractal / sizeof(S);
    const uint32_t mb = Blocks(p.m, 16), kb = Blocks(p.k, c0), nb = Blocks(p.n, 16);
    TPipe pipe;
    TQue<TPosition::A1, 1> qa1;
    TQue<TPosition::B1, 1> qb1;
    TQue<TPosition::A2, 1> qa2;
    TQue<TPosition::B2, 1> qb2;
    TQue<TPosition::CO1, 1> qc;
    pipe.InitBuffer(qa1, 1, mb * kb * kFractal);
    pipe.InitBuffer(qb1, 1, kb * nb * kFractal);
    pipe.InitBuffer(qa2, 1, mb * kb * kFractal);
    pipe.InitBuffer(qb2, 1, kb * nb * kFractal);
    pipe.InitBuffer(qc, 1, mb * nb * 256 * 4);
    const GlobalTensor<S> ag = Gm<S>(a, uint64_t(p.m) * p.k), bg = Gm<S>(b, uint64_t(p.k) * p.n);
    const GlobalTensor<O> cg = Gm<O>(c, uint64_t(p.m) * p.n);

    // A into L1 as NZ: k in column blocks of c0, each mb * 16 rows.
    LocalTensor<S> a1 = qa1.AllocTensor<S>(), b1 = qb1.AllocTensor<S>();
    DataCopy(a1, ag, Nd2NzParams(1, p.m, p.k, 0, p.k, mb * 16, 1, 0));
    if (p.bTransposed) {
      // Bᵀ [n, k] as NZ: its fractals (n block, k block) fall k block major, as L0B wants them.
      DataCopy(b1, bg, Nd2NzParams(1, p.n, p.k, 0, p.k, nb * 16, 1, 0));
    } else {
      DataCopy(b1, bg, Nd2NzParams(1, p.k, p.n, 0, p.n, kb * 16, 1, 0));
    }
    qa1.EnQue(a1);
    qb1.EnQue(b1);

    a1 = qa1.DeQue<S>();
    LocalTensor<S> a2 = qa2.AllocTensor<S>();
    // Each m block's fractals, one per k block (mb apart in L1), side by side in L0A.
    for (uint32_t i = 0; i < mb; ++i) LoadData(a2[i * kb * frac], a1, LoadData2DParams(i, kb, mb, 0, 0, false, 0));
    qa2.EnQue(a2);
    qa1.FreeTensor(a1);

    b1 = qb1.DeQue<S>();
    LocalTensor<S> b2 = qb2.AllocTensor<S>();
    if (p.bTransposed) {
      LoadData(b2, b1, LoadData2DParams(0, kb * nb, 1, 0, 0, false, 0));
    } else {
      // Each k block's fractals, one per n block (kb apart in L1), transposed.
      for (uint32_t i = 0; i < kb; ++i) LoadData(b2[i * nb * frac], b1, LoadData2DParams(i, nb, kb, 0, 0, true, 0));
    }
    qb2.EnQue(b2);
    qb1.FreeTensor(b1);

    a2 = qa2.DeQue<S>();
    b2 = qb2.DeQue<S>();
    using Acc = std::conditional_t<std::is_same_v<S, int8_t>, int32_t, float>;
    LocalTensor<Acc> c1 = qc.AllocTensor<Acc>();
    MmadParams mp(p.m, p.n, p.k, false, 0, false, false, false);
    Mmad(c1, a2, b2, mp);
    if (p.twice) {
      mp.cmatrixInitVal = false;
      Mmad(c1, a2, b2, mp);
    }
    qc.EnQue(c1);
    qa2.FreeTensor(a2);
    qb2.FreeTensor(b2);

    c1 = qc.DeQue<Acc>();
    FixpipeParamsV220 fp(p.n, p.m, mb * 16, p.n, p.relu != 0);
    if constexpr (std::is_same_v<O, half>) fp.quantPre = QuantMode_t::F322F16;
    if constexpr (std::is_same_v<O, bfloat16_t>) fp.quantPre = QuantMode_t::F322BF16;
    Fixpipe(cg, c1, fp);
    qc.FreeTensor(c1);
  });
}

}  // namespace

// dtype: 0 half -> float, 1 bf16 -> float, 2 float -> float, 3 int8 -> int32, 4 half -> half,
// 5 bf16 -> bf16.
TWIN_EXPORT int twin_cube_matmul(int dtype, uint32_t m, uint32_t k, uint32_t n, void *a, void *b, void *c,
                                 int bTransposed, int twice, int relu) {
  const MmCase p{m, k, n, bTransposed, twice, relu};
  switch (dtype) {
    case 0: return CubeMatmul<half, float>("twin_cube_matmul", a, b, c, p);
    case 1: return CubeMatmul<bfloat16_t, float>("twin_cube_matmul", a, b, c, p);
    case 2: return CubeMatmul<float, float>("twin_cube_matmul", a, b, c, p);
    case 3: return CubeMatmul<int8_t, int32_t>("twin_cube_matmul", a, b, c, p);
    case 4: return CubeMatmul<half, half>("twin_cube_matmul", a, b, c, p);
    default: return CubeMatmul<bfloat16_t, bfloat16_t>("twin_cube_matmul", a, b, c, p);
  }
}

// The ND -> NZ copy alone: x [rows, cols] (half) into L1 with the given strides, then the whole L1
// buffer (`bytes`, first set to -2 by InitConstValue) back to z through a plain copy.
TWIN_EXPORT int twin_cube_nd2nz(void *x, uint32_t rows, uint32_t cols, uint32_t c0Stride, uint32_t nStride, void *z,
                                uint32_t bytes) {
  return Run("twin_cube_nd2nz", 1, [&] {
    TPipe pipe;
    TQue<TPosition::A1, 1> q;
    pipe.InitBuffer(q, 1, bytes);
    LocalTensor<half> t = q.AllocTensor<half>();
    InitConstValue(t, InitConstValueParams<half>(1, static_cast<uint16_t>(bytes / 32), 0, half(-2.0f)));
    PipeBarrier<PIPE_ALL>();
    DataCopy(t, Gm<half>(x, uint64_t(rows) * cols),
             Nd2NzParams(1, static_cast<uint16_t>(rows), static_cast<uint16_t>(cols), 0, static_cast<uint16_t>(cols),
                         static_cast<uint16_t>(c0Stride), static_cast<uint16_t>(nStride), 0));
    PipeBarrier<PIPE_ALL>();
    DataCopy(Gm<half>(z, bytes / 2), t, bytes / 2);
    q.FreeTensor(t);
  });
}

// What the twin refuses: 0 ifTranspose on float fractals; 1 Mmad with fm in L1; 2 an L0A request
// beyond its 64 KiB; 3 a vector op on an L1 tensor; 4 Mmad reading L0A that MTE1 wrote with no
// EnQue/DeQue (a race); 5 Fixpipe into the column-major layout; 6 LoadData into L1; 7 Fixpipe converting
// float to half without quantPre.
TWIN_EXPORT int twin_cube_bad(int which, void *c) {
  return Run("twin_cube_bad", 1, [&] {
    TPipe pipe;
    TQue<TPosition::A1, 1> qa1;
    TQue<TPosition::A2, 1> qa2;
    TQue<TPosition::B2, 1> qb2;
    TQue<TPosition::CO1, 1> qc;
    pipe.InitBuffer(qa1, 1, 4096);
    pipe.InitBuffer(qa2, 1, which == 2 ? 65536 + 512 : 4096);
    pipe.InitBuffer(qb2, 1, 4096);
    pipe.InitBuffer(qc, 1, 4096);
    LocalTensor<float> a1 = qa1.AllocTensor<float>(), a2 = qa2.AllocTensor<float>(), b2 = qb2.AllocTensor<float>();
    LocalTensor<float> c1 = qc.AllocTensor<float>();
    InitConstValue(a1, InitConstValueParams<float>(1, 128, 0, 0.0f));
    PipeBarrier<PIPE_ALL>();
    const MmadParams mp(16, 16, 8, false, 0, false, false, false);
    switch (which) {
      case 0: LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, true, 0)); break;
      case 1: Mmad(c1, a1, b2, mp); break;
      case 3: Adds(a1, a1, 1.0f, 64); break;
      case 4:
        LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
        LoadData(b2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
        Mmad(c1, a2, b2, mp);
        break;
      case 5: {
        FixpipeParamsV220 fp(16, 16, 16, 16, false);
        Fixpipe<float, float, CFG_COLUMN_MAJOR>(Gm<float>(c, 256), c1, fp);
        break;
      }
      case 6: LoadData(a1, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0)); break;
      case 7: Fixpipe(Gm<half>(c, 256), c1, FixpipeParamsV220(16, 16, 16, 16, false)); break;
      default: break;
    }
    PipeBarrier<PIPE_ALL>();
    qa1.FreeTensor(a1);
    qa2.FreeTensor(a2);
    qb2.FreeTensor(b2);
    qc.FreeTensor(c1);
  });
}

// C [m, n] (float) = A [m, k] B (halves, B given as Bᵀ [n, k]) with tensors at addresses of their
// own (no TPipe) and SetFlag / WaitFlag between the pipes, as CANN's newer cube samples write it;
// `flags` 0 leaves out the MTE1 -> M flag (a race); `nz` writes C as NZ (column blocks of 16, `nz`
// 32-byte blocks apart) instead of row-major.
TWIN_EXPORT int twin_cube_static(uint32_t m, uint32_t k, uint32_t n, void *a, void *b, void *c, int flags, int nz) {
  return Run("twin_cube_static", 1, [&] {
    const uint32_t mb = Blocks(m, 16), kb = Blocks(k, 16), nb = Blocks(n, 16);
    LocalTensor<half> a1(TPosition::A1, 0, mb * kb * 256), b1(TPosition::B1, mb * kb * kFractal, kb * nb * 256);
    LocalTensor<half> a2(TPosition::A2, 0, mb * kb * 256), b2(TPosition::B2, 0, kb * nb * 256);
    LocalTensor<float> c1(TPosition::CO1, 0, mb * nb * 256);
    DataCopy(a1, Gm<half>(a, uint64_t(m) * k), Nd2NzParams(1, m, k, 0, k, mb * 16, 1, 0));
    DataCopy(b1, Gm<half>(b, uint64_t(n) * k), Nd2NzParams(1, n, k, 0, k, nb * 16, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0);
    WaitFlag<HardEvent::MTE2_MTE1>(0);
    for (uint32_t i = 0; i < mb; ++i) LoadData(a2[i * kb * 256], a1, LoadData2DParams(i, kb, mb, 0, 0, false, 0));
    LoadData(b2, b1, LoadData2DParams(0, kb * nb, 1, 0, 0, false, 0));
    if (flags) {
      SetFlag<HardEvent::MTE1_M>(0);
      WaitFlag<HardEvent::MTE1_M>(0);
    }
    Mmad(c1, a2, b2, MmadParams(m, n, k, false, 0, false, false, false));
    SetFlag<HardEvent::M_FIX>(0);
    WaitFlag<HardEvent::M_FIX>(0);
    if (nz) {
      Fixpipe<float, float, CFG_NZ>(Gm<float>(c, uint64_t(nb) * nz * 8), c1,
                                    FixpipeParamsV220(n, m, mb * 16, static_cast<uint32_t>(nz), false));
    } else {
      Fixpipe(Gm<float>(c, uint64_t(m) * n), c1, FixpipeParamsV220(n, m, mb * 16, n, false));
    }
  });
}

namespace {

// C [m, n] = A [m, k] B + bias (C type Acc) with the operands transposed on the way to L0A / L0B
// by LoadDataWithTranspose where the layout needs it: S int8 (B [k, n] as given, squares of two
// fractals one above the other) or float (A given as Aᵀ [k, m], squares of two fractals side by
// side, k paired to 16 in L0A: kDirectionAlign; B given as Bᵀ). The bias goes GM -> L1 -> bias
// table (64-byte blocks); `mode` 0: Mmad's bias overload, 1: cmatrixSource without it (the table's
// start), 2: no bias (cmatrixInitVal), 3: isBias on a second product (C = 2 A B). Tensors come from
// LocalMemAllocator; the result goes L0C -> L1 -> GM (c rounded up to whole 32-byte blocks).
template <typename S, typename Acc>
int Transposed(const char *name, uint32_t m, uint32_t k, uint32_t n, void *a, void *b, void *bias, void *c, int mode) {
  return Run(name, 1, [&] {
    constexpr bool isInt8 = std::is_same_v<S, int8_t>;
    constexpr uint32_t c0 = 32 / sizeof(S), frac = kFractal / sizeof(S);
    const uint32_t mb = Blocks(m, 16), nb = isInt8 ? Blocks(n, 32) * 2 : Blocks(n, 16);
    const uint32_t kb = isInt8 ? Blocks(k, 32) : Blocks(k, 16) * 2;  // k blocks of c0 as L0A holds them
    LocalMemAllocator<Hardware::L1> l1;
    LocalMemAllocator<Hardware::L0A> l0a;
    LocalMemAllocator<Hardware::L0B> l0b;
    LocalMemAllocator<Hardware::L0C> l0c;
    LocalMemAllocator<Hardware::BIAS> bt;
    LocalTensor<S> a1 = l1.Alloc<S>(mb * kb * frac), b1 = l1.Alloc<S>(kb * nb * frac);
    LocalTensor<Acc> bias1 = l1.Alloc<TPosition::C1, Acc>(nb * 16), out1 = l1.Alloc<Acc>(m * n);
    LocalTensor<S> a2 = l0a.Alloc<S>(mb * kb * frac), b2 = l0b.Alloc<S>(kb * nb * frac);
    LocalTensor<Acc> c1 = l0c.Alloc<Acc>(mb * nb * 256), bias2 = bt.Alloc<Acc>(nb * 16);
    if constexpr (isInt8) {
      // A as NZ [m, k] (column blocks of 32); B as NZ [k, n], k rows rounded up to 32 so that two
      // fractals stack into a square.
      DataCopy(a1, Gm<S>(a, uint64_t(m) * k), Nd2NzParams(1, m, k, 0, k, mb * 16, 1, 0));
      DataCopy(b1, Gm<S>(b, uint64_t(k) * n), Nd2NzParams(1, k, n, 0, n, kb * 32 / 2 * 2, 1, 0));
    } else {
      // Aᵀ [k, m] in slabs of 16 k-rows, each NZ with column blocks 16 rows apart: two adjacent
      // column blocks (16 m) make a 16 x 16 square. Bᵀ [n, k] as NZ.
      const GlobalTensor<S> ag = Gm<S>(a, uint64_t(k) * m);
      const uint32_t slabs = k / 16, tail = k % 16;
      if (slabs > 0) DataCopy(a1, ag, Nd2NzParams(slabs, 16, m, 16 * m, m, 16, 1, 16 * mb * 16));
      if (tail > 0) DataCopy(a1[slabs * 16 * mb * 16], ag[slabs * 16 * m], Nd2NzParams(1, tail, m, 0, m, 16, 1, 0));
      DataCopy(b1, Gm<S>(b, uint64_t(n) * k), Nd2NzParams(1, n, k, 0, k, nb * 16, 1, 0));
    }
    DataCopy(bias1, Gm<Acc>(bias, n), Nd2NzParams(1, 1, n, 0, n, 1, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0);
    WaitFlag<HardEvent::MTE2_MTE1>(0);
    if constexpr (isInt8) {
      // A: each m block's k fractals (mb apart in L1).
      for (uint32_t i = 0; i < mb; ++i) LoadData(a2[i * kb * frac], a1, LoadData2DParams(i, kb, mb, 0, 0, false, 0));
      // B: for each k square (two k fractals), the n squares (kb / 2 squares apart in L1), each two n fractals.
      for (uint32_t i = 0; i < kb; ++i)
        LoadDataWithTranspose(b2[i * nb * frac], b1[i * 2 * frac], LoadData2dTransposeParams(0, nb / 2, kb, 1, 0));
    } else {
      // A: for each m block (two column blocks of the slabs), the k squares (one per slab).
      for (uint32_t i = 0; i < mb; ++i)
        LoadDataWithTranspose(a2[i * kb * frac], a1[i * 2 * frac], LoadData2dTransposeParams(0, kb / 2, mb, 1, 0));
      LoadData(b2, b1, LoadData2DParams(0, Blocks(k, c0) * nb, 1, 0, 0, false, 0));
    }
    // L1 -> bias table: blocks of 64 bytes.
    DataCopy(bias2, bias1, DataCopyParams(1, static_cast<uint16_t>(Blocks(n * sizeof(Acc), 64)), 0, 0));
    SetFlag<HardEvent::MTE1_M>(0);
    WaitFlag<HardEvent::MTE1_M>(0);
    MmadParams mp(m, isInt8 ? nb * 16 : n, k, 0, false, true);
    mp.kDirectionAlign = !isInt8;
    if (mode == 0) {
      mp.cmatrixInitVal = false;
      Mmad(c1, a2, b2, bias2, mp);
    } else if (mode == 1) {
      mp.cmatrixInitVal = false;
      mp.cmatrixSource = true;
      Mmad(c1, a2, b2, mp);
    } else {
      Mmad(c1, a2, b2, mp);
      if (mode == 3) {
        mp.isBias = true;
        Mmad(c1, a2, b2, mp);
      }
    }
    SetFlag<HardEvent::M_FIX>(0);
    WaitFlag<HardEvent::M_FIX>(0);
    Fixpipe(out1, c1, FixpipeParamsV220(n, m, mb * 16, n, false));
    SetFlag<HardEvent::FIX_MTE3>(0);
    WaitFlag<HardEvent::FIX_MTE3>(0);
    // Whole 32-byte blocks out: c has room for them.
    const uint32_t blocks = Blocks(m * n * sizeof(Acc), 32);
    DataCopy(Gm<Acc>(c, uint64_t(blocks) * 32 / sizeof(Acc)), out1, DataCopyParams(1, static_cast<uint16_t>(blocks), 0, 0));
  });
}

}  // namespace

// dtype 0: int8 -> int32, 1: float -> float (see Transposed).
TWIN_EXPORT int twin_cube_transposed(int dtype, uint32_t m, uint32_t k, uint32_t n, void *a, void *b, void *bias,
                                     void *c, int mode) {
  if (dtype == 0) return Transposed<int8_t, int32_t>("twin_cube_transposed", m, k, n, a, b, bias, c, mode);
  return Transposed<float, float>("twin_cube_transposed", m, k, n, a, b, bias, c, mode);
}

// CANN's internal check as kernels and samples write it: a false condition logs and fails the launch.
TWIN_EXPORT int twin_ascendc_assert(int ok) {
  return Run("twin_ascendc_assert", 1, [&] {
    ASCENDC_ASSERT(ok != 0, { KERNEL_LOG(KERNEL_ERROR, "ok is %d", ok); });
  });
}
