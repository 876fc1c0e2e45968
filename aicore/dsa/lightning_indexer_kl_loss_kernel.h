// The kernel of the indexer's KL loss: sparse_lightning_indexer_grad_kl_loss over each token's
// selected keys (sparse_indices >= 0), dense_lightning_indexer_grad_kl_loss over all its visible
// keys. For a query token t and key head n with keys j:
//   target  p_j ∝ Σ_g softmax_g(j): the main attention's probabilities, rebuilt from its query,
//           key (and rope parts), scale and the forward's softmax_max / softmax_sum, summed over
//           the heads g of n's group and L1-normalised over the keys;
//   indexer I_j = Σ_h w[h] ReLU(q_index[h] · k_index[j]),  s = softmax(I) over the same keys;
//   loss  += Σ_j p_j (log p_j - log s_j),   dI = s - p  (seed 000's identity),
// and the engine (lightning_indexer_grad_kernel.h) takes dI to d query_index, d key_index and
// d weights. The keys come in runs of kPad (Token: two passes when a token has more). Each
// token's loss waits in the workspace; block 0 adds them in token order after the SyncAll, so
// the loss, like the key gradient, is deterministic. Kernel code only.
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
    ip_.SetGlobalBuffer(ws + td.offIp, 2 * AlignUp(uint64_t(td.topK), kp));
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
  // Query row i of the batch and key head n. Its keys (every visible key, or the live entries of
  // its sparse_indices list, within the band) are taken in runs of kPad: pass 1 forms each run's
  // indexer scores I and unnormalised target p (kept in the workspace) and the token's totals (max
  // and Σ exp of I, Σ p); pass 2 turns each run into dI = softmax(I) - p / Σ p, the loss's terms,
  // and through the engine into d weights and d query (both summed over the runs) and the key
  // gradients. A single run is the whole list (up to kPad keys).
  __aicore__ inline void Token(const LiSeg &seg, int64_t i, int64_t n) {
    const LightningIndexerGradTilingData &td = *this->td_;
    const uint32_t g = static_cast<uint32_t>(td.group), d = static_cast<uint32_t>(td.dim);
    const int64_t row = seg.qStart + i, qRow = row * td.n1 + n * g, sel = (row * td.n2 + n) * td.topK;
    int64_t first = 0, last = seg.keys - 1;
    if (Dense || td.band) this->KeyRange(seg, i, first, last);
    const int64_t span = Dense ? (last >= first ? last - first + 1 : 0) : td.topK, run = td.kPad;
    const int64_t runs = (span + run - 1) / run;
    this->LoadRows(this->qGm_, qRow * td.dim, td.dim, g, d, this->qf_);
    this->LoadWeights(qRow);
    LoadMainQuery(row, n);
    // One run (k <= kPad, the usual case) stays where pass 1 left it: its keys (live_, kf_),
    // indexer scores (s_), I and p in UB; only longer lists go round the workspace.
    const bool single = runs == 1;
    Totals tot;
    uint32_t total = 0, live = 0;
    for (int64_t r = 0; r < runs; ++r) {
      live = RunKeys(seg, sel, first, last, r, span);
      if (live == 0) continue;
      total += live;
      const uint32_t kp = (live + 63) / 64 * 64;
      IndexerScores(seg, n, live, kp);
      Target(seg, i, n, live, kp, tot);
      Indexer(kp, tot);
      if (!single) SaveRun(r, kp);
    }
    if (total == 0) {
      this->StoreZeros(qRow, g, d);
      Empty(row, n);
      return;
    }
    bool started = false;
    for (int64_t r = 0; r < runs; ++r) {
      if (!single) {
        live = RunKeys(seg, sel, first, last, r, span);
        if (live == 0) continue;
      }
      const uint32_t kp = (live + 63) / 64 * 64;
      if (!single) IndexerScores(seg, n, live, kp);
      DeltaI(r, kp, tot, single);
      this->Scores(g, kp, qRow, started, false);
      this->MmNN(this->dqf_, this->ds_, kp, this->kf_, d, g, d, kp, started ? 1 : 0);
      this->MmTN(this->dkf_, this->ds_, kp, this->qf_, d, kp, d, g);
      this->AddKeyGrads(seg, n, live);
      started = true;
    }
    this->StoreRows(this->dqf_, this->dqGm_, qRow * td.dim, uint64_t(g) * d);
    this->StoreWeights(qRow);
    // Σ p' log p' - Σ p' log softmax(I) = Σ p' log p' + log Z - Σ p' (I - M) (0 without mass).
    const float loss = tot.mass > 0.0f ? tot.plogp + (LogOf(tot.z) - tot.pI) : 0.0f;
    StoreLoss(uint64_t(row * td.n2 + n), loss);
  }

  // A token's running totals over its runs.
  struct Totals {
    float max = kFar, z = 0.0f;                 // max of I, Σ exp(I - max)
    float mass = 0.0f;                          // Σ p (p unnormalised)
    float plogp = 0.0f, pI = 0.0f;              // Σ p' log p', Σ p' (I - max), p' = p / Σ p
  };

  // Run r of the token's keys into live_: the count (0: none live in it).
  __aicore__ inline uint32_t RunKeys(const LiSeg &seg, int64_t sel, int64_t first, int64_t last, int64_t r,
                                     int64_t span) {
    const int64_t run = this->td_->kPad, at = r * run, count = span - at < run ? span - at : run;
    if constexpr (Dense) {
      OrderPipes<HardEvent::S_V>(&this->pipe);
      CreateVecIndex(this->live_.template Get<int32_t>(), static_cast<int32_t>(first + at),
                     static_cast<uint32_t>(count));
      OrderPipes<HardEvent::V_S>(&this->pipe);
      return static_cast<uint32_t>(count);
    } else {
      return this->Gather(seg, sel + at, first, last, static_cast<uint32_t>(count));
    }
  }

  // The run's keys and the indexer's scores S = q_group · K_runᵀ into s_.
  __aicore__ inline void IndexerScores(const LiSeg &seg, int64_t n, uint32_t live, uint32_t kp) {
    const uint32_t g = static_cast<uint32_t>(this->td_->group), d = static_cast<uint32_t>(this->td_->dim);
    this->LoadKeys(seg, n, live);
    this->MmNT(this->s_, this->qf_, d, this->kf_, d, g, kp, d);
  }

  // The main attention's query rows of the group (with rope) into mq_, once per token.
  __aicore__ inline void LoadMainQuery(int64_t row, int64_t n) {
    const LightningIndexerGradTilingData &td = *this->td_;
    const int64_t mg = td.mainGroup, md = td.mainDim, dr = td.ropeDim;
    const uint32_t mw = static_cast<uint32_t>(md + dr);
    const int64_t qRow = row * td.mainN1 + n * mg;
    this->LoadRows(qmGm_, qRow * md, md, static_cast<uint32_t>(mg), static_cast<uint32_t>(md), mq_, mw);
    if (dr > 0) this->LoadRows(qrGm_, qRow * dr, dr, static_cast<uint32_t>(mg), static_cast<uint32_t>(dr), mq_[md], mw);
  }

  // p_ = the run's unnormalised target over the kp lanes (0 past the live keys; the live-lane mask
  // in mask_); adds Σ p to the totals.
  __aicore__ inline void Target(const LiSeg &seg, int64_t i, int64_t n, uint32_t live, uint32_t kp, Totals &tot) {
    const LightningIndexerGradTilingData &td = *this->td_;
    const int64_t row = seg.qStart + i, mg = td.mainGroup, md = td.mainDim, dr = td.ropeDim;
    const uint32_t mw = static_cast<uint32_t>(md + dr);
    this->LoadKeyRows(kmGm_, seg.kStart, td.mainN2, n, md, live, mk_, mw);
    if (dr > 0) this->LoadKeyRows(krGm_, seg.kStart, td.mainN2, n, dr, live, mk_[md], mw);
    this->MmNT(ms_, mq_, mw, mk_, mw, static_cast<int>(mg), static_cast<int>(kp), static_cast<int>(mw));
    // The statistics of head g of the group: (B, N2, S1, G) or (N2, T1, G).
    const int64_t stat = td.qLenMode == 2 ? (n * td.tokens1 + row) * mg
                                          : ((seg.qStart / td.seq1 * td.mainN2 + n) * td.seq1 + i) * mg;
    LocalTensor<float> p = p_.Get<float>(), t = this->tmp_.template Get<float>();
    LocalTensor<uint8_t> liveMask = this->mask_.template Get<uint8_t>();
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
    tot.mass += Sum(p, kp);
  }

  // I = Σ_h w_h ReLU(S_h) of the run into idx_ (kFar past the live keys); folds the run into the
  // totals' max and Σ exp.
  __aicore__ inline void Indexer(uint32_t kp, Totals &tot) {
    const uint32_t g = static_cast<uint32_t>(this->td_->group);
    LocalTensor<float> I = idx_.Get<float>(), t = this->tmp_.template Get<float>();
    LocalTensor<float> e = t2_.Get<float>(), red = this->red_.template Get<float>(), w = this->wRow_.template Get<float>();
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
    const float top = red.GetValue(0), next = top > tot.max ? top : tot.max;
    OrderPipes<HardEvent::S_V>(&this->pipe);
    Adds(e, I, -next, static_cast<int32_t>(kp));
    Exp(e, e, static_cast<int32_t>(kp));
    tot.z = tot.z * ExpOf(tot.max - next) + Sum(e, kp);
    tot.max = next;
  }

  // The run's I (idx_) and p (p_) to the workspace, for pass 2.
  __aicore__ inline void SaveRun(int64_t r, uint32_t kp) {
    const uint64_t at = uint64_t(r) * this->td_->kPad, stride = AlignUp(uint64_t(this->td_->topK), this->td_->kPad);
    OrderPipes<HardEvent::V_MTE3>(&this->pipe);
    CopyOut(ip_[at], idx_.Get<float>(), kp);
    CopyOut(ip_[stride + at], p_.Get<float>(), kp);
    OrderPipes<HardEvent::MTE3_V>(&this->pipe);
  }

  // dI_ = exp(I - max) / Σ exp - p' of run r, p' = p / Σ p (0 past the live keys: I is kFar, p 0
  // there); adds Σ p' log p' and Σ p' (I - max) to the totals (the loss's terms, from the
  // normalised target as with a single run). `inUb`: I and p are still in idx_ and p_.
  __aicore__ inline void DeltaI(int64_t r, uint32_t kp, Totals &tot, bool inUb) {
    const uint64_t at = uint64_t(r) * this->td_->kPad, stride = AlignUp(uint64_t(this->td_->topK), this->td_->kPad);
    LocalTensor<float> p = p_.Get<float>(), I = idx_.Get<float>(), dI = this->dI_.template Get<float>();
    LocalTensor<float> t = this->tmp_.template Get<float>();
    LocalTensor<uint8_t> pMask = pMask_.Get<uint8_t>();
    if (!inUb) {
      // The run's scores and targets were written by this block's MTE3 in pass 1.
      OrderPipes<HardEvent::MTE3_MTE2>(&this->pipe);
      OrderPipes<HardEvent::V_MTE2>(&this->pipe);
      CopyIn(I, ip_[at], kp);
      CopyIn(p, ip_[stride + at], kp);
      OrderPipes<HardEvent::MTE2_V>(&this->pipe);
    }
    Adds(I, I, -tot.max, static_cast<int32_t>(kp));
    Muls(p, p, tot.mass > 0.0f ? 1.0f / tot.mass : 0.0f, static_cast<int32_t>(kp));
    Mul(t, p, I, static_cast<int32_t>(kp));
    tot.pI += Sum(t, kp);
    // Σ p' log p' over the lanes with p' > 0 (log 1 = 0 stands in elsewhere).
    CompareScalar(pMask, p, 0.0f, CMPMODE::GT, kp);
    Select(t, pMask, p, 1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, kp);
    Ln(t, t, static_cast<int32_t>(kp));
    Mul(t, t, p, static_cast<int32_t>(kp));
    tot.plogp += Sum(t, kp);
    Exp(I, I, static_cast<int32_t>(kp));
    Muls(I, I, 1.0f / tot.z, static_cast<int32_t>(kp));
    Sub(dI, I, p, static_cast<int32_t>(kp));
  }

  // One float to the per-token losses (through UB: the blocks' results meet at the SyncAll).
  __aicore__ inline void StoreLoss(uint64_t slot, float value) {
    LocalTensor<float> red = this->red_.template Get<float>();
    Duplicate(red, value, 8);
    OrderPipes<HardEvent::V_MTE3>(&this->pipe);
    CopyOut(tokLoss_[slot], red, 1);
    OrderPipes<HardEvent::MTE3_V>(&this->pipe);
  }

  // Σ of kp lanes of x (a scalar).
  __aicore__ inline float Sum(const LocalTensor<float> &x, uint32_t kp) {
    LocalTensor<float> red = this->red_.template Get<float>();
    ReduceSum(red, x, this->redTmp_.template Get<float>(), static_cast<int32_t>(kp));
    OrderPipes<HardEvent::V_S>(&this->pipe);
    const float v = red.GetValue(0);
    OrderPipes<HardEvent::S_V>(&this->pipe);
    return v;
  }

  // exp x of a scalar through the vector unit.
  __aicore__ inline float ExpOf(float x) {
    LocalTensor<float> red = this->red_.template Get<float>();
    Duplicate(red, x, 8);
    Exp(red, red, 8);
    OrderPipes<HardEvent::V_S>(&this->pipe);
    const float v = red.GetValue(0);
    OrderPipes<HardEvent::S_V>(&this->pipe);
    return v;
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
  GlobalTensor<float> maxGm_, sumGm_, lossGm_, mq_, mk_, ms_, ip_, tokLoss_;
  TBuf<TPosition::VECCALC> p_, idx_, t2_, lane_, pMask_;
};

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_DSA_LIGHTNING_INDEXER_KL_LOSS_KERNEL_H_
