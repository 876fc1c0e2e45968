// AscendC kernels on the twin's Load3Dv2 (LoadData3DParamsV2: image to column from L1 into L0A /
// L0B) and Fixpipe's several matrices per call (ndNum), with C entry points for
// tests/test_twin_load3d.py. Each returns the launch's status (0, or 1 after a twin violation,
// printed on stderr).
#include <cstdint>

#include "case_utils.h"
#include "kernel_operator.h"

using namespace AscendC;
using namespace twin_cases;

namespace {

constexpr uint32_t kFractal = 512;  // bytes of an L0A / L0B fractal

uint32_t Blocks(uint32_t x, uint32_t unit) { return (x + unit - 1) / unit; }

// Load3Dv2 of a feature map of l1H x l1W positions and `channels` channels (an NZ matrix), the
// block of mExt positions from mStart and kExt channels from kStart; the other fields their defaults.
template <typename T>
LoadData3DParamsV2<T> Window(uint32_t l1H, uint32_t l1W, uint32_t channels, uint32_t mStart, uint32_t mExt,
                             uint32_t kStart, uint32_t kExt) {
  LoadData3DParamsV2<T> p;
  p.l1H = static_cast<uint16_t>(l1H);
  p.l1W = static_cast<uint16_t>(l1W);
  p.channelSize = static_cast<uint16_t>(channels);
  p.mStartPt = static_cast<uint16_t>(mStart);
  p.mExtension = static_cast<uint16_t>(mExt);
  p.kStartPt = static_cast<uint16_t>(kStart);
  p.kExtension = static_cast<uint16_t>(kExt);
  return p;
}

// What the C entry points pass: `batches` products C_b [mm, nn] = A_b[r0 : r0 + mm, :] B_b[:, c0 :
// c0 + nn] of A_b [m, k] (given transposed, [k, m], with aT) and B_b [k, n]: A and B copied into
// L1 as NZ, the windows moved into L0A / L0B by Load3Dv2 (mStartPt / kStartPt), every product
// into its own part of L0C, and all C_b out by one Fixpipe with ndNum = batches.
struct Case {
  uint32_t m, k, n, mm, nn, r0, c0;
  int aT, batches;
};

template <typename S>
int Load3dMatmul(void *a, void *b, void *c, const Case &p) {
  return Run("twin_load3d_matmul", 1, [&] {
    constexpr uint32_t e0 = 32 / sizeof(S);
    // fp32's transposed A lies in L0A with k in blocks of 16 (kDirectionAlign).
    constexpr uint32_t kAlignT = sizeof(S) == 4 ? 16 : e0;
    const uint32_t mRows = Blocks(p.m, 16) * 16, kRows = Blocks(p.k, 16) * 16;
    const uint32_t aL1 = p.aT ? kRows * Blocks(p.m, e0) * e0 : mRows * Blocks(p.k, e0) * e0;
    const uint32_t bL1 = kRows * Blocks(p.n, e0) * e0;
    const uint32_t mmB = Blocks(p.mm, 16), nnB = Blocks(p.nn, 16);
    const uint32_t kA = p.aT ? Blocks(p.k, kAlignT) * kAlignT : Blocks(p.k, e0) * e0;
    const uint32_t a2 = mmB * Blocks(kA, e0) * kFractal, b2 = Blocks(p.k, e0) * nnB * kFractal;
    const uint32_t cPer = mmB * nnB * 256;
    TPipe pipe;
    TQue<TPosition::A1, 1> qa1;
    TQue<TPosition::B1, 1> qb1;
    TQue<TPosition::A2, 1> qa2;
    TQue<TPosition::B2, 1> qb2;
    TQue<TPosition::CO1, 1> qc;
    pipe.InitBuffer(qa1, 1, aL1 * sizeof(S));
    pipe.InitBuffer(qb1, 1, bL1 * sizeof(S));
    pipe.InitBuffer(qa2, 1, a2);
    pipe.InitBuffer(qb2, 1, b2);
    pipe.InitBuffer(qc, 1, p.batches * cPer * 4);
    LocalTensor<float> c1 = qc.AllocTensor<float>();
    for (int q = 0; q < p.batches; ++q) {
      const GlobalTensor<S> ag = Gm<S>(a, uint64_t(p.batches) * p.m * p.k)[uint64_t(q) * p.m * p.k];
      const GlobalTensor<S> bg = Gm<S>(b, uint64_t(p.batches) * p.k * p.n)[uint64_t(q) * p.k * p.n];
      LocalTensor<S> a1 = qa1.AllocTensor<S>(), b1 = qb1.AllocTensor<S>();
      if (p.aT) {
        DataCopy(a1, ag, Nd2NzParams(1, p.k, p.m, 0, p.m, kRows, 1, 0));
      } else {
        DataCopy(a1, ag, Nd2NzParams(1, p.m, p.k, 0, p.k, mRows, 1, 0));
      }
      DataCopy(b1, bg, Nd2NzParams(1, p.k, p.n, 0, p.n, kRows, 1, 0));
      qa1.EnQue(a1);
      qb1.EnQue(b1);
      a1 = qa1.DeQue<S>();
      b1 = qb1.DeQue<S>();
      LocalTensor<S> l0a = qa2.AllocTensor<S>(), l0b = qb2.AllocTensor<S>();
      // Aᵀ's rows (k) are the positions and A's rows (m) the channels: the window's rows are then
      // channels r0.., and the instruction transposes the block into L0A.
      LoadData3DParamsV2<S> la = p.aT ? Window<S>(1, kRows, p.m, 0, kA, p.r0, mmB * 16)
                                      : Window<S>(1, mRows, p.k, p.r0, mmB * 16, 0, kA);
      la.enTranspose = p.aT != 0;
      LoadData(l0a, a1, la);
      // B's rows (k) are the positions, its columns the channels; L0B always takes the transpose.
      const LoadData3DParamsV2<S> lb = Window<S>(kRows, 1, p.n, 0, Blocks(p.k, e0) * e0, p.c0, nnB * 16);
      LoadData(l0b, b1, lb);
      qa2.EnQue(l0a);
      qb2.EnQue(l0b);
      qa1.FreeTensor(a1);
      qb1.FreeTensor(b1);
      l0a = qa2.DeQue<S>();
      l0b = qb2.DeQue<S>();
      MmadParams mp(p.mm, p.nn, p.k, false, 0, false, false, false);
      mp.kDirectionAlign = p.aT && sizeof(S) == 4;
      Mmad(c1[q * cPer], l0a, l0b, mp);
      // The next product's loads overwrite L0A / L0B and L1 after this one has read them.
      PipeBarrier<PIPE_ALL>();
      qa2.FreeTensor(l0a);
      qb2.FreeTensor(l0b);
    }
    qc.EnQue(c1);
    c1 = qc.DeQue<float>();
    FixpipeParamsV220 fp(p.nn, p.mm, mmB * 16, p.nn, false);
    fp.ndNum = static_cast<uint16_t>(p.batches);
    fp.srcNdStride = static_cast<uint16_t>(cPer / 256);
    fp.dstNdStride = p.mm * p.nn;
    Fixpipe(Gm<float>(c, uint64_t(p.batches) * p.mm * p.nn), c1, fp);
    qc.FreeTensor(c1);
  });
}

}  // namespace

// dtype: 0 half, 1 bf16, 2 float (all into float).
TWIN_EXPORT int twin_load3d_matmul(int dtype, uint32_t m, uint32_t k, uint32_t n, uint32_t mm, uint32_t nn, uint32_t r0,
                                   uint32_t c0, int aT, int batches, void *a, void *b, void *c) {
  const Case p{m, k, n, mm, nn, r0, c0, aT, batches};
  switch (dtype) {
    case 0: return Load3dMatmul<half>(a, b, c, p);
    case 1: return Load3dMatmul<bfloat16_t>(a, b, c, p);
    default: return Load3dMatmul<float>(a, b, c, p);
  }
}

// One broken rule each (which >= 0), or all kept (-1): a Load3Dv2 of 32 x 32 halves (or int8)
// from L1.
TWIN_EXPORT int twin_load3d_bad(int which) {
  return Run("twin_load3d_bad", 1, [&] {
    TPipe pipe;
    TQue<TPosition::A1, 1> q1;
    TQue<TPosition::A2, 1> qa;
    TQue<TPosition::B2, 1> qb;
    pipe.InitBuffer(q1, 1, 32 * 32 * 2);
    pipe.InitBuffer(qa, 1, 32 * 32 * 2);
    pipe.InitBuffer(qb, 1, 32 * 32 * 2);
    LocalTensor<half> l1 = q1.AllocTensor<half>(), l0a = qa.AllocTensor<half>(), l0b = qb.AllocTensor<half>();
    LoadData3DParamsV2<half> p = Window<half>(1, 32, 32, 0, 32, 0, 32);
    if (which == 0) p.filterW = 3;
    if (which == 1) p.kStartPt = 8;
    if (which == 2) p.mExtension = 64;
    if (which == 3) p.fMatrixCtrl = true;
    if (which == 4) {
      const LoadData3DParamsV2<int8_t> pi = Window<int8_t>(1, 32, 32, 0, 32, 0, 32);
      LoadData(l0b.ReinterpretCast<int8_t>(), l1.ReinterpretCast<int8_t>(), pi);
      return;
    }
    if (which == 5) SetLoadDataRepeat(LoadDataRepeatParam(1, 2, 0));
    if (which == 6) {
      static constexpr IsResetLoad3dConfig kManual = {false, true};
      LoadData<half, kManual>(l0a, l1, p);
      return;
    }
    LoadData(which == 7 ? l1 : l0a, l1, p);
    LoadData(l0b, l1, p);
  });
}
