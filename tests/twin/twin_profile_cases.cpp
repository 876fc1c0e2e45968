// Kernels with known NPU traffic, for tests/test_twin_profile.py: the twin's cost profile
// (twin_profile.h) must count exactly what they ask of each pipe.
#include <cstdint>

#include "case_utils.h"
#include "kernel_operator.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace twin_cases;

namespace {

constexpr uint32_t kN = 4096;
constexpr uint32_t kScalars = 8;

}  // namespace

// Block b: z[b] = x[b] + y[b] over kN floats (two 16 KiB copies in, one Add of 64 repeats, one
// 16 KiB copy out), and s[i] = x[b][i] for the first kScalars elements through the scalar unit
// (kScalars GetValue on GM, kScalars SetValue on UB).
TWIN_EXPORT int twin_profile_add(void *x, void *y, void *z, uint32_t blocks) {
  return ms_ops::twin::Launch("twin_profile_add", blocks, 0, [&] {
    const uint64_t off = uint64_t(GetBlockIdx()) * kN;
    const GlobalTensor<float> xg = Gm<float>(x, uint64_t(blocks) * kN)[off];
    const GlobalTensor<float> yg = Gm<float>(y, uint64_t(blocks) * kN)[off];
    const GlobalTensor<float> zg = Gm<float>(z, uint64_t(blocks) * kN)[off];
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> xq, yq;
    TQue<QuePosition::VECOUT, 1> zq;
    TBuf<TPosition::VECCALC> sb;
    pipe.InitBuffer(xq, 1, kN * 4);
    pipe.InitBuffer(yq, 1, kN * 4);
    pipe.InitBuffer(zq, 1, kN * 4);
    pipe.InitBuffer(sb, 32);
    const LocalTensor<float> s = sb.Get<float>();
    for (uint32_t i = 0; i < kScalars; ++i) s.SetValue(i, xg.GetValue(i));

    LocalTensor<float> a = xq.AllocTensor<float>(), b = yq.AllocTensor<float>();
    DataCopy(a, xg, kN);
    DataCopy(b, yg, kN);
    xq.EnQue(a);
    yq.EnQue(b);
    a = xq.DeQue<float>();
    b = yq.DeQue<float>();
    LocalTensor<float> c = zq.AllocTensor<float>();
    Add(c, a, b, kN);
    xq.FreeTensor(a);
    yq.FreeTensor(b);
    zq.EnQue(c);
    c = zq.DeQue<float>();
    DataCopy(zg, c, kN);
    zq.FreeTensor(c);
  });
}

// One block: c = a * b, n x n x n fp32 through the high-level Matmul.
TWIN_EXPORT int twin_profile_matmul(void *a, void *b, void *c, int n) {
  return ms_ops::twin::Launch("twin_profile_matmul", 1, 0, [&] {
    using F32 = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TCubeTiling tiling{};
    tiling.M = tiling.N = tiling.Ka = tiling.Kb = n;
    tiling.singleCoreM = tiling.singleCoreN = tiling.singleCoreK = n;
    tiling.baseM = tiling.baseN = tiling.baseK = 64;
    TPipe pipe;
    Matmul<F32, F32, F32> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
    mm.SetTensorA(Gm<float>(a, uint64_t(n) * n));
    mm.SetTensorB(Gm<float>(b, uint64_t(n) * n));
    mm.IterateAll(Gm<float>(c, uint64_t(n) * n));
    mm.End();
  });
}
