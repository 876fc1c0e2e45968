// linear_attention: per head, with phi(x) = ELU(x) + 1,
//   out_i = phi(Q_i) H_i / den_i,  den_i = phi(Q_i) . z_i + eps,
// where H_i = Σ phi(K_s)ᵀ V_s and z_i = Σ phi(K_s) run over all s (non-causal) or s <= i (causal).
// The normalizer output is den [B, N, S] (float32), which the gradient reuses.
//
// Value rows carry a trailing 1 (V' = [V, 1]), so the state S' = Σ phi(K_s)ᵀ V'_s [D, Dv + 1] holds
// H and z side by side and one product phi(Q) S' gives numerator and denominator together.
// Non-causal: a first pass over the chunks accumulates S', a second one outputs phi(Q_c) S'.
// Causal: one pass; chunk c outputs phi(Q_c) S'_prev + mask(phi(Q_c) phi(K_c)ᵀ) V'_c (the masked
// chunk x chunk tile holds the in-chunk terms) and then adds its own phi(K_c)ᵀ V'_c to S'.
// O(S·D·Dv + S·chunk·(D + Dv)) work per head; no S x S buffer.
#include "../../linear_attention_kernel.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

template <typename T>
class LinearAttentionKernel : public LinearAttentionBase<T> {
 public:
  __aicore__ inline LinearAttentionKernel() {}

  __aicore__ inline void Init(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR out, GM_ADDR den, GM_ADDR workspace,
                              const LinearAttentionTilingData &td) {
    const uint64_t qElems = uint64_t(td.batch) * td.heads * td.seq * td.dim;
    const uint64_t vElems = uint64_t(td.batch) * td.heads * td.seq * td.vdim;
    qGm_.SetGlobalBuffer((__gm__ T *)q, qElems);
    kGm_.SetGlobalBuffer((__gm__ T *)k, qElems);
    vGm_.SetGlobalBuffer((__gm__ T *)v, vElems);
    outGm_.SetGlobalBuffer((__gm__ T *)out, vElems);
    denGm_.SetGlobalBuffer((__gm__ float *)den, uint64_t(td.batch) * td.heads * td.seq);
    this->InitBase(workspace, td);
  }

  __aicore__ inline void Process() {
    const LinearAttentionTilingData &td = *this->td_;
    const int64_t items = td.batch * td.heads;
    for (int64_t it = GetBlockIdx(); it < items; it += GetBlockNum()) Head(it / td.heads, it % td.heads);
    this->EndMatmuls();
  }

 private:
  __aicore__ inline void Head(int64_t b, int64_t n) {
    const LinearAttentionTilingData &td = *this->td_;
    const int d = static_cast<int>(td.dim), ve = static_cast<int>(td.vdimExt);
    const int64_t qBase = this->QBase(b, n), vBase = this->VBase(b, n);
    if (td.causal == 0) {
      for (int64_t c0 = 0; c0 < td.seq; c0 += td.chunk) {
        const int c = static_cast<int>(Min64(td.chunk, td.seq - c0));
        LoadKeyValue(qBase, vBase, c0, c);
        this->MmTN(this->state_, this->kf_, d, this->vf_, ve, d, ve, c, c0 > 0);
      }
      for (int64_t c0 = 0; c0 < td.seq; c0 += td.chunk) {
        const int c = static_cast<int>(Min64(td.chunk, td.seq - c0));
        this->PipeAll();
        this->LoadRows(qGm_, qBase + c0 * td.qRow, td.qRow, c, d, this->qf_, d, true);
        this->MmNN(this->o_, this->qf_, d, this->state_, ve, c, ve, d, false);
        Normalize(b, n, c0, c);
      }
      return;
    }
    for (int64_t c0 = 0; c0 < td.seq; c0 += td.chunk) {
      const int c = static_cast<int>(Min64(td.chunk, td.seq - c0));
      this->PipeAll();
      this->LoadRows(qGm_, qBase + c0 * td.qRow, td.qRow, c, d, this->qf_, d, true);
      LoadKeyValue(qBase, vBase, c0, c);
      this->MmNT(this->a_, this->qf_, d, this->kf_, d, c, c, d, false);
      this->MaskUpper(this->a_, c);
      this->MmNN(this->o_, this->a_, c, this->vf_, ve, c, ve, c, false);
      if (c0 > 0) this->MmNN(this->o_, this->qf_, d, this->state_, ve, c, ve, d, true);
      this->MmTN(this->state_, this->kf_, d, this->vf_, ve, d, ve, c, c0 > 0);
      Normalize(b, n, c0, c);
    }
  }

  __aicore__ inline void LoadKeyValue(int64_t qBase, int64_t vBase, int64_t c0, int c) {
    const LinearAttentionTilingData &td = *this->td_;
    this->PipeAll();
    this->LoadRows(kGm_, qBase + c0 * td.qRow, td.qRow, c, td.dim, this->kf_, td.dim, true);
    this->LoadRows(vGm_, vBase + c0 * td.vRow, td.vRow, c, td.vdim, this->vf_, td.vdimExt, false);
  }

  // out rows = numerator / den and den = last column + eps, from the chunk's products in o_.
  __aicore__ inline void Normalize(int64_t b, int64_t n, int64_t c0, int c) {
    const LinearAttentionTilingData &td = *this->td_;
    const uint32_t dv = static_cast<uint32_t>(td.vdim), ve = td.vdimExt;
    const uint32_t pitch = this->Pitch(ve), per = this->TileRows(pitch);
    const int64_t vBase = this->VBase(b, n);
    LocalTensor<float> dens = this->rows_.template Get<float>();
    // The previous chunk's normalizers have left for GM before this one's are written.
    OrderPipes<HardEvent::MTE3_S>(&this->pipe);
    for (uint32_t r0 = 0; r0 < uint32_t(c); r0 += per) {
      const uint32_t rows = uint32_t(c) - r0 < per ? uint32_t(c) - r0 : per;
      LocalTensor<float> o = this->inF_.template AllocTensor<float>();
      this->TileIn(o, this->o_[uint64_t(r0) * ve], rows, ve, ve, pitch);
      this->inF_.EnQue(o);
      o = this->inF_.template DeQue<float>();
      OrderPipes<HardEvent::MTE2_S>(&this->pipe);
      for (uint32_t i = 0; i < rows; ++i) {
        const float den = o.GetValue(i * pitch + dv) + td.eps;
        dens.SetValue(r0 + i, den);
        Muls(o[i * pitch], o[i * pitch], 1.0f / den, dv);
      }
      LocalTensor<T> y = this->outT_.template AllocTensor<T>();
      this->Narrow(y, o, rows * pitch);
      this->inF_.FreeTensor(o);
      this->outT_.EnQue(y);
      y = this->outT_.template DeQue<T>();
      this->TileOut(outGm_[vBase + (c0 + r0) * td.vRow], y, rows, dv, td.vRow, pitch);
      this->outT_.FreeTensor(y);
    }
    OrderPipes<HardEvent::S_MTE3>(&this->pipe);
    CopyOut(denGm_[(b * td.heads + n) * td.seq + c0], dens, static_cast<uint32_t>(c));
  }

  GlobalTensor<T> qGm_, kGm_, vGm_, outGm_;
  GlobalTensor<float> denGm_;
};

template <typename T>
__aicore__ inline void Run(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR out, GM_ADDR den, GM_ADDR workspace,
                           const LinearAttentionTilingData &td) {
  LinearAttentionKernel<T> op;
  // At kernel scope and outside any braces, before any InitBuffer: the vector core's client of
  // the cube core must live until the kernel ends.
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmNT, &td.mmNT, op.mmNN, &td.mmNN, op.mmTN, &td.mmTN);
  op.Init(q, k, v, out, den, workspace, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void linear_attention(GM_ADDR query, GM_ADDR key, GM_ADDR value,
                                                       GM_ADDR attentionOut, GM_ADDR normalizer, GM_ADDR workspace,
                                                       GM_ADDR tiling) {
  // Cube and vector work in one kernel: one AIV per AIC, so a block is one core pair.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(LinearAttentionTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(query, key, value, attentionOut, normalizer, workspace, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(query, key, value, attentionOut, normalizer, workspace, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(query, key, value, attentionOut, normalizer, workspace, td);
  }
}
