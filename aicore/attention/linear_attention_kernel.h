// Kernel-side base of linear_attention and linear_attention_grad: the block's fp32 workspace,
// the vector passes that turn a chunk of input rows into fp32 feature rows phi(x) = ELU(x) + 1
// (= max(x, 0) + exp(min(x, 0))) or plain fp32 rows, the causal mask of a score tile, and the three
// cube products on workspace matrices. Kernel code only (includes kernel_operator.h).
#ifndef MS_OPS_LINEAR_ATTENTION_KERNEL_H_
#define MS_OPS_LINEAR_ATTENTION_KERNEL_H_

#include "../common/kernel_utils.h"
#include "lib/matmul_intf.h"
#include "linear_attention_tiling_data.h"

namespace ms_ops {
namespace kernel {

template <typename T>
class LinearAttentionBase {
  using F = AscendC::MatmulType<AscendC::TPosition::GM, AscendC::CubeFormat::ND, float>;
  using FT = AscendC::MatmulType<AscendC::TPosition::GM, AscendC::CubeFormat::ND, float, true>;

 public:
  // Registered by the kernels' Run with REGIST_MATMUL_OBJ before InitBase's InitBuffer calls.
  AscendC::TPipe pipe;
  AscendC::Matmul<F, FT, F> mmNT;
  AscendC::Matmul<F, F, F> mmNN;
  AscendC::Matmul<FT, F, F> mmTN;

 protected:
  __aicore__ inline void InitBase(GM_ADDR workspace, const LinearAttentionTilingData &td) {
    using namespace AscendC;
    td_ = &td;
    const uint64_t c = td.chunk, dim = td.dim, ve = td.vdimExt;
    __gm__ float *ws = (__gm__ float *)GetUserWorkspace(workspace) + GetBlockIdx() * td.blockFloats;
    qf_.SetGlobalBuffer(ws + td.offQf, c * dim);
    kf_.SetGlobalBuffer(ws + td.offKf, c * dim);
    vf_.SetGlobalBuffer(ws + td.offVf, c * ve);
    g_.SetGlobalBuffer(ws + td.offG, c * ve);
    a_.SetGlobalBuffer(ws + td.offA, c * c);
    b_.SetGlobalBuffer(ws + td.offB, c * c);
    o_.SetGlobalBuffer(ws + td.offO, c * (dim > ve ? dim : ve));
    o2_.SetGlobalBuffer(ws + td.offO2, c * ve);
    state_.SetGlobalBuffer(ws + td.offState, dim * ve);
    gradState_.SetGlobalBuffer(ws + td.offGradState, dim * ve);

    uint64_t widest = dim > ve ? dim : ve;
    if (c > widest) widest = c;
    const uint32_t row = UbBytes(widest, 4);
    // Tiles of whole rows: a DMA and a vector op cover as many rows as fit, not one row each.
    tileBytes_ = row > kTileBytes ? row : kTileBytes;
    pipe.InitBuffer(inT_, 2, tileBytes_);
    pipe.InitBuffer(inF_, 1, tileBytes_);
    pipe.InitBuffer(outF_, 1, tileBytes_);
    pipe.InitBuffer(outT_, 1, tileBytes_);
    pipe.InitBuffer(xf_, tileBytes_);
    pipe.InitBuffer(yf_, tileBytes_);
    pipe.InitBuffer(tmp_, tileBytes_);
    pipe.InitBuffer(work_, row);
    pipe.InitBuffer(zero_, row);
    pipe.InitBuffer(one_, kUbAlign);
    pipe.InitBuffer(red_, kUbAlign);
    pipe.InitBuffer(rows_, UbBytes(c, 4));
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(row / 4));
    Duplicate(one_.Get<float>(), 1.0f, static_cast<int32_t>(kUbAlign / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    // The trailing 1 of every value row: the chunk passes only ever write the first Dv columns.
    for (uint64_t i = 0; i < c; ++i) CopyOut(vf_[i * ve + td.vdim], one_.Get<float>(), 1);
  }

  __aicore__ inline int64_t QBase(int64_t b, int64_t n) const { return b * td_->qStrideB + n * td_->qStrideN; }
  __aicore__ inline int64_t VBase(int64_t b, int64_t n) const { return b * td_->vStrideB + n * td_->vStrideN; }

  // A tile's rows sit `pitch` elements apart in UB, the pitch DataCopyPad gives a row of T (rounded
  // up to 32 bytes); fp32 tiles keep the same pitch, so an element keeps its index through a cast.
  __aicore__ inline uint32_t Pitch(uint32_t len) const { return UbBytes(len, sizeof(T)) / sizeof(T); }
  __aicore__ inline uint32_t TileRows(uint32_t pitch) const { return tileBytes_ / (pitch * 4); }

  // n GM rows of len elements, `stride` elements apart, into a UB tile of the given pitch.
  template <typename U>
  __aicore__ inline void TileIn(const AscendC::LocalTensor<U> &dst, const AscendC::GlobalTensor<U> &src, uint32_t n,
                                uint32_t len, int64_t stride, uint32_t pitch) {
    const uint32_t gap = (pitch * sizeof(U) - UbBytes(len, sizeof(U))) / kUbAlign;
    AscendC::DataCopyPad(dst, src,
                         AscendC::DataCopyExtParams(n, len * sizeof(U), (stride - len) * sizeof(U), gap, 0),
                         AscendC::DataCopyPadExtParams<U>(false, 0, 0, 0));
  }

  template <typename U>
  __aicore__ inline void TileOut(const AscendC::GlobalTensor<U> &dst, const AscendC::LocalTensor<U> &src, uint32_t n,
                                 uint32_t len, int64_t stride, uint32_t pitch) {
    const uint32_t gap = (pitch * sizeof(U) - UbBytes(len, sizeof(U))) / kUbAlign;
    AscendC::DataCopyPad(dst, src, AscendC::DataCopyExtParams(n, len * sizeof(U), gap, (stride - len) * sizeof(U), 0));
  }

  // fp32 rows dst[i * dstStride, + len) = phi(src rows) (or the rows themselves), i < rows.
  __aicore__ inline void LoadRows(const AscendC::GlobalTensor<T> &src, int64_t base, int64_t stride, uint32_t rows,
                                  uint32_t len, const AscendC::GlobalTensor<float> &dst, uint32_t dstStride,
                                  bool phi) {
    using namespace AscendC;
    const uint32_t pitch = Pitch(len), per = TileRows(pitch);
    for (uint32_t r0 = 0; r0 < rows; r0 += per) {
      const uint32_t n = rows - r0 < per ? rows - r0 : per, count = n * pitch;
      LocalTensor<T> x = inT_.template AllocTensor<T>();
      TileIn(x, src[base + int64_t(r0) * stride], n, len, stride, pitch);
      inT_.EnQue(x);
      x = inT_.template DeQue<T>();
      LocalTensor<float> xf = ToFloat(x, xf_, count);
      LocalTensor<float> y = outF_.template AllocTensor<float>();
      if (phi) {
        LocalTensor<float> t = tmp_.Get<float>();
        Mins(t, xf, 0.0f, count);
        Exp(t, t, count);
        Maxs(y, xf, 0.0f, count);
        Add(y, y, t, count);
      } else {
        Adds(y, xf, 0.0f, count);
      }
      inT_.FreeTensor(x);
      outF_.EnQue(y);
      y = outF_.template DeQue<float>();
      TileOut(dst[uint64_t(r0) * dstStride], y, n, len, dstStride, pitch);
      outF_.FreeTensor(y);
    }
  }

  // Zeroes the entries j > i of a rows x rows score tile (row stride rows): the causal mask
  // within a chunk (a row sees its own key).
  __aicore__ inline void MaskUpper(const AscendC::GlobalTensor<float> &tile, uint32_t rows) {
    AscendC::PipeBarrier<PIPE_ALL>();
    for (uint32_t i = 0; i + 1 < rows; ++i) CopyOut(tile[uint64_t(i) * rows + i + 1], zero_.Get<float>(), rows - 1 - i);
  }

  // c[m, n] (row stride n) = or += a[m, k] (row stride lda) x b[k, n] (row stride ldb).
  __aicore__ inline void MmNN(const AscendC::GlobalTensor<float> &c, const AscendC::GlobalTensor<float> &a, int lda,
                              const AscendC::GlobalTensor<float> &b, int ldb, int m, int n, int k, bool add) {
    AscendC::PipeBarrier<PIPE_ALL>();
    mmNN.SetOrgShape(m, ldb, lda, k);
    mmNN.SetSingleShape(m, n, k);
    mmNN.SetTensorA(a);
    mmNN.SetTensorB(b);
    mmNN.IterateAll(c, add ? 1 : 0, true);
    mmNN.End();
    AscendC::PipeBarrier<PIPE_ALL>();
  }

  // c[m, n] = or += a[m, k] x bᵀ, b stored [n, k] (row stride ldb).
  __aicore__ inline void MmNT(const AscendC::GlobalTensor<float> &c, const AscendC::GlobalTensor<float> &a, int lda,
                              const AscendC::GlobalTensor<float> &b, int ldb, int m, int n, int k, bool add) {
    AscendC::PipeBarrier<PIPE_ALL>();
    mmNT.SetOrgShape(m, n, lda, ldb);
    mmNT.SetSingleShape(m, n, k);
    mmNT.SetTensorA(a);
    mmNT.SetTensorB(b, true);
    mmNT.IterateAll(c, add ? 1 : 0, true);
    mmNT.End();
    AscendC::PipeBarrier<PIPE_ALL>();
  }

  // c[m, n] = or += aᵀ x b, a stored [k, m] (row stride lda), b [k, n] (row stride ldb).
  __aicore__ inline void MmTN(const AscendC::GlobalTensor<float> &c, const AscendC::GlobalTensor<float> &a, int lda,
                              const AscendC::GlobalTensor<float> &b, int ldb, int m, int n, int k, bool add) {
    AscendC::PipeBarrier<PIPE_ALL>();
    mmTN.SetOrgShape(lda, ldb, k, k);
    mmTN.SetSingleShape(m, n, k);
    mmTN.SetTensorA(a, true);
    mmTN.SetTensorB(b);
    mmTN.IterateAll(c, add ? 1 : 0, true);
    mmTN.End();
    AscendC::PipeBarrier<PIPE_ALL>();
  }

  // A fp32 UB row into a T row (a copy for float).
  __aicore__ inline void Narrow(const AscendC::LocalTensor<T> &out, const AscendC::LocalTensor<float> &in,
                                uint32_t len) {
    if constexpr (AscendC::IsSameType<T, float>::value) {
      AscendC::Adds(out, in, 0.0f, len);
    } else {
      AscendC::Cast(out, in, AscendC::RoundMode::CAST_RINT, len);
    }
  }

  // The previous chunk's cube reads and vector copies out of the workspace are complete.
  __aicore__ inline void PipeAll() { AscendC::PipeBarrier<PIPE_ALL>(); }

  __aicore__ inline void EndMatmuls() {
    mmNT.End();
    mmNN.End();
    mmTN.End();
  }

  AscendC::TQue<AscendC::QuePosition::VECIN, 2> inT_;
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> inF_;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> outF_, outT_;
  AscendC::TBuf<AscendC::TPosition::VECCALC> xf_, yf_, tmp_, work_, zero_, one_, red_, rows_;
  AscendC::GlobalTensor<float> qf_, kf_, vf_, g_, a_, b_, o_, o2_, state_, gradState_;
  const LinearAttentionTilingData *td_ = nullptr;
  uint32_t tileBytes_ = 0;
  // Eight tile buffers (96 KB with inT_'s two) stay well inside the 184 KB of UB.
  static constexpr uint32_t kTileBytes = 12 * 1024;
};

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_LINEAR_ATTENTION_KERNEL_H_
