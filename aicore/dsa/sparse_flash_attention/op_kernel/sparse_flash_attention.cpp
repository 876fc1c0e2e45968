// sparse_flash_attention (DeepSeek sparse attention, ops-transformer SparseFlashAttention): each
// query row attends over only the keys its index list selects. For query token row t and key
// head n2, the group's G = N1/N2 query heads share the list sparse_indices[t, n2, :]; entry e
// selects keys [e*blockSize, (e+1)*blockSize) of the sequence, -1 entries none, and sparse_mode 3
// hides keys beyond the query's causal limit. With rope parts the score is q·k + q_rope·k_rope:
//   out[t, n1] = Σ_j softmax_j(scale * score(t, n1, j)) v_j  over the visible selected keys j,
// softmax_max / softmax_sum the rows' max of the scaled scores and Σ exp(score - max). A row with
// no visible key outputs 0 (max the lowest float, sum 0).
//
// A work item is (query row, key head). Its G query rows (with rope) are gathered once into the
// block's workspace; then, nTile visible keys at a time: the key rows (with rope) are gathered
// into UB gatherRows at a time (each selected row once for all G heads), where the cube reads
// them for those columns of S = Q Kᵀ [G, nt] (the main and rope parts as two products, as the
// gradient recomputes them); the vector pass turns S into P = exp(scale S - new max) (T, for the
// cube) and updates the running max and sum; the value rows come into UB the same way for P V,
// summed over the batches by the cube, and the vector pass folds P V into the fp32 accumulator
// with exp(old max - new max). No gathered row goes back out to GM. Nothing scales with the
// sequence length but the index list, read in chunks.
#include "../sparse_flash_attention_kernel.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// GM_ADDR is a pointer type macro: one member per declaration.
struct SfaArgs {
  GM_ADDR q;
  GM_ADDR k;
  GM_ADDR v;
  GM_ADDR idx;
  GM_ADDR qRope;
  GM_ADDR kRope;
  GM_ADDR cumQ;
  GM_ADDR cumKv;
  GM_ADDR blockTable;
  GM_ADDR out;
  GM_ADDR maxOut;
  GM_ADDR sumOut;
  GM_ADDR workspace;
};

template <typename T>
class SparseFlashAttentionKernel {
  using ND = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using Ub = MatmulType<TPosition::VECOUT, CubeFormat::ND, T>;
  using UbTrans = MatmulType<TPosition::VECOUT, CubeFormat::ND, T, true>;
  using Acc = MatmulType<TPosition::GM, CubeFormat::ND, float>;

 public:
  __aicore__ inline SparseFlashAttentionKernel() {}

  // Registered by Run with REGIST_MATMUL_OBJ before Init's InitBuffer calls.
  TPipe pipe;
  Matmul<ND, UbTrans, Acc> mmNT;  // S = Q Kᵀ, K's rows in UB
  Matmul<ND, Ub, Acc> mmNN;       // P V, V's rows in UB

  __aicore__ inline void Init(const SfaArgs &a, const SparseFlashAttentionTilingData &td) {
    td_ = &td;
    const uint64_t g = uint64_t(td.group), n = uint64_t(td.nTile), qk = uint64_t(td.qkDim), dv = uint64_t(td.vDim);
    const uint64_t qRows = uint64_t(td.qRows) * td.heads1, kRows = uint64_t(td.kRows) * td.heads2;
    qGm_.SetGlobalBuffer((__gm__ T *)a.q, qRows * td.dim);
    kGm_.SetGlobalBuffer((__gm__ T *)a.k, kRows * td.dim);
    vGm_.SetGlobalBuffer((__gm__ T *)a.v, kRows * dv);
    if (td.ropeDim > 0) {
      qRopeGm_.SetGlobalBuffer((__gm__ T *)a.qRope, qRows * td.ropeDim);
      kRopeGm_.SetGlobalBuffer((__gm__ T *)a.kRope, kRows * td.ropeDim);
    }
    idxGm_.SetGlobalBuffer((__gm__ int32_t *)a.idx, uint64_t(td.qRows) * td.heads2 * td.topK);
    outGm_.SetGlobalBuffer((__gm__ T *)a.out, qRows * dv);
    maxGm_.SetGlobalBuffer((__gm__ float *)a.maxOut, qRows);
    sumGm_.SetGlobalBuffer((__gm__ float *)a.sumOut, qRows);
    if (td.packed || td.lengthsQ) cumQ_.SetGlobalBuffer((__gm__ int64_t *)a.cumQ, uint64_t(td.batch));
    if (td.packed || td.lengthsKv) cumKv_.SetGlobalBuffer((__gm__ int64_t *)a.cumKv, uint64_t(td.batch));
    if (td.paged) tableGm_.SetGlobalBuffer((__gm__ int32_t *)a.blockTable, uint64_t(td.batch) * td.maxPages);
    // The block's workspace, in SfaWorkspaceFloats' order.
    __gm__ float *ws = (__gm__ float *)GetUserWorkspace(a.workspace) + GetBlockIdx() * ms_ops::SfaWorkspaceFloats(td, false);
    sGm_.SetGlobalBuffer(ws, g * n);
    pGm_.SetGlobalBuffer((__gm__ T *)(ws + g * n), g * n);
    pvGm_.SetGlobalBuffer(ws + 2 * g * n, g * dv);
    accGm_.SetGlobalBuffer(ws + 2 * g * n + g * dv, g * dv);
    qgGm_.SetGlobalBuffer((__gm__ T *)(ws + 2 * g * n + 2 * g * dv), g * qk);

    const int64_t wide = td.qkDim > td.vDim ? td.qkDim : td.vDim, len = wide > td.nTile ? wide : td.nTile;
    const uint32_t row = UbBytes(len, 4);
    pipe.InitBuffer(inQ_, 2, row);
    pipe.InitBuffer(addQ_, 1, row);
    pipe.InitBuffer(outQ_, 1, row);
    pipe.InitBuffer(tmp_, row);
    pipe.InitBuffer(gatherQ_, 2, static_cast<uint32_t>(ms_ops::SfaQueueBytes(td, sizeof(T), false)));
    pipe.InitBuffer(zero_, UbBytes(td.vDim, sizeof(T)));
    pipe.InitBuffer(red_, 2 * kUbAlign);
    pipe.InitBuffer(idx_, UbBytes(td.idxChunk, 4));
    pipe.InitBuffer(pos_, UbBytes(td.nTile, 4));
    stateStride_ = UbBytes(td.group, 4) / 4;
    pipe.InitBuffer(state_, kStates * UbBytes(td.group, 4));
    cursor_.Init(&pipe, idx_, td);
    // All-zero bytes are 0 in every float type.
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(UbBytes(td.vDim, sizeof(T)) / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
  }

  __aicore__ inline void Process() {
    const SparseFlashAttentionTilingData &td = *td_;
    for (int64_t it = GetBlockIdx(); it < td.qRows * td.heads2; it += GetBlockNum()) Item(it / td.heads2, it % td.heads2);
    mmNT.End();
    mmNN.End();
  }

 private:
  enum State : uint32_t { kRunMax, kNewMax, kSum, kTileSum, kFactor, kStates };

  __aicore__ inline LocalTensor<float> St(uint32_t a) {
    // kRunMax and kNewMax trade places after every key tile.
    if (a == kRunMax || a == kNewMax) a ^= swap_;
    return state_.Get<float>()[a * stateStride_];
  }

  __aicore__ inline void Item(int64_t t, int64_t n2) {
    const SparseFlashAttentionTilingData &td = *td_;
    const SfaSeq sq = SfaSequenceOfRow(td, cumQ_, cumKv_, t);
    const uint32_t g = static_cast<uint32_t>(td.group);
    // The previous item's reads of the workspace and copies out of the states are done.
    PipeBarrier<PIPE_ALL>();
    const uint32_t batch = static_cast<uint32_t>(td.gatherRows);
    SfaGatherRows(gatherQ_, batch, qgGm_, qGm_, qRopeGm_, td.dim, td.ropeDim, td.qkDim, g,
                  SfaLinearRows{t * td.heads1 + n2 * td.group, 1});
    Duplicate(St(kRunMax), kSfaLowest, g);
    Duplicate(St(kSum), 0.0f, g);
    cursor_.Start(idxGm_[(t * td.heads2 + n2) * td.topK], SfaVisible(td, sq, t - sq.qStart));
    const LocalTensor<int32_t> pos = pos_.Get<int32_t>();
    const SfaSelectedRows keys{&td, &tableGm_, &sq, pos, n2};
    bool started = false;
    for (;;) {
      const uint32_t nt = cursor_.Next(pos, static_cast<uint32_t>(td.nTile));
      if (nt == 0) break;
      for (uint32_t b0 = 0; b0 < nt; b0 += batch) Scores(keys, nt, b0, nt - b0 < batch ? nt - b0 : batch);
      Probabilities(nt);
      for (uint32_t b0 = 0; b0 < nt; b0 += batch) ValueRows(keys, nt, b0, nt - b0 < batch ? nt - b0 : batch);
      Accumulate(started);
      started = true;
      if (nt < td.nTile) break;
    }
    Finish(sq, t, n2, started);
  }

  // Columns b0..b0+m-1 of S [G, nt]: keys b0.. of the tile gathered into UB, S_main = Q K_mainᵀ
  // then S += Q_rope K_ropeᵀ (the gradient's ScoreRows splits the product the same way, so that
  // its recomputed scores are these to the bit).
  __aicore__ inline void Scores(const SfaSelectedRows &keys, uint32_t nt, uint32_t b0, uint32_t m) {
    const SparseFlashAttentionTilingData &td = *td_;
    const int32_t g = static_cast<int32_t>(td.group), qk = static_cast<int32_t>(td.qkDim);
    const uint32_t batch = static_cast<uint32_t>(td.gatherRows);
    // The previous readers of the buffer (a product, the previous vector pass) are done.
    PipeBarrier<PIPE_ALL>();
    LocalTensor<T> k = gatherQ_.AllocTensor<T>();
    SfaGatherToUb(k, batch, kGm_, kRopeGm_, td.dim, td.ropeDim, b0, m, keys);
    // The cube reads the rows where MTE2 put them.
    PipeBarrier<PIPE_ALL>();
    mmNT.SetOrgShape(g, static_cast<int32_t>(m), qk, static_cast<int32_t>(SfaUbPitch<T>(td.dim)),
                     static_cast<int32_t>(nt));
    mmNT.SetSingleShape(g, static_cast<int32_t>(m), static_cast<int32_t>(td.dim));
    mmNT.SetTensorA(qgGm_);
    mmNT.SetTensorB(k, true);
    mmNT.IterateAll(sGm_[b0], 0);
    if (td.ropeDim > 0) {
      mmNT.SetOrgShape(g, static_cast<int32_t>(m), qk, static_cast<int32_t>(SfaUbPitch<T>(td.ropeDim)),
                       static_cast<int32_t>(nt));
      mmNT.SetSingleShape(g, static_cast<int32_t>(m), static_cast<int32_t>(td.ropeDim));
      mmNT.SetTensorA(qgGm_[td.dim]);
      mmNT.SetTensorB(k[batch * SfaUbPitch<T>(td.dim)], true);
      mmNT.IterateAll(sGm_[b0], 1);
    }
    mmNT.End();
    gatherQ_.FreeTensor(k);
  }

  // P V += P[:, b0..b0+m-1] V_rows of keys b0.. of the tile, gathered into UB (the first batch
  // sets P V).
  __aicore__ inline void ValueRows(const SfaSelectedRows &keys, uint32_t nt, uint32_t b0, uint32_t m) {
    const SparseFlashAttentionTilingData &td = *td_;
    const int32_t g = static_cast<int32_t>(td.group), dv = static_cast<int32_t>(td.vDim);
    // P's copies out and the previous product's reads are done.
    PipeBarrier<PIPE_ALL>();
    LocalTensor<T> v = gatherQ_.AllocTensor<T>();
    SfaGatherToUb(v, static_cast<uint32_t>(td.gatherRows), vGm_, vGm_, td.vDim, 0, b0, m, keys);
    PipeBarrier<PIPE_ALL>();
    mmNN.SetOrgShape(g, static_cast<int32_t>(SfaUbPitch<T>(td.vDim)), static_cast<int32_t>(nt),
                     static_cast<int32_t>(m), dv);
    mmNN.SetSingleShape(g, dv, static_cast<int32_t>(m));
    mmNN.SetTensorA(pGm_[b0]);
    mmNN.SetTensorB(v);
    mmNN.IterateAll(pvGm_, b0 > 0 ? 1 : 0);
    mmNN.End();
    gatherQ_.FreeTensor(v);
  }

  // P rows of the tile (every gathered key is visible), the new running max and the tile's sums;
  // then factor and sum for all rows.
  __aicore__ inline void Probabilities(uint32_t nt) {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t g = static_cast<uint32_t>(td.group);
    LocalTensor<float> red = red_.Get<float>(), tmp = tmp_.Get<float>();
    OrderPipes<HardEvent::V_S>(&pipe);
    for (uint32_t i = 0; i < g; ++i) {
      const float oldMax = St(kRunMax).GetValue(i);
      LocalTensor<float> s = inQ_.AllocTensor<float>();
      CopyIn(s, sGm_[uint64_t(i) * nt], nt);
      inQ_.EnQue(s);
      s = inQ_.DeQue<float>();
      Muls(s, s, td.scale, nt);
      ReduceMax(red, s, tmp, nt);
      OrderPipes<HardEvent::V_S>(&pipe);
      const float tileMax = red.GetValue(0);
      const float newMax = tileMax > oldMax ? tileMax : oldMax;
      OrderPipes<HardEvent::S_V>(&pipe);
      Adds(s, s, -newMax, nt);
      Exp(s, s, nt);
      ReduceSum(red[8], s, tmp, nt);
      LocalTensor<T> p = outQ_.AllocTensor<T>();
      SfaNarrow(p, s, nt);
      inQ_.FreeTensor(s);
      outQ_.EnQue(p);
      p = outQ_.DeQue<T>();
      CopyOut(pGm_[uint64_t(i) * nt], p, nt);
      outQ_.FreeTensor(p);
      OrderPipes<HardEvent::V_S>(&pipe);
      St(kNewMax).SetValue(i, newMax);
      St(kTileSum).SetValue(i, red.GetValue(8));
    }
    // sum = sum * exp(old max - new max) + tile sum, for all rows at once.
    OrderPipes<HardEvent::S_V>(&pipe);
    LocalTensor<float> factor = St(kFactor), sum = St(kSum);
    Sub(factor, St(kRunMax), St(kNewMax), g);
    Exp(factor, factor, g);
    Mul(sum, sum, factor, g);
    Add(sum, sum, St(kTileSum), g);
    swap_ ^= 1u;
  }

  // acc = acc * factor + P V (the first tile: acc = P V), row by row.
  __aicore__ inline void Accumulate(bool started) {
    const uint32_t g = static_cast<uint32_t>(td_->group), d = static_cast<uint32_t>(td_->vDim);
    // The cube's P V and the previous tile's accumulator rows have landed in GM.
    PipeBarrier<PIPE_ALL>();
    OrderPipes<HardEvent::V_S>(&pipe);
    for (uint32_t i = 0; i < g; ++i) {
      const float f = St(kFactor).GetValue(i);
      LocalTensor<float> pv = addQ_.AllocTensor<float>();
      CopyIn(pv, pvGm_[uint64_t(i) * d], d);
      addQ_.EnQue(pv);
      pv = addQ_.DeQue<float>();
      LocalTensor<float> o = outQ_.AllocTensor<float>();
      if (started) {
        LocalTensor<float> acc = inQ_.AllocTensor<float>();
        CopyIn(acc, accGm_[uint64_t(i) * d], d);
        inQ_.EnQue(acc);
        acc = inQ_.DeQue<float>();
        Muls(o, acc, f, d);
        Add(o, o, pv, d);
        inQ_.FreeTensor(acc);
      } else {
        Adds(o, pv, 0.0f, d);
      }
      addQ_.FreeTensor(pv);
      outQ_.EnQue(o);
      o = outQ_.DeQue<float>();
      CopyOut(accGm_[uint64_t(i) * d], o, d);
      outQ_.FreeTensor(o);
    }
  }

  // out = acc / sum (0 for a row without visible keys), softmax_max and softmax_sum.
  __aicore__ inline void Finish(const SfaSeq &sq, int64_t t, int64_t n2, bool started) {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t g = static_cast<uint32_t>(td.group), d = static_cast<uint32_t>(td.vDim);
    // The accumulator rows just written are read back.
    PipeBarrier<PIPE_ALL>();
    for (uint32_t i = 0; i < g; ++i) {
      const int64_t oOff = (t * td.heads1 + n2 * td.group + i) * td.vDim;
      if (!started) {
        CopyOut(outGm_[oOff], zero_.Get<T>(), d);
        continue;
      }
      const float sum = St(kSum).GetValue(i);
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      LocalTensor<float> acc = inQ_.AllocTensor<float>();
      CopyIn(acc, accGm_[uint64_t(i) * d], d);
      inQ_.EnQue(acc);
      acc = inQ_.DeQue<float>();
      Muls(acc, acc, inv, d);
      LocalTensor<T> o = outQ_.AllocTensor<T>();
      SfaNarrow(o, acc, d);
      inQ_.FreeTensor(acc);
      outQ_.EnQue(o);
      o = outQ_.DeQue<T>();
      CopyOut(outGm_[oOff], o, d);
      outQ_.FreeTensor(o);
    }
    const int64_t sOff = SfaStatBase(td, sq, t, n2);
    // The running max may be the scalar-written new max of the last tile.
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    OrderPipes<HardEvent::S_MTE3>(&pipe);
    CopyOut(maxGm_[sOff], St(kRunMax), g);
    CopyOut(sumGm_[sOff], St(kSum), g);
  }

  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECIN, 1> addQ_;
  TQue<QuePosition::VECOUT, 1> outQ_;
  SfaGatherQue gatherQ_;
  TBuf<TPosition::VECCALC> tmp_, zero_, red_, idx_, pos_, state_;
  SfaKeyCursor cursor_;
  GlobalTensor<int64_t> cumQ_, cumKv_;
  GlobalTensor<int32_t> tableGm_;
  GlobalTensor<int32_t> idxGm_;
  GlobalTensor<T> qGm_, kGm_, vGm_, qRopeGm_, kRopeGm_, outGm_, pGm_, qgGm_;
  GlobalTensor<float> maxGm_, sumGm_, sGm_, pvGm_, accGm_;
  const SparseFlashAttentionTilingData *td_ = nullptr;
  uint32_t swap_ = 0, stateStride_ = 0;
};

template <typename T>
__aicore__ inline void Run(const SfaArgs &a, const SparseFlashAttentionTilingData &td) {
  SparseFlashAttentionKernel<T> op;
  // At kernel scope and outside any braces, before any InitBuffer: the vector core's client of
  // the cube core must live until the kernel ends.
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmNT, &td.mmNT, op.mmNN, &td.mmNN);
  op.Init(a, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void sparse_flash_attention(GM_ADDR query, GM_ADDR key, GM_ADDR value,
                                                             GM_ADDR sparseIndices, GM_ADDR queryRope,
                                                             GM_ADDR keyRope, GM_ADDR actualSeqQ,
                                                             GM_ADDR actualSeqKv, GM_ADDR blockTable,
                                                             GM_ADDR attentionOut,
                                                             GM_ADDR softmaxMax, GM_ADDR softmaxSum,
                                                             GM_ADDR workspace, GM_ADDR tiling) {
  // Cube and vector work in one kernel: one AIV per AIC, so a block is one core pair.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(SparseFlashAttentionTilingData);
  GET_TILING_DATA(td, tiling);
  const SfaArgs a{query,       key,          value,      sparseIndices, queryRope, keyRope,
                  actualSeqQ,  actualSeqKv,  blockTable, attentionOut, softmaxMax,  softmaxSum, workspace};
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(a, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(a, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(a, td);
  }
}
