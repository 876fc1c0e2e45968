// The kernel of the indexer's KL loss: sparse_lightning_indexer_grad_kl_loss over each token's
// selected keys (sparse_indices >= 0), dense_lightning_indexer_grad_kl_loss over all its visible
// keys. For a query token t and key head n with keys j:
//   target  p_j ∝ Σ_g softmax_g(j): the main attention's probabilities, rebuilt from its query,
//           key (and rope parts), scale and the forward's softmax_max / softmax_sum, summed over
//           the heads g of n's group and L1-normalised over the keys;
//   indexer I_j = Σ_h w[h] ReLU(q_index[h] · k_index[j]),  s = softmax(I) over the same keys;
//   loss  += Σ_j p_j (log p_j - log s_j),   dI = s - p  (seed 000's identity),
// and the engine (lightning_indexer_grad_kernel.h) takes dI to d query_index, d key_index and
// d weights. Each token's loss waits in the workspace; block 0 adds them in token order after
// the SyncAll, so the loss, like the key gradient, is deterministic. Kernel code only.
#ifndef MS_OPS_DSA_LIGHTNING_INDEXER_KL_LOSS_KERNEL_H_
#define MS_OPS_DSA_LIGHTNING_INDEXER_KL_LOSS_KERNEL_H_

#include "lightning_indexer_grad_kernel.h"

namespace ms_ops {
namespace kernel {

using AscendC::CMPMODE;
using AscendC::GlobalTensor;
using AscendC::HardEvent;
using AscendC::LocalTensor;
using AscendC::SELMODE;
using AscendC::TBuf;
using AscendC::TPosition;
using AscendC::GetBlockIdx;
using AscendC::GetUserWorkspace;
using AscendC::PipeBarrier;

// Stands for -inf in the lanes past the live keys: exp of it minus a score is exactly 0 in float,
// with no inf - inf on the way.
constexpr float kFar = -1.0e30f;

// Dense: the keys are every visible key of the token (the warm-up's dense attention), not
// sparse_indices' selection.
template <typename T, bool Dense>
class KlLossKernel : public LightningIndexerGradBase<T, KlLossKernel<T, Dense>> {
  using Base = LightningIndexerGradBase<T, KlLossKernel<T, Dense>>;
  friend Base;

 public:
  __aicore__ inline KlLossKernel() {}

  __aicore__ inline void Init(GM_ADDR q, GM_ADDR k, GM_ADDR qIdx, GM_ADDR kIdx, GM_ADDR w, GM_ADDR indices,
                              GM_ADDR sMax, GM_ADDR sSum, GM_ADDR qRope, GM_ADDR kRope, GM_ADDR qLen, GM_ADDR kLen,
                              GM_ADDR dqIdx, GM_ADDR dkIdx, GM_ADDR dw, GM_ADDR loss, GM_ADDR workspace,
                              const LightningIndexerGradTilingData &td) {
    qmGm_.SetGlobalBuffer((__gm__ T *)q);
    kmGm_.SetGlobalBuffer((__gm__ T *)k);
    qrGm_.SetGlobalBuffer((__gm__ T *)qRope);
    krGm_.SetGlobalBuffer((__gm__ T *)kRope);
    maxGm_.SetGlobalBuffer((__gm__ float *)sMax);
    sumGm_.SetGlobalBuffer((__gm__ float *)sSum);
    lossGm_.SetGlobalBuffer((__gm__ float *)loss, 1);
    this->InitBase(qIdx, kIdx, indices, w, qLen, kLen, dqIdx, dkIdx, dw, workspace, td);
    __gm__ float *base = (__gm__ float *)GetUserWorkspace(workspace);
    __gm__ float *ws = base + GetBlockIdx() * td.blockFloats;
    const uint64_t mw = uint64_t(td.mainDim + td.ropeDim), kp = td.kPad;
    mq_.SetGlobalBuffer(ws + td.offMq, uint64_t(td.mainGroup) * mw);
    mk_.SetGlobalBuffer(ws + td.offMk, kp * mw);
    ms_.SetGlobalBuffer(ws + td.offMs, uint64_t(td.mainGroup) * kp);
    tokLoss_.SetGlobalBuffer(base + td.offLoss, uint64_t(td.tokens1) * td.n2);
    this->pipe.InitBuffer(p_, UbBytes(kp, 4));
    this->pipe.InitBuffer(idx_, UbBytes(kp, 4));
    this->pipe.InitBuffer(t2_, UbBytes(kp, 4));
    this->pipe.InitBuffer(lane_, UbBytes(kp, 4));
    this->pipe.InitBuffer(pMask_, UbBytes(kp / 8, 1));
    CreateVecIndex(lane_.Get<float>(), 0.0f, static_cast<uint32_t>(kp));
    this->ZeroGm(mk_, kp * mw);
    PipeBarrier<PIPE_ALL>();
  }

 private:
  __aicore__ inline uint32_t Keys(const LigSeg &seg, int64_t i, int64_t sel) {
    if constexpr (Dense) {
      return this->AllVisible(seg, i);
    } else {
      if (!this->td_->band) return this->Gather(seg, sel);
      int64_t first, last;
      this->KeyRange(seg, i, first, last);
      return this->Gather(seg, sel, first, last);
    }
  }

  __aicore__ inline void DeltaI(const LigSeg &seg, int64_t i, int64_t n, int64_t, uint32_t live, uint32_t kp) {
    const LightningIndexerGradTilingData &td = *this->td_;
    const int64_t row = seg.qStart + i;
    const float lossTok = Target(seg, i, n, live, kp);
    StoreLoss(uint64_t(row * td.n2 + n), lossTok + Indexer(kp));
  }

  // One float to the per-token losses (through UB: the blocks' results meet at the SyncAll).
  __aicore__ inline void StoreLoss(uint64_t slot, float value) {
    LocalTensor<float> red = this->red_.template Get<float>();
    Duplicate(red, value, 8);
    OrderPipes<HardEvent::V_MTE3>(&this->pipe);
    CopyOut(tokLoss_[slot], red, 1);
    OrderPipes<HardEvent::MTE3_V>(&this->pipe);
  }

  // p_ = the target over the kp lanes (0 past the live keys); returns Σ p log p.
  __aicore__ inline float Target(const LigSeg &seg, int64_t i, int64_t n, uint32_t live, uint32_t kp) {
    const LightningIndexerGradTilingData &td = *this->td_;
    const int64_t row = seg.qStart + i, mg = td.mainGroup, md = td.mainDim, dr = td.ropeDim;
    const uint32_t mw = static_cast<uint32_t>(md + dr);
    const int64_t qRow = row * td.mainN1 + n * mg;
    this->LoadRows(qmGm_, qRow * md, md, static_cast<uint32_t>(mg), static_cast<uint32_t>(md), mq_, mw);
    if (dr > 0) this->LoadRows(qrGm_, qRow * dr, dr, static_cast<uint32_t>(mg), static_cast<uint32_t>(dr), mq_[md], mw);
    this->LoadKeyRows(kmGm_, seg.kStart, td.mainN2, n, md, live, mk_, mw);
    if (dr > 0) this->LoadKeyRows(krGm_, seg.kStart, td.mainN2, n, dr, live, mk_[md], mw);
    this->MmNT(ms_, mq_, mw, mk_, mw, static_cast<int>(mg), static_cast<int>(kp), static_cast<int>(mw));
    // The statistics of head g of the group: (B, N2, S1, G) or (N2, T1, G).
    const int64_t stat = td.qLenMode == 2 ? (n * td.tokens1 + row) * mg
                                          : ((seg.qStart / td.seq1 * td.mainN2 + n) * td.seq1 + i) * mg;
    LocalTensor<float> p = p_.Get<float>(), t = this->tmp_.template Get<float>(), red = this->red_.template Get<float>();
    LocalTensor<uint8_t> liveMask = this->mask_.template Get<uint8_t>(), pMask = pMask_.Get<uint8_t>();
    Duplicate(p, 0.0f, static_cast<int32_t>(kp));
    CompareScalar(liveMask, lane_.Get<float>(), static_cast<float>(live), CMPMODE::LT, kp);
    const uint32_t per = this->tileBytes_ / (kp * 4);
    for (uint32_t g0 = 0; g0 < uint32_t(mg); g0 += per) {
      const uint32_t nr = uint32_t(mg) - g0 < per ? uint32_t(mg) - g0 : per;
      LocalTensor<float> x = this->inQ_.template AllocTensor<float>();
      CopyIn(x, ms_[uint64_t(g0) * kp], nr * kp);
      this->inQ_.EnQue(x);
      x = this->inQ_.template DeQue<float>();
      for (uint32_t j = 0; j < nr; ++j) {
        const float mx = maxGm_.GetValue(uint64_t(stat + g0 + j)), sm = sumGm_.GetValue(uint64_t(stat + g0 + j));
        Muls(t, x[j * kp], td.scale, static_cast<int32_t>(kp));
        Adds(t, t, -mx, static_cast<int32_t>(kp));
        Exp(t, t, static_cast<int32_t>(kp));
        Muls(t, t, sm > 0.0f ? 1.0f / sm : 0.0f, static_cast<int32_t>(kp));
        Add(p, p, t, static_cast<int32_t>(kp));
      }
      this->inQ_.FreeTensor(x);
    }
    Select(p, liveMask, p, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, kp);
    ReduceSum(red, p, this->redTmp_.template Get<float>(), static_cast<int32_t>(kp));
    OrderPipes<HardEvent::V_S>(&this->pipe);
    const float total = red.GetValue(0);
    OrderPipes<HardEvent::S_V>(&this->pipe);
    mass_ = total > 0.0f ? 1.0f : 0.0f;
    Muls(p, p, total > 0.0f ? 1.0f / total : 0.0f, static_cast<int32_t>(kp));
    // Σ p log p over the lanes with p > 0 (log 1 = 0 stands in elsewhere).
    CompareScalar(pMask, p, 0.0f, CMPMODE::GT, kp);
    Select(t, pMask, p, 1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, kp);
    Ln(t, t, static_cast<int32_t>(kp));
    Mul(t, t, p, static_cast<int32_t>(kp));
    ReduceSum(red, t, this->redTmp_.template Get<float>(), static_cast<int32_t>(kp));
    OrderPipes<HardEvent::V_S>(&this->pipe);
    const float plogp = red.GetValue(0);
    OrderPipes<HardEvent::S_V>(&this->pipe);
    return plogp;
  }

  // From the indexer scores (s_) and weights: dI_ = softmax(I) - p_; returns -Σ p log softmax(I).
  __aicore__ inline float Indexer(uint32_t kp) {
    const uint32_t g = static_cast<uint32_t>(this->td_->group);
    LocalTensor<float> p = p_.Get<float>(), I = idx_.Get<float>(), t = this->tmp_.template Get<float>();
    LocalTensor<float> e = t2_.Get<float>(), red = this->red_.template Get<float>(), w = this->wRow_.template Get<float>();
    LocalTensor<float> dI = this->dI_.template Get<float>();
    LocalTensor<uint8_t> liveMask = this->mask_.template Get<uint8_t>();
    Duplicate(I, 0.0f, static_cast<int32_t>(kp));
    const uint32_t per = this->tileBytes_ / (kp * 4);
    for (uint32_t g0 = 0; g0 < g; g0 += per) {
      const uint32_t nr = g - g0 < per ? g - g0 : per;
      LocalTensor<float> x = this->inQ_.template AllocTensor<float>();
      CopyIn(x, this->s_[uint64_t(g0) * kp], nr * kp);
      this->inQ_.EnQue(x);
      x = this->inQ_.template DeQue<float>();
      for (uint32_t j = 0; j < nr; ++j) {
        Relu(t, x[j * kp], static_cast<int32_t>(kp));
        Muls(t, t, w.GetValue(g0 + j), static_cast<int32_t>(kp));
        Add(I, I, t, static_cast<int32_t>(kp));
      }
      this->inQ_.FreeTensor(x);
    }
    Select(I, liveMask, I, kFar, SELMODE::VSEL_TENSOR_SCALAR_MODE, kp);
    ReduceMax(red, I, this->redTmp_.template Get<float>(), static_cast<int32_t>(kp), false);
    OrderPipes<HardEvent::V_S>(&this->pipe);
    const float top = red.GetValue(0);
    OrderPipes<HardEvent::S_V>(&this->pipe);
    Adds(I, I, -top, static_cast<int32_t>(kp));
    Exp(e, I, static_cast<int32_t>(kp));
    ReduceSum(red, e, this->redTmp_.template Get<float>(), static_cast<int32_t>(kp));
    OrderPipes<HardEvent::V_S>(&this->pipe);
    const float sum = red.GetValue(0);
    OrderPipes<HardEvent::S_V>(&this->pipe);
    // dI = e / sum - p; the loss term -Σ p (I - top - log sum) = Σ p · log sum - Σ p (I - top).
    Muls(e, e, 1.0f / sum, static_cast<int32_t>(kp));
    Sub(dI, e, p, static_cast<int32_t>(kp));
    Mul(t, p, I, static_cast<int32_t>(kp));
    ReduceSum(red, t, this->redTmp_.template Get<float>(), static_cast<int32_t>(kp));
    OrderPipes<HardEvent::V_S>(&this->pipe);
    const float pI = red.GetValue(0);
    OrderPipes<HardEvent::S_V>(&this->pipe);
    return mass_ * LogOf(sum) - pI;
  }

  // log x of a scalar through the vector unit (kernels have no libm).
  __aicore__ inline float LogOf(float x) {
    LocalTensor<float> red = this->red_.template Get<float>();
    Duplicate(red, x, 8);
    Ln(red, red, 8);
    OrderPipes<HardEvent::V_S>(&this->pipe);
    const float v = red.GetValue(0);
    OrderPipes<HardEvent::S_V>(&this->pipe);
    return v;
  }

  __aicore__ inline void Empty(int64_t row, int64_t n) { StoreLoss(uint64_t(row * this->td_->n2 + n), 0.0f); }

  // Block 0: the loss, the tokens' losses added in token order.
  __aicore__ inline void Finish() {
    if (GetBlockIdx() != 0) return;
    const uint64_t count = uint64_t(this->td_->tokens1) * this->td_->n2;
    const uint32_t per = this->tileBytes_ / 4;
    LocalTensor<float> red = this->red_.template Get<float>();
    float total = 0.0f;
    for (uint64_t e0 = 0; e0 < count; e0 += per) {
      const uint32_t ne = static_cast<uint32_t>(count - e0 < per ? count - e0 : per);
      LocalTensor<float> x = this->inQ_.template AllocTensor<float>();
      CopyIn(x, tokLoss_[e0], ne);
      this->inQ_.EnQue(x);
      x = this->inQ_.template DeQue<float>();
      ReduceSum(red, x, this->xf_.template Get<float>(), static_cast<int32_t>(ne));
      this->inQ_.FreeTensor(x);
      OrderPipes<HardEvent::V_S>(&this->pipe);
      total += red.GetValue(0);
      OrderPipes<HardEvent::S_V>(&this->pipe);
    }
    Duplicate(red, total, 8);
    OrderPipes<HardEvent::V_MTE3>(&this->pipe);
    CopyOut(lossGm_, red, 1);
  }

  GlobalTensor<T> qmGm_, kmGm_, qrGm_, krGm_;
  GlobalTensor<float> maxGm_, sumGm_, lossGm_, mq_, mk_, ms_, tokLoss_;
  TBuf<TPosition::VECCALC> p_, idx_, t2_, lane_, pMask_;
  float mass_ = 0.0f;  // Σ p: 1, or 0 when the main attention gave the selected keys no weight
};

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_DSA_LIGHTNING_INDEXER_KL_LOSS_KERNEL_H_
