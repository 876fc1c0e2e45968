// linear_attention_grad: dq, dk, dv of linear_attention (see its kernel for the notation).
// With den the forward's normalizer, each row gets G'_i = [dO_i / den_i, r_i] with
// r_i = -(dO_i · out_i) / den_i, the gradient reaching den_i; against V' = [V, 1] the tile
// B = G' V'ᵀ holds g_i · V_s + r_i, the gradient of the score a_is = phi(Q_i) · phi(K_s). Then
//   dphi(Q) = B phi(K),  dphi(K) = Bᵀ phi(Q),  dV' = Aᵀ G'  (A the scores, first Dv columns),
// over the attending pairs; dQ = dphi(Q) · exp(min(Q, 0)) and the same for K.
//
// Non-causal: S' = Σ phi(K)ᵀ V' (pass 1); dphi(Q_c) = G'_c S'ᵀ and R' = Σ phi(Q)ᵀ G' (pass 2);
// dphi(K_c) = V'_c R'ᵀ, dV'_c = phi(K_c) R' (pass 3).
// Causal: a forward pass over the chunks adds the prefix state S' of the earlier chunks to the
// masked in-chunk tile B phi(K_c), a backward pass adds the suffix state R' of the later chunks to
// the masked in-chunk tiles Bᵀ phi(Q_c) and Aᵀ G'_c. Each chunk's rows are written once, in a fixed
// order: the gradients are deterministic. No S x S buffer.
#include "../../linear_attention_kernel.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

template <typename T>
class LinearAttentionGradKernel : public LinearAttentionBase<T> {
 public:
  __aicore__ inline LinearAttentionGradKernel() {}

  __aicore__ inline void Init(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR dout, GM_ADDR out, GM_ADDR den, GM_ADDR dq,
                              GM_ADDR dk, GM_ADDR dv, GM_ADDR workspace, const LinearAttentionTilingData &td) {
    const uint64_t qElems = uint64_t(td.batch) * td.heads * td.seq * td.dim;
    const uint64_t vElems = uint64_t(td.batch) * td.heads * td.seq * td.vdim;
    qGm_.SetGlobalBuffer((__gm__ T *)q, qElems);
    kGm_.SetGlobalBuffer((__gm__ T *)k, qElems);
    vGm_.SetGlobalBuffer((__gm__ T *)v, vElems);
    doutGm_.SetGlobalBuffer((__gm__ T *)dout, vElems);
    outGm_.SetGlobalBuffer((__gm__ T *)out, vElems);
    denGm_.SetGlobalBuffer((__gm__ float *)den, uint64_t(td.batch) * td.heads * td.seq);
    dqGm_.SetGlobalBuffer((__gm__ T *)dq, qElems);
    dkGm_.SetGlobalBuffer((__gm__ T *)dk, qElems);
    dvGm_.SetGlobalBuffer((__gm__ T *)dv, vElems);
    this->InitBase(workspace, td);
  }

  __aicore__ inline void Process() {
    const LinearAttentionTilingData &td = *this->td_;
    const int64_t items = td.batch * td.heads;
    for (int64_t it = GetBlockIdx(); it < items; it += GetBlockNum()) {
      batch_ = it / td.heads;
      head_ = it % td.heads;
      qBase_ = this->QBase(batch_, head_);
      vBase_ = this->VBase(batch_, head_);
      if (td.causal == 0) {
        NonCausal();
      } else {
        Causal();
      }
    }
    this->EndMatmuls();
  }

 private:
  __aicore__ inline int Rows(int64_t c0) const {
    return static_cast<int>(Min64(this->td_->chunk, this->td_->seq - c0));
  }

  __aicore__ inline void NonCausal() {
    const LinearAttentionTilingData &td = *this->td_;
    const int d = static_cast<int>(td.dim), ve = static_cast<int>(td.vdimExt);
    for (int64_t c0 = 0; c0 < td.seq; c0 += td.chunk) {
      const int c = Rows(c0);
      Load(c0, c, false, true, true, false);
      this->MmTN(this->state_, this->kf_, d, this->vf_, ve, d, ve, c, c0 > 0);
    }
    for (int64_t c0 = 0; c0 < td.seq; c0 += td.chunk) {
      const int c = Rows(c0);
      Load(c0, c, true, false, false, true);
      this->MmNT(this->o_, this->g_, ve, this->state_, ve, c, d, ve, false);
      this->MmTN(this->gradState_, this->qf_, d, this->g_, ve, d, ve, c, c0 > 0);
      WriteFeatureGrad(dqGm_, qGm_, c0, c);
    }
    for (int64_t c0 = 0; c0 < td.seq; c0 += td.chunk) {
      const int c = Rows(c0);
      Load(c0, c, false, true, true, false);
      this->MmNT(this->o_, this->vf_, ve, this->gradState_, ve, c, d, ve, false);
      this->MmNN(this->o2_, this->kf_, d, this->gradState_, ve, c, ve, d, false);
      WriteFeatureGrad(dkGm_, kGm_, c0, c);
      WriteValueGrad(c0, c);
    }
  }

  __aicore__ inline void Causal() {
    const LinearAttentionTilingData &td = *this->td_;
    const int d = static_cast<int>(td.dim), ve = static_cast<int>(td.vdimExt);
    for (int64_t c0 = 0; c0 < td.seq; c0 += td.chunk) {
      const int c = Rows(c0);
      Tiles(c0, c, false);
      this->MmNN(this->o_, this->b_, c, this->kf_, d, c, d, c, false);
      if (c0 > 0) this->MmNT(this->o_, this->g_, ve, this->state_, ve, c, d, ve, true);
      this->MmTN(this->state_, this->kf_, d, this->vf_, ve, d, ve, c, c0 > 0);
      WriteFeatureGrad(dqGm_, qGm_, c0, c);
    }
    const int64_t last = (td.seq - 1) / td.chunk * td.chunk;
    for (int64_t c0 = last; c0 >= 0; c0 -= td.chunk) {
      const int c = Rows(c0);
      const bool later = c0 < last;
      Tiles(c0, c, true);
      this->MmTN(this->o_, this->b_, c, this->qf_, d, c, d, c, false);
      if (later) this->MmNT(this->o_, this->vf_, ve, this->gradState_, ve, c, d, ve, true);
      this->MmTN(this->o2_, this->a_, c, this->g_, ve, c, ve, c, false);
      if (later) this->MmNN(this->o2_, this->kf_, d, this->gradState_, ve, c, ve, d, true);
      this->MmTN(this->gradState_, this->qf_, d, this->g_, ve, d, ve, c, later);
      WriteFeatureGrad(dkGm_, kGm_, c0, c);
      WriteValueGrad(c0, c);
    }
  }

  // All four row sets of a chunk and its masked tiles B = G' V'ᵀ (and A = phi(Q) phi(K)ᵀ).
  __aicore__ inline void Tiles(int64_t c0, int c, bool scores) {
    const int d = static_cast<int>(this->td_->dim), ve = static_cast<int>(this->td_->vdimExt);
    Load(c0, c, true, true, true, true);
    this->MmNT(this->b_, this->g_, ve, this->vf_, ve, c, c, ve, false);
    this->MaskUpper(this->b_, c);
    if (scores) {
      this->MmNT(this->a_, this->qf_, d, this->kf_, d, c, c, d, false);
      this->MaskUpper(this->a_, c);
    }
  }

  __aicore__ inline void Load(int64_t c0, int c, bool q, bool k, bool v, bool g) {
    const LinearAttentionTilingData &td = *this->td_;
    const uint32_t d = static_cast<uint32_t>(td.dim);
    this->PipeAll();
    if (q) this->LoadRows(qGm_, qBase_ + c0 * td.qRow, td.qRow, c, d, this->qf_, d, true);
    if (k) this->LoadRows(kGm_, qBase_ + c0 * td.qRow, td.qRow, c, d, this->kf_, d, true);
    if (v) this->LoadRows(vGm_, vBase_ + c0 * td.vRow, td.vRow, c, td.vdim, this->vf_, td.vdimExt, false);
    if (g) LoadGrad(c0, c);
  }

  // G' rows [dO_i / den_i, -(dO_i · out_i) / den_i] of the chunk into g_.
  __aicore__ inline void LoadGrad(int64_t c0, int c) {
    const LinearAttentionTilingData &td = *this->td_;
    const uint32_t dv = static_cast<uint32_t>(td.vdim), ve = td.vdimExt;
    const uint32_t pitch = this->Pitch(ve), per = this->TileRows(pitch);
    LocalTensor<float> dens = this->rows_.template Get<float>(), red = this->red_.template Get<float>();
    CopyIn(dens, denGm_[(batch_ * td.heads + head_) * td.seq + c0], static_cast<uint32_t>(c));
    OrderPipes<HardEvent::MTE2_S>(&this->pipe);
    for (uint32_t r0 = 0; r0 < uint32_t(c); r0 += per) {
      const uint32_t rows = uint32_t(c) - r0 < per ? uint32_t(c) - r0 : per, count = rows * pitch;
      const int64_t row = vBase_ + (c0 + r0) * td.vRow;
      LocalTensor<T> dy = this->inT_.template AllocTensor<T>();
      LocalTensor<T> o = this->inT_.template AllocTensor<T>();
      this->TileIn(dy, doutGm_[row], rows, dv, td.vRow, pitch);
      this->TileIn(o, outGm_[row], rows, dv, td.vRow, pitch);
      this->inT_.EnQue(dy);
      this->inT_.EnQue(o);
      dy = this->inT_.template DeQue<T>();
      o = this->inT_.template DeQue<T>();
      LocalTensor<float> dyf = ToFloat(dy, this->xf_, count), of = ToFloat(o, this->yf_, count);
      LocalTensor<float> t = this->tmp_.template Get<float>();
      Mul(t, dyf, of, count);
      LocalTensor<float> g = this->outF_.template AllocTensor<float>();
      for (uint32_t i = 0; i < rows; ++i) {
        const float inv = 1.0f / dens.GetValue(r0 + i);
        ReduceSum(red, t[i * pitch], this->work_.template Get<float>(), dv);
        Muls(g[i * pitch], dyf[i * pitch], inv, dv);
        // The scalar reads the reduction and writes the row's last element next to the vector's.
        OrderPipes<HardEvent::V_S>(&this->pipe);
        g.SetValue(i * pitch + dv, -red.GetValue(0) * inv);
      }
      this->inT_.FreeTensor(dy);
      this->inT_.FreeTensor(o);
      OrderPipes<HardEvent::S_MTE3>(&this->pipe);
      this->outF_.EnQue(g);
      g = this->outF_.template DeQue<float>();
      this->TileOut(this->g_[uint64_t(r0) * ve], g, rows, ve, ve, pitch);
      this->outF_.FreeTensor(g);
    }
  }

  // Rows of dX = dphi(X) · exp(min(X, 0)) from the chunk's dphi rows in o_.
  __aicore__ inline void WriteFeatureGrad(const GlobalTensor<T> &dst, const GlobalTensor<T> &x, int64_t c0, int c) {
    const LinearAttentionTilingData &td = *this->td_;
    const uint32_t d = static_cast<uint32_t>(td.dim);
    const uint32_t pitch = this->Pitch(d), per = this->TileRows(pitch);
    this->PipeAll();
    for (uint32_t r0 = 0; r0 < uint32_t(c); r0 += per) {
      const uint32_t rows = uint32_t(c) - r0 < per ? uint32_t(c) - r0 : per, count = rows * pitch;
      const int64_t row = qBase_ + (c0 + r0) * td.qRow;
      LocalTensor<float> gf = this->inF_.template AllocTensor<float>();
      LocalTensor<T> xr = this->inT_.template AllocTensor<T>();
      this->TileIn(gf, this->o_[uint64_t(r0) * d], rows, d, d, pitch);
      this->TileIn(xr, x[row], rows, d, td.qRow, pitch);
      this->inF_.EnQue(gf);
      this->inT_.EnQue(xr);
      gf = this->inF_.template DeQue<float>();
      xr = this->inT_.template DeQue<T>();
      LocalTensor<float> xf = ToFloat(xr, this->xf_, count), t = this->tmp_.template Get<float>();
      Mins(t, xf, 0.0f, count);
      Exp(t, t, count);
      Mul(t, t, gf, count);
      this->inF_.FreeTensor(gf);
      this->inT_.FreeTensor(xr);
      LocalTensor<T> y = this->outT_.template AllocTensor<T>();
      this->Narrow(y, t, count);
      this->outT_.EnQue(y);
      y = this->outT_.template DeQue<T>();
      this->TileOut(dst[row], y, rows, d, td.qRow, pitch);
      this->outT_.FreeTensor(y);
    }
  }

  // Rows of dv: the first Dv columns of the chunk's dV' rows in o2_.
  __aicore__ inline void WriteValueGrad(int64_t c0, int c) {
    const LinearAttentionTilingData &td = *this->td_;
    const uint32_t dv = static_cast<uint32_t>(td.vdim);
    const uint32_t pitch = this->Pitch(dv), per = this->TileRows(pitch);
    for (uint32_t r0 = 0; r0 < uint32_t(c); r0 += per) {
      const uint32_t rows = uint32_t(c) - r0 < per ? uint32_t(c) - r0 : per;
      LocalTensor<float> gf = this->inF_.template AllocTensor<float>();
      this->TileIn(gf, this->o2_[uint64_t(r0) * td.vdimExt], rows, dv, td.vdimExt, pitch);
      this->inF_.EnQue(gf);
      gf = this->inF_.template DeQue<float>();
      LocalTensor<T> y = this->outT_.template AllocTensor<T>();
      this->Narrow(y, gf, rows * pitch);
      this->inF_.FreeTensor(gf);
      this->outT_.EnQue(y);
      y = this->outT_.template DeQue<T>();
      this->TileOut(dvGm_[vBase_ + (c0 + r0) * td.vRow], y, rows, dv, td.vRow, pitch);
      this->outT_.FreeTensor(y);
    }
  }

  GlobalTensor<T> qGm_, kGm_, vGm_, doutGm_, outGm_, dqGm_, dkGm_, dvGm_;
  GlobalTensor<float> denGm_;
  int64_t batch_ = 0, head_ = 0, qBase_ = 0, vBase_ = 0;
};

template <typename T>
__aicore__ inline void Run(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR dout, GM_ADDR out, GM_ADDR den, GM_ADDR dq,
                           GM_ADDR dk, GM_ADDR dv, GM_ADDR workspace, const LinearAttentionTilingData &td) {
  LinearAttentionGradKernel<T> op;
  // At kernel scope and outside any braces, before any InitBuffer: the vector core's client of
  // the cube core must live until the kernel ends.
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmNT, &td.mmNT, op.mmNN, &td.mmNN, op.mmTN, &td.mmTN);
  op.Init(q, k, v, dout, out, den, dq, dk, dv, workspace, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void linear_attention_grad(GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR dout,
                                                            GM_ADDR attentionOut, GM_ADDR normalizer, GM_ADDR dq,
                                                            GM_ADDR dk, GM_ADDR dv, GM_ADDR workspace,
                                                            GM_ADDR tiling) {
  // Cube and vector work in one kernel: one AIV per AIC, so a block is one core pair.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(LinearAttentionTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(query, key, value, dout, attentionOut, normalizer, dq, dk, dv, workspace, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(query, key, value, dout, attentionOut, normalizer, dq, dk, dv, workspace, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(query, key, value, dout, attentionOut, normalizer, dq, dk, dv, workspace, td);
  }
}
