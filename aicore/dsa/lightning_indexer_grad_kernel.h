// Kernel-side engine of the indexer's gradients (lightning_indexer_grad): per query token and key
// head, with dI the gradient of the index scores on the token's selected keys,
//   S = q_group · K_selᵀ,  dw[g] = Σ_j dI_j ReLU(S[g, j]),  dS[g, j] = dI_j w[g] [S[g, j] > 0],
//   dq_group = dS · K_sel,  dK_sel = dSᵀ · q_group  (added to the block's key-gradient partial),
// then, after every block's tokens (SyncAll), the partials are summed in block order into d_key.
// The derived kernel supplies the token's keys (Derived::Keys: Gather from sparse_indices, or
// AllVisible) and dI (Derived::DeltaI). Kernel code only.
#ifndef MS_OPS_DSA_LIGHTNING_INDEXER_GRAD_KERNEL_H_
#define MS_OPS_DSA_LIGHTNING_INDEXER_GRAD_KERNEL_H_

#include "kernel_utils.h"
#include "lib/matmul_intf.h"
#include "lightning_indexer_grad_tiling_data.h"
#include "lightning_indexer_segment.h"

namespace ms_ops {
namespace kernel {

template <typename T, class Derived>
class LightningIndexerGradBase {
  using F = AscendC::MatmulType<AscendC::TPosition::GM, AscendC::CubeFormat::ND, float>;
  using FT = AscendC::MatmulType<AscendC::TPosition::GM, AscendC::CubeFormat::ND, float, true>;

 public:
  AscendC::TPipe pipe;
  AscendC::Matmul<F, FT, F> mmNT;
  AscendC::Matmul<F, F, F> mmNN;
  AscendC::Matmul<FT, F, F> mmTN;

  __aicore__ inline void Process() {
    using namespace AscendC;
    const LightningIndexerGradTilingData &td = *td_;
    ZeroGm(part_, uint64_t(td.keyRows) * td.dim);
    ZeroGm(kf_, uint64_t(td.kPad) * td.dim);
    PipeBarrier<PIPE_ALL>();
    int64_t item = 0;
    for (int64_t b = 0; b < td.batch; ++b) {
      const LiSeg seg = Segment(b);
      for (int64_t i = 0; i < seg.rows; ++i)
        for (int64_t n = 0; n < td.n2; ++n, ++item)
          if (item % GetBlockNum() == GetBlockIdx()) static_cast<Derived *>(this)->Token(seg, i, n);
    }
    mmNT.End();
    mmNN.End();
    mmTN.End();
    PipeBarrier<PIPE_ALL>();
    SyncAll();
    ReducePartials();
    static_cast<Derived *>(this)->Finish();
  }

 protected:
  __aicore__ inline void InitBase(GM_ADDR q, GM_ADDR k, GM_ADDR indices, GM_ADDR w, GM_ADDR qLen, GM_ADDR kLen,
                                  GM_ADDR dq, GM_ADDR dk, GM_ADDR dw, GM_ADDR workspace,
                                  const LightningIndexerGradTilingData &td) {
    using namespace AscendC;
    td_ = &td;
    qGm_.SetGlobalBuffer((__gm__ T *)q);
    kGm_.SetGlobalBuffer((__gm__ T *)k);
    wGm_.SetGlobalBuffer((__gm__ T *)w);
    idxGm_.SetGlobalBuffer((__gm__ int32_t *)indices);
    qLenGm_.SetGlobalBuffer((__gm__ int64_t *)qLen);
    kLenGm_.SetGlobalBuffer((__gm__ int64_t *)kLen);
    dqGm_.SetGlobalBuffer((__gm__ T *)dq);
    dkGm_.SetGlobalBuffer((__gm__ T *)dk);
    dwGm_.SetGlobalBuffer((__gm__ T *)dw);
    __gm__ float *base = (__gm__ float *)GetUserWorkspace(workspace);
    wsBase_ = base;
    __gm__ float *ws = base + GetBlockIdx() * td.blockFloats;
    const uint64_t g = td.group, dim = td.dim, kp = td.kPad;
    qf_.SetGlobalBuffer(ws + td.offQ, g * dim);
    kf_.SetGlobalBuffer(ws + td.offK, kp * dim);
    s_.SetGlobalBuffer(ws + td.offS, g * kp);
    ds_.SetGlobalBuffer(ws + td.offDs, g * kp);
    dqf_.SetGlobalBuffer(ws + td.offDq, g * dim);
    dkf_.SetGlobalBuffer(ws + td.offDk, kp * dim);
    part_.SetGlobalBuffer(ws + td.offPart, uint64_t(td.keyRows) * dim);
    const uint32_t rowBytes = UbBytes(kp > dim ? kp : dim, 4);
    tileBytes_ = rowBytes > kTileBytes ? rowBytes : kTileBytes;
    pipe.InitBuffer(inQ_, 2, tileBytes_);
    pipe.InitBuffer(outQ_, 1, tileBytes_);
    pipe.InitBuffer(xf_, tileBytes_);
    // A run of at most kPad list entries at a time (all of them unless the derived kernel chunks).
    pipe.InitBuffer(idx_, UbBytes(td.topK < int64_t(kp) ? td.topK : int64_t(kp), 4));
    pipe.InitBuffer(live_, UbBytes(kp, 4));
    pipe.InitBuffer(pos_, UbBytes(kp, 4));
    pipe.InitBuffer(dI_, UbBytes(kp, 4));
    pipe.InitBuffer(tmp_, UbBytes(kp, 4));
    pipe.InitBuffer(redTmp_, UbBytes(kp, 4));
    pipe.InitBuffer(mask_, UbBytes(kp / 8, 1));
    pipe.InitBuffer(red_, kUbAlign);
    pipe.InitBuffer(wRow_, UbBytes(g, 4));
    pipe.InitBuffer(dwRow_, UbBytes(g, 4));
    pipe.InitBuffer(dwOut_, UbBytes(g, sizeof(T)));
    pipe.InitBuffer(zero_, tileBytes_);
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(tileBytes_ / 4));
    PipeBarrier<PIPE_ALL>();
  }

  __aicore__ inline LiSeg Segment(int64_t b) const {
    const LightningIndexerGradTilingData &td = *td_;
    return LiSegment(td.qLenMode, td.kLenMode, td.seq1, td.seq2, qLenGm_, kLenGm_, b);
  }

  // Query row i of the batch and key head n, all its keys at once (a derived kernel may chunk them
  // with its own Token).
  __aicore__ inline void Token(const LiSeg &seg, int64_t i, int64_t n) {
    using namespace AscendC;
    const LightningIndexerGradTilingData &td = *td_;
    const uint32_t g = static_cast<uint32_t>(td.group), d = static_cast<uint32_t>(td.dim);
    const int64_t row = seg.qStart + i, qRow = row * td.n1 + n * g, sel = (row * td.n2 + n) * td.topK;
    const uint32_t live = static_cast<Derived *>(this)->Keys(seg, i, sel);
    if (live == 0) {
      StoreZeros(qRow, g, d);
      static_cast<Derived *>(this)->Empty(row, n);
      return;
    }
    const uint32_t kp = (live + 63) / 64 * 64;
    LoadRows(qGm_, qRow * td.dim, td.dim, g, d, qf_);
    LoadKeys(seg, n, live);
    MmNT(s_, qf_, d, kf_, d, g, kp, d);
    LoadWeights(qRow);
    static_cast<Derived *>(this)->DeltaI(seg, i, n, sel, live, kp);
    Scores(g, kp, qRow);
    MmNN(dqf_, ds_, kp, kf_, d, g, d, kp);
    MmTN(dkf_, ds_, kp, qf_, d, kp, d, g);
    StoreRows(dqf_, dqGm_, qRow * td.dim, g * d);
    AddKeyGrads(seg, n, live);
  }

  // The keys [first, last] query row i may count (empty when first > last): causal in sparse_mode
  // 3, and within the KL losses' band.
  __aicore__ inline void KeyRange(const LiSeg &seg, int64_t i, int64_t &first, int64_t &last) const {
    const LightningIndexerGradTilingData &td = *td_;
    first = 0;
    last = -1;
    if (i >= seg.valid) return;
    const int64_t anchor = i + seg.keys - seg.valid;
    last = td.sparseMode == 0 ? seg.keys - 1 : anchor;
    if (td.band) {
      const int64_t ahead = anchor + td.nextTokens, behind = anchor - td.preTokens;
      last = ahead < last ? ahead : last;
      first = behind > 0 ? behind : 0;
    }
    last = last < seg.keys - 1 ? last : seg.keys - 1;
  }

  // Every visible key of query row i (a dense kernel's selection) into live_: the count.
  __aicore__ inline uint32_t AllVisible(const LiSeg &seg, int64_t i) {
    using namespace AscendC;
    int64_t first, last;
    KeyRange(seg, i, first, last);
    const int64_t v = last >= first ? last - first + 1 : 0;
    if (v > 0) {
      OrderPipes<HardEvent::S_V>(&pipe);
      CreateVecIndex(live_.Get<int32_t>(), static_cast<int32_t>(first), static_cast<uint32_t>(v));
      OrderPipes<HardEvent::V_S>(&pipe);
    }
    return static_cast<uint32_t>(v);
  }

  // The token's live selected keys (index >= 0) into live_ (key indices in the batch) and, in
  // selection order, their positions j into pos_ (for the derived DeltaI): the count.
  __aicore__ inline uint32_t Gather(const LiSeg &seg, int64_t sel) {
    return Gather(seg, sel, 0, seg.keys - 1, static_cast<uint32_t>(td_->topK));
  }

  // The same over the k list entries at sel, counting only the selected keys in [first, last]
  // (the KL losses' band).
  __aicore__ inline uint32_t Gather(const LiSeg &seg, int64_t sel, int64_t first, int64_t last, uint32_t k) {
    using namespace AscendC;
    LocalTensor<int32_t> idx = idx_.Get<int32_t>(), live = live_.Get<int32_t>(), pos = pos_.Get<int32_t>();
    OrderPipes<HardEvent::S_MTE2>(&pipe);
    CopyIn(idx, idxGm_[sel], k);
    OrderPipes<HardEvent::MTE2_S>(&pipe);
    uint32_t n = 0;
    for (uint32_t j = 0; j < k; ++j) {
      const int32_t s = idx.GetValue(j);
      if (s >= first && s <= last) {
        live.SetValue(n, s);
        pos.SetValue(n, static_cast<int32_t>(j));
        ++n;
      }
    }
    return n;
  }

  // A token without live keys: zero query and weight gradients.
  __aicore__ inline void StoreZeros(int64_t qRow, uint32_t g, uint32_t d) {
    using namespace AscendC;
    LocalTensor<float> dw = dwRow_.Get<float>();
    OrderPipes<HardEvent::MTE3_V>(&pipe);
    Duplicate(dw, 0.0f, static_cast<int32_t>(g));
    StoreWeights(qRow);
    ZeroT(dqGm_, qRow * td_->dim, uint64_t(g) * d);
  }

  // rows GM rows of len elements of T, `stride` apart, into contiguous fp32 rows of len in dst.
  __aicore__ inline void LoadRows(const AscendC::GlobalTensor<T> &src, int64_t base, int64_t stride, uint32_t rows,
                                  uint32_t len, const AscendC::GlobalTensor<float> &dst, uint32_t dstLen = 0) {
    if (dstLen == 0) dstLen = len;
    using namespace AscendC;
    const uint32_t pitch = UbBytes(len, sizeof(T)) / sizeof(T), per = tileBytes_ / (pitch * 4);
    for (uint32_t r0 = 0; r0 < rows; r0 += per) {
      const uint32_t nr = rows - r0 < per ? rows - r0 : per;
      LocalTensor<T> x = inQ_.template AllocTensor<T>();
      DataCopyPad(x, src[base + int64_t(r0) * stride],
                  DataCopyExtParams(nr, len * sizeof(T), (stride - len) * sizeof(T), 0, 0),
                  DataCopyPadExtParams<T>(false, 0, 0, 0));
      inQ_.EnQue(x);
      x = inQ_.template DeQue<T>();
      StoreTile(x, nr, pitch, len, dst[uint64_t(r0) * dstLen], dstLen);
    }
    PipeBarrier<PIPE_ALL>();
  }

  // A dequeued tile of nr rows (pitch elements apart, len used) to fp32 GM rows dstLen apart.
  __aicore__ inline void StoreTile(AscendC::LocalTensor<T> &x, uint32_t nr, uint32_t pitch, uint32_t len,
                                   const AscendC::GlobalTensor<float> &dst, uint32_t dstLen) {
    using namespace AscendC;
    const uint32_t gap = (pitch * 4 - UbBytes(len, 4)) / kUbAlign;  // of a row of pitch floats
    if constexpr (AscendC::IsSameType<T, float>::value) {
      // fp32 rows need no widening: MTE3 takes them straight from the input tile (these gathers
      // are most of the KL loss's time), and the tile is not refilled before they have left.
      OrderPipes<HardEvent::MTE2_MTE3>(&pipe);
      DataCopyPad(dst, x, DataCopyExtParams(nr, len * 4, gap, (dstLen - len) * 4, 0));
      OrderPipes<HardEvent::MTE3_MTE2>(&pipe);
      inQ_.FreeTensor(x);
      return;
    }
    const uint32_t count = nr * pitch;
    LocalTensor<float> xf = ToFloat(x, xf_, count);
    LocalTensor<float> y = outQ_.template AllocTensor<float>();
    Adds(y, xf, 0.0f, count);
    inQ_.FreeTensor(x);
    outQ_.EnQue(y);
    y = outQ_.template DeQue<float>();
    DataCopyPad(dst, y, DataCopyExtParams(nr, len * 4, gap, (dstLen - len) * 4, 0));
    outQ_.FreeTensor(y);
  }

  // The live keys' rows of head n into kf_ rows [0, live); rows past them keep finite values
  // (zero at first, earlier keys later), which meet zero score gradients.
  __aicore__ inline void LoadKeys(const LiSeg &seg, int64_t n, uint32_t live) {
    LoadKeyRows(kGm_, seg.kStart, td_->n2, n, td_->dim, live, kf_, td_->dim);
  }

  // Rows (kStart + live key) * heads + n of src (dim elements each) into fp32 rows dstLen apart.
  __aicore__ inline void LoadKeyRows(const AscendC::GlobalTensor<T> &src, int64_t kStart, int64_t heads, int64_t n,
                                     int64_t dim, uint32_t live, const AscendC::GlobalTensor<float> &dst,
                                     uint32_t dstLen) {
    using namespace AscendC;
    const uint32_t d = static_cast<uint32_t>(dim);
    const uint32_t pitch = UbBytes(d, sizeof(T)) / sizeof(T), per = tileBytes_ / (pitch * 4);
    LocalTensor<int32_t> keys = live_.Get<int32_t>();
    for (uint32_t c0 = 0; c0 < live; c0 += per) {
      const uint32_t nr = live - c0 < per ? live - c0 : per;
      LocalTensor<T> x = inQ_.template AllocTensor<T>();
      for (uint32_t j = 0; j < nr; ++j)
        CopyIn(x[j * pitch], src[((kStart + keys.GetValue(c0 + j)) * heads + n) * dim], d);
      inQ_.EnQue(x);
      x = inQ_.template DeQue<T>();
      StoreTile(x, nr, pitch, d, dst[uint64_t(c0) * dstLen], dstLen);
    }
    PipeBarrier<PIPE_ALL>();
  }

  // The token's weights as fp32 in wRow_ (scalar reads follow).
  __aicore__ inline void LoadWeights(int64_t qRow) {
    using namespace AscendC;
    const uint32_t g = static_cast<uint32_t>(td_->group);
    LocalTensor<T> x = inQ_.template AllocTensor<T>();
    CopyIn(x, wGm_[qRow], g);
    inQ_.EnQue(x);
    x = inQ_.template DeQue<T>();
    LocalTensor<float> xf = ToFloat(x, xf_, g);
    Adds(wRow_.Get<float>(), xf, 0.0f, static_cast<int32_t>(g));
    inQ_.FreeTensor(x);
    OrderPipes<HardEvent::V_S>(&pipe);
  }

  // From S (s_) and dI (dI_, zero past the live keys): dw into dwRow_ (added to it with `add`: a
  // chunk of the token's keys) and out (unless `store` is false), dS into ds_.
  __aicore__ inline void Scores(uint32_t g, uint32_t kp, int64_t qRow, bool add = false, bool store = true) {
    using namespace AscendC;
    const uint32_t per = tileBytes_ / (kp * 4);
    LocalTensor<float> dI = dI_.Get<float>(), tmp = tmp_.Get<float>(), red = red_.Get<float>();
    LocalTensor<float> w = wRow_.Get<float>(), dw = dwRow_.Get<float>();
    LocalTensor<uint8_t> mask = mask_.Get<uint8_t>();
    for (uint32_t g0 = 0; g0 < g; g0 += per) {
      const uint32_t nr = g - g0 < per ? g - g0 : per;
      LocalTensor<float> x = inQ_.template AllocTensor<float>();
      CopyIn(x, s_[uint64_t(g0) * kp], nr * kp);
      inQ_.EnQue(x);
      x = inQ_.template DeQue<float>();
      LocalTensor<float> y = outQ_.template AllocTensor<float>();
      for (uint32_t j = 0; j < nr; ++j) {
        const float wg = w.GetValue(g0 + j);
        Relu(tmp, x[j * kp], static_cast<int32_t>(kp));
        Mul(tmp, tmp, dI, static_cast<int32_t>(kp));
        ReduceSum(red, tmp, redTmp_.Get<float>(), static_cast<int32_t>(kp));
        CompareScalar(mask, x[j * kp], 0.0f, CMPMODE::GT, kp);
        Muls(tmp, dI, wg, static_cast<int32_t>(kp));
        Select(y[j * kp], mask, tmp, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, kp);
        OrderPipes<HardEvent::V_S>(&pipe);
        dw.SetValue(g0 + j, add ? dw.GetValue(g0 + j) + red.GetValue(0) : red.GetValue(0));
        OrderPipes<HardEvent::S_V>(&pipe);
      }
      inQ_.FreeTensor(x);
      outQ_.EnQue(y);
      y = outQ_.template DeQue<float>();
      CopyOut(ds_[uint64_t(g0) * kp], y, nr * kp);
      outQ_.FreeTensor(y);
    }
    if (store) StoreWeights(qRow);
  }

  // dwRow_ (g floats) to d_weights at qRow.
  __aicore__ inline void StoreWeights(int64_t qRow) {
    using namespace AscendC;
    const uint32_t g = static_cast<uint32_t>(td_->group);
    LocalTensor<float> dw = dwRow_.Get<float>();
    LocalTensor<T> y = dwOut_.Get<T>();
    OrderPipes<HardEvent::MTE3_V>(&pipe);
    Narrow(y, dw, g);
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    CopyOut(dwGm_[qRow], y, g);
  }

  // count fp32 workspace elements to T GM elements at `at`.
  __aicore__ inline void StoreRows(const AscendC::GlobalTensor<float> &src, const AscendC::GlobalTensor<T> &dst,
                                   int64_t at, uint64_t count) {
    using namespace AscendC;
    PipeBarrier<PIPE_ALL>();
    const uint32_t per = tileBytes_ / 4;
    for (uint64_t e0 = 0; e0 < count; e0 += per) {
      const uint32_t ne = static_cast<uint32_t>(count - e0 < per ? count - e0 : per);
      LocalTensor<float> x = inQ_.template AllocTensor<float>();
      CopyIn(x, src[e0], ne);
      inQ_.EnQue(x);
      x = inQ_.template DeQue<float>();
      LocalTensor<T> y = outQ_.template AllocTensor<T>();
      Narrow(y, x, ne);
      inQ_.FreeTensor(x);
      outQ_.EnQue(y);
      y = outQ_.template DeQue<T>();
      CopyOut(dst[at + int64_t(e0)], y, ne);
      outQ_.FreeTensor(y);
    }
  }

  // The gathered keys' gradients (dkf_ rows) added to the block's partial, one key row each, in
  // selection order.
  __aicore__ inline void AddKeyGrads(const LiSeg &seg, int64_t n, uint32_t live) {
    using namespace AscendC;
    const LightningIndexerGradTilingData &td = *td_;
    const uint32_t d = static_cast<uint32_t>(td.dim), pitch = UbBytes(d, 4) / 4;
    const uint32_t per = tileBytes_ / (pitch * 4);
    LocalTensor<int32_t> keys = live_.Get<int32_t>();
    LocalTensor<float> acc = xf_.Get<float>();
    PipeBarrier<PIPE_ALL>();
    for (uint32_t c0 = 0; c0 < live; c0 += per) {
      const uint32_t nr = live - c0 < per ? live - c0 : per, gap = (pitch * 4 - UbBytes(d, 4)) / kUbAlign;
      LocalTensor<float> x = inQ_.template AllocTensor<float>();
      DataCopyPad(x, dkf_[uint64_t(c0) * d], DataCopyExtParams(nr, d * 4, 0, gap, 0),
                  DataCopyPadExtParams<float>(false, 0, 0, 0));
      OrderPipes<HardEvent::MTE3_MTE2>(&pipe);
      OrderPipes<HardEvent::V_MTE2>(&pipe);
      for (uint32_t j = 0; j < nr; ++j) CopyIn(acc[j * pitch], part_[PartRow(seg, n, keys.GetValue(c0 + j))], d);
      inQ_.EnQue(x);
      x = inQ_.template DeQue<float>();
      OrderPipes<HardEvent::MTE2_V>(&pipe);
      LocalTensor<float> y = outQ_.template AllocTensor<float>();
      Add(y, acc, x, static_cast<int32_t>(nr * pitch));
      inQ_.FreeTensor(x);
      outQ_.EnQue(y);
      y = outQ_.template DeQue<float>();
      for (uint32_t j = 0; j < nr; ++j) CopyOut(part_[PartRow(seg, n, keys.GetValue(c0 + j))], y[j * pitch], d);
      outQ_.FreeTensor(y);
    }
    PipeBarrier<PIPE_ALL>();
  }

  __aicore__ inline uint64_t PartRow(const LiSeg &seg, int64_t n, int32_t key) const {
    return uint64_t((seg.kStart + key) * td_->n2 + n) * uint64_t(td_->dim);
  }

  // d_key = Σ over blocks, in block order, of the partials: each block sums a slice.
  __aicore__ inline void ReducePartials() {
    using namespace AscendC;
    const LightningIndexerGradTilingData &td = *td_;
    const uint64_t total = uint64_t(td.keyRows) * td.dim, blocks = GetBlockNum();
    const uint64_t slice = (total + blocks - 1) / blocks / 8 * 8 + 8;
    const uint64_t begin = slice * GetBlockIdx(), end = begin + slice < total ? begin + slice : total;
    const uint32_t per = tileBytes_ / 4;
    LocalTensor<float> acc = xf_.Get<float>();
    for (uint64_t e0 = begin; e0 < end; e0 += per) {
      const uint32_t ne = static_cast<uint32_t>(end - e0 < per ? end - e0 : per);
      OrderPipes<HardEvent::V_MTE2>(&pipe);
      CopyIn(acc, PartOf(0)[e0], ne);
      OrderPipes<HardEvent::MTE2_V>(&pipe);
      for (uint64_t b = 1; b < blocks; ++b) {
        LocalTensor<float> x = inQ_.template AllocTensor<float>();
        CopyIn(x, PartOf(b)[e0], ne);
        inQ_.EnQue(x);
        x = inQ_.template DeQue<float>();
        Add(acc, acc, x, static_cast<int32_t>(ne));
        inQ_.FreeTensor(x);
      }
      LocalTensor<T> y = outQ_.template AllocTensor<T>();
      Narrow(y, acc, ne);
      outQ_.EnQue(y);
      y = outQ_.template DeQue<T>();
      CopyOut(dkGm_[e0], y, ne);
      outQ_.FreeTensor(y);
    }
  }

  __aicore__ inline AscendC::GlobalTensor<float> PartOf(uint64_t block) const {
    AscendC::GlobalTensor<float> p;
    p.SetGlobalBuffer(wsBase_ + block * td_->blockFloats + td_->offPart, uint64_t(td_->keyRows) * td_->dim);
    return p;
  }

  __aicore__ inline void ZeroGm(const AscendC::GlobalTensor<float> &dst, uint64_t count) {
    const uint32_t per = tileBytes_ / 4;
    for (uint64_t e0 = 0; e0 < count; e0 += per)
      CopyOut(dst[e0], zero_.Get<float>(), static_cast<uint32_t>(count - e0 < per ? count - e0 : per));
  }

  __aicore__ inline void ZeroT(const AscendC::GlobalTensor<T> &dst, int64_t at, uint64_t count) {
    using namespace AscendC;
    const uint32_t per = tileBytes_ / 4;
    LocalTensor<T> z = outQ_.template AllocTensor<T>();
    Narrow(z, zero_.Get<float>(), per);
    outQ_.EnQue(z);
    z = outQ_.template DeQue<T>();
    for (uint64_t e0 = 0; e0 < count; e0 += per)
      CopyOut(dst[at + int64_t(e0)], z, static_cast<uint32_t>(count - e0 < per ? count - e0 : per));
    outQ_.FreeTensor(z);
  }

  __aicore__ inline void Narrow(const AscendC::LocalTensor<T> &out, const AscendC::LocalTensor<float> &in,
                                uint32_t len) {
    if constexpr (AscendC::IsSameType<T, float>::value) {
      AscendC::Adds(out, in, 0.0f, static_cast<int32_t>(len));
    } else {
      AscendC::Cast(out, in, AscendC::RoundMode::CAST_RINT, len);
    }
  }

  // c[m, n] (row stride n) = a[m, k] x bᵀ, b stored [n, k].
  __aicore__ inline void MmNT(const AscendC::GlobalTensor<float> &c, const AscendC::GlobalTensor<float> &a, int lda,
                              const AscendC::GlobalTensor<float> &b, int ldb, int m, int n, int k) {
    AscendC::PipeBarrier<PIPE_ALL>();
    mmNT.SetOrgShape(m, n, lda, ldb);
    mmNT.SetSingleShape(m, n, k);
    mmNT.SetTensorA(a);
    mmNT.SetTensorB(b, true);
    mmNT.IterateAll(c, 0, true);
    mmNT.End();
    AscendC::PipeBarrier<PIPE_ALL>();
  }

  // c[m, n] = a[m, k] x b[k, n] (added to c with `add`).
  __aicore__ inline void MmNN(const AscendC::GlobalTensor<float> &c, const AscendC::GlobalTensor<float> &a, int lda,
                              const AscendC::GlobalTensor<float> &b, int ldb, int m, int n, int k, uint8_t add = 0) {
    AscendC::PipeBarrier<PIPE_ALL>();
    mmNN.SetOrgShape(m, ldb, lda, k);
    mmNN.SetSingleShape(m, n, k);
    mmNN.SetTensorA(a);
    mmNN.SetTensorB(b);
    mmNN.IterateAll(c, add, true);
    mmNN.End();
    AscendC::PipeBarrier<PIPE_ALL>();
  }

  // c[m, n] = aᵀ x b, a stored [k, m], b [k, n].
  __aicore__ inline void MmTN(const AscendC::GlobalTensor<float> &c, const AscendC::GlobalTensor<float> &a, int lda,
                              const AscendC::GlobalTensor<float> &b, int ldb, int m, int n, int k) {
    AscendC::PipeBarrier<PIPE_ALL>();
    mmTN.SetOrgShape(lda, ldb, k, k);
    mmTN.SetSingleShape(m, n, k);
    mmTN.SetTensorA(a, true);
    mmTN.SetTensorB(b);
    mmTN.IterateAll(c, 0, true);
    mmTN.End();
    AscendC::PipeBarrier<PIPE_ALL>();
  }

  AscendC::GlobalTensor<T> qGm_, kGm_, wGm_, dqGm_, dkGm_, dwGm_;
  AscendC::GlobalTensor<int32_t> idxGm_;
  AscendC::GlobalTensor<int64_t> qLenGm_, kLenGm_;
  AscendC::GlobalTensor<float> qf_, kf_, s_, ds_, dqf_, dkf_, part_;
  AscendC::TQue<AscendC::QuePosition::VECIN, 2> inQ_;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> outQ_;
  AscendC::TBuf<AscendC::TPosition::VECCALC> xf_, idx_, live_, pos_, dI_, tmp_, redTmp_, mask_, red_, wRow_, dwRow_,
      dwOut_, zero_;
  const LightningIndexerGradTilingData *td_ = nullptr;
  __gm__ float *wsBase_ = nullptr;
  uint32_t tileBytes_ = 0;
  static constexpr uint32_t kTileBytes = 16 * 1024;
};

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_DSA_LIGHTNING_INDEXER_GRAD_KERNEL_H_
