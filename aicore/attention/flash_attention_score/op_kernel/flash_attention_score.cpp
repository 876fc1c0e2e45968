// flash_attention_score (CANN FlashAttentionScore): per sequence and head,
// out = softmax(scale * Q Kᵀ (+ real_shift or ALiBi, FaLogits) restricted to the visible keys) V, with GQA (query head n
// reads key/value head n / (N1 / N2)); softmax_max / softmax_sum are the rows' max of the scaled
// scores and Σ exp(score - max), 8 equal copies per row. The visible keys are a range per row
// (sparse_mode, pre/next_tokens, prefix; flash_attention_kernel.h), minus those attn_mask marks.
// A row with no visible key outputs 0. Sequences are a batch of equal lengths or packed (TND).
// With dropout, P V takes P with its dropped elements zeroed and the kept ones scaled by
// 1 / keep_prob (flash_attention_dropout.h), while softmax_sum is the sum of the undropped P.
//
// A work item is (query head, tile of mTile query rows of one sequence). For each tile of nTile keys that
// any of its rows sees, the cube computes S = Q Kᵀ into the block's fp32 workspace; the vector
// pass turns each row into P = exp(scale S - new max) over its visible keys (0 elsewhere), kept as
// T for the cube, and updates the running max and sum; the cube computes P V and the vector pass
// folds it into the fp32 accumulator: acc = acc * exp(old max - new max) + P V. No S1 x S2 buffer.
#include "../../flash_attention_dropout.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// GM_ADDR is a pointer type macro: one member per declaration.
struct FaArgs {
  GM_ADDR q;
  GM_ADDR k;
  GM_ADDR v;
  GM_ADDR pse;
  GM_ADDR mask;
  GM_ADDR prefix;
  GM_ADDR cumQ;
  GM_ADDR cumKv;
  GM_ADDR dropMask;
  GM_ADDR dropSeed;
  GM_ADDR maxOut;
  GM_ADDR sumOut;
  GM_ADDR out;
  GM_ADDR workspace;
};

template <typename T>
class FlashAttentionScoreKernel {
  using ND = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using NDTrans = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;
  using Acc = MatmulType<TPosition::GM, CubeFormat::ND, float>;

 public:
  __aicore__ inline FlashAttentionScoreKernel() {}

  // Registered by Run with REGIST_MATMUL_OBJ before Init's InitBuffer calls.
  TPipe pipe;
  Matmul<ND, NDTrans, Acc> mmNT;  // S = Q Kᵀ
  Matmul<ND, ND, Acc> mmNN;       // P V

  __aicore__ inline void Init(const FaArgs &a, const FlashAttentionTilingData &td) {
    td_ = &td;
    const int64_t mT = td.mTile, nT = td.nTile, d = td.dim;
    const uint64_t qElems = uint64_t(td.qRows) * td.heads1 * d, kElems = uint64_t(td.kRows) * td.heads2 * d;
    qGm_.SetGlobalBuffer((__gm__ T *)a.q, qElems);
    kGm_.SetGlobalBuffer((__gm__ T *)a.k, kElems);
    vGm_.SetGlobalBuffer((__gm__ T *)a.v, uint64_t(td.kRows) * td.heads2 * td.dimV);
    outGm_.SetGlobalBuffer((__gm__ T *)a.out, uint64_t(td.qRows) * td.heads1 * td.dimV);
    const uint64_t stats = uint64_t(td.qRows) * td.heads1 * 8;
    maxGm_.SetGlobalBuffer((__gm__ float *)a.maxOut, stats);
    sumGm_.SetGlobalBuffer((__gm__ float *)a.sumOut, stats);
    FaBindSequences(seq_, maskGm_, a.mask, a.prefix, a.cumQ, a.cumKv, td);
    // The block's workspace: S (fp32), P (T), P V and the accumulator (fp32).
    const uint64_t floats = uint64_t(mT) * nT + uint64_t(mT) * nT + 2 * uint64_t(mT) * d;
    __gm__ float *ws = (__gm__ float *)GetUserWorkspace(a.workspace) + GetBlockIdx() * floats;
    sGm_.SetGlobalBuffer(ws, uint64_t(mT) * nT);
    pGm_.SetGlobalBuffer((__gm__ T *)(ws + mT * nT), uint64_t(mT) * nT);
    pvGm_.SetGlobalBuffer(ws + 2 * mT * nT, uint64_t(mT) * d);
    accGm_.SetGlobalBuffer(ws + 2 * mT * nT + mT * d, uint64_t(mT) * d);

    const uint32_t row = UbBytes(nT > d ? nT : d, 4);
    pipe.InitBuffer(inQ_, 2, row);
    pipe.InitBuffer(addQ_, 1, row);
    pipe.InitBuffer(outQ_, 1, row);
    const uint32_t zeroBytes = UbBytes(nT > d ? nT : d, sizeof(T));
    pipe.InitBuffer(zero_, zeroBytes);
    pipe.InitBuffer(tmp_, row);
    pipe.InitBuffer(red_, 2 * kUbAlign);
    pipe.InitBuffer(state_, kStates * UbBytes(mT, 4));
    pipe.InitBuffer(stats_, UbBytes(mT * 8, 4));
    pipe.InitBuffer(maskQ_, 1, UbBytes(nT, 1));
    pipe.InitBuffer(halfRow_, UbBytes(nT, 2));
    pipe.InitBuffer(pen_, UbBytes(nT, 4));
    pipe.InitBuffer(keep_, UbBytes(nT, 4));
    FaInitPse(pipe, pse_, a.pse, td);
    FaInitDropout(pipe, drop_, a.dropMask, a.dropSeed, td, 1);
    // All-zero bytes are 0 in every float type.
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(zeroBytes / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
  }

  __aicore__ inline void Process() {
    const FlashAttentionTilingData &td = *td_;
    for (int64_t it = GetBlockIdx(); it < td.heads1 * td.qTiles; it += GetBlockNum()) {
      int64_t q0;
      const FaSeg sg = FaLocate(td, seq_, true, it % td.qTiles, td.mTile, q0);
      QueryTile(sg, it / td.qTiles, q0, static_cast<uint32_t>(Min64(td.mTile, sg.s1 - q0)));
    }
    mmNT.End();
    mmNN.End();
  }

 private:
  enum State : uint32_t { kRunMax, kNewMax, kSum, kTileSum, kFactor, kStates };

  __aicore__ inline LocalTensor<float> St(uint32_t a) {
    // kRunMax and kNewMax trade places after every key tile.
    if (a == kRunMax || a == kNewMax) a ^= swap_;
    return state_.Get<float>()[a * (UbBytes(td_->mTile, 4) / 4)];
  }

  __aicore__ inline void QueryTile(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt) {
    const FlashAttentionTilingData &td = *td_;
    const int64_t qBase = FaQBase(td, sg, n1) + q0 * td.qRow, kBase = FaKBase(td, sg, n1), vBase = FaVBase(td, sg, n1);
    // The previous tile's state has left for GM.
    PipeBarrier<PIPE_ALL>();
    Duplicate(St(kRunMax), kFaLowest, mt);
    Duplicate(St(kSum), 0.0f, mt);
    bool started = false;
    for (int64_t k0 = 0; k0 < sg.s2; k0 += td.nTile) {
      const uint32_t nt = static_cast<uint32_t>(Min64(td.nTile, sg.s2 - k0));
      if (!FaTileVisible(sg, q0, mt, k0, nt)) continue;
      PipeBarrier<PIPE_ALL>();
      mmNT.SetOrgShape(mt, nt, static_cast<int>(td.qRow), static_cast<int>(td.kRow));
      mmNT.SetSingleShape(mt, nt, static_cast<int>(td.dim));
      mmNT.SetTensorA(qGm_[qBase]);
      mmNT.SetTensorB(kGm_[kBase + k0 * td.kRow], true);
      mmNT.IterateAll(sGm_, 0, true);
      mmNT.End();
      Probabilities(sg, n1, q0, mt, k0, nt);
      // The cube reads P from GM: the copies out must have landed.
      PipeBarrier<PIPE_ALL>();
      mmNN.SetOrgShape(mt, static_cast<int>(td.vRow), nt, nt);
      mmNN.SetSingleShape(mt, static_cast<int>(td.dimV), nt);
      mmNN.SetTensorA(pGm_);
      mmNN.SetTensorB(vGm_[vBase + k0 * td.vRow]);
      mmNN.IterateAll(pvGm_, 0, true);
      mmNN.End();
      Accumulate(mt, started);
      started = true;
    }
    Finish(sg, n1, q0, mt, started);
  }

  // P rows of the tile, the new running max and the tile's sums; then factor and sum for all rows.
  __aicore__ inline void Probabilities(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt, int64_t k0, uint32_t nt) {
    const FlashAttentionTilingData &td = *td_;
    LocalTensor<float> red = red_.Get<float>(), tmp = tmp_.Get<float>();
    OrderPipes<HardEvent::V_S>(&pipe);
    for (uint32_t i = 0; i < mt; ++i) {
      int64_t lo, hi;
      FaVisible(sg, q0 + i, k0, nt, lo, hi);
      const float oldMax = St(kRunMax).GetValue(i);
      const uint32_t len = hi > lo ? static_cast<uint32_t>(hi - lo) : 0;
      float tileSum = 0.0f, newMax = oldMax;
      if (len > 0) {
        LocalTensor<float> s = inQ_.AllocTensor<float>();
        FaCopyIn(s, sGm_[uint64_t(i) * nt + lo], len);
        inQ_.EnQue(s);
        s = inQ_.DeQue<float>();
        FaLogits(td, pse_, sg, n1, q0 + i, k0 + lo, s, len);
        if (td.hasMask)
          FaApplyMask(maskQ_, halfRow_.Get<half>(), pen_.Get<float>(), keep_.Get<float>(), s,
                      maskGm_[FaMaskAt(td, sg, n1, q0 + i, k0 + lo)], len);
        ReduceMax(red, s, tmp, len);
        OrderPipes<HardEvent::V_S>(&pipe);
        const float tileMax = red.GetValue(0);
        newMax = tileMax > oldMax ? tileMax : oldMax;
        OrderPipes<HardEvent::S_V>(&pipe);
        Adds(s, s, -newMax, len);
        Exp(s, s, len);
        // A row whose keys so far are all masked has max kFaLowest: exp(0) must not count them.
        if (td.hasMask) Mul(s, s, keep_.Get<float>(), len);
        ReduceSum(red[8], s, tmp, len);
        if (td.dropKind) {
          FaDropKeep(pipe, drop_, td, sg, n1, q0 + i, 1, k0 + lo, len);
          FaDropApply(drop_, td, s, s, 0, len);
        }
        LocalTensor<T> p = outQ_.AllocTensor<T>();
        FaNarrow(p, s, len);
        inQ_.FreeTensor(s);
        outQ_.EnQue(p);
        p = outQ_.DeQue<T>();
        FaCopyOut(pGm_[uint64_t(i) * nt + lo], p, len);
        outQ_.FreeTensor(p);
        OrderPipes<HardEvent::V_S>(&pipe);
        tileSum = red.GetValue(8);
      }
      // Keys the row does not see get P = 0.
      FaCopyOut(pGm_[uint64_t(i) * nt], zero_.Get<T>(), static_cast<uint32_t>(lo));
      FaCopyOut(pGm_[uint64_t(i) * nt + hi], zero_.Get<T>(), static_cast<uint32_t>(nt - hi));
      St(kNewMax).SetValue(i, newMax);
      St(kTileSum).SetValue(i, tileSum);
    }
    // sum = sum * exp(old max - new max) + tile sum, for all rows at once.
    OrderPipes<HardEvent::S_V>(&pipe);
    LocalTensor<float> factor = St(kFactor), sum = St(kSum);
    Sub(factor, St(kRunMax), St(kNewMax), mt);
    Exp(factor, factor, mt);
    Mul(sum, sum, factor, mt);
    Add(sum, sum, St(kTileSum), mt);
    swap_ ^= 1u;
  }

  // acc = acc * factor + P V (the first visible tile: acc = P V), row by row.
  __aicore__ inline void Accumulate(uint32_t mt, bool started) {
    const uint32_t d = static_cast<uint32_t>(td_->dimV);
    OrderPipes<HardEvent::V_S>(&pipe);
    for (uint32_t i = 0; i < mt; ++i) {
      const float f = St(kFactor).GetValue(i);
      LocalTensor<float> pv = addQ_.AllocTensor<float>();
      FaCopyIn(pv, pvGm_[uint64_t(i) * d], d);
      addQ_.EnQue(pv);
      pv = addQ_.DeQue<float>();
      LocalTensor<float> o = outQ_.AllocTensor<float>();
      if (started) {
        LocalTensor<float> acc = inQ_.AllocTensor<float>();
        FaCopyIn(acc, accGm_[uint64_t(i) * d], d);
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
      FaCopyOut(accGm_[uint64_t(i) * d], o, d);
      outQ_.FreeTensor(o);
    }
  }

  // out = acc / sum (0 for a row that saw no key), softmax_max and softmax_sum.
  __aicore__ inline void Finish(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt, bool started) {
    const FlashAttentionTilingData &td = *td_;
    const uint32_t d = static_cast<uint32_t>(td.dimV);
    const int64_t oBase = FaOBase(td, sg, n1) + q0 * td.oRow;
    // The accumulator rows just written are read back.
    PipeBarrier<PIPE_ALL>();
    for (uint32_t i = 0; i < mt; ++i) {
      if (!started) {
        FaCopyOut(outGm_[oBase + int64_t(i) * td.oRow], zero_.Get<T>(), d);
        continue;
      }
      const float sum = St(kSum).GetValue(i);
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      LocalTensor<float> acc = inQ_.AllocTensor<float>();
      FaCopyIn(acc, accGm_[uint64_t(i) * d], d);
      inQ_.EnQue(acc);
      acc = inQ_.DeQue<float>();
      Muls(acc, acc, inv, d);
      LocalTensor<T> o = outQ_.AllocTensor<T>();
      FaNarrow(o, acc, d);
      inQ_.FreeTensor(acc);
      outQ_.EnQue(o);
      o = outQ_.DeQue<T>();
      FaCopyOut(outGm_[oBase + int64_t(i) * td.oRow], o, d);
      outQ_.FreeTensor(o);
    }
    WriteStats(maxGm_, St(kRunMax), sg, n1, q0, mt);
    WriteStats(sumGm_, St(kSum), sg, n1, q0, mt);
  }

  // Rows [q0, q0 + mt) of a [B, N1, S1, 8] or [T1, N1, 8] statistic: 8 copies of each row's value.
  __aicore__ inline void WriteStats(const GlobalTensor<float> &gm, const LocalTensor<float> &rows, const FaSeg &sg,
                                    int64_t n1, int64_t q0, uint32_t mt) {
    const FlashAttentionTilingData &td = *td_;
    LocalTensor<float> st = stats_.Get<float>();
    // The previous copy out of this buffer has completed.
    OrderPipes<HardEvent::MTE3_S>(&pipe);
    OrderPipes<HardEvent::V_S>(&pipe);
    for (uint32_t i = 0; i < mt; ++i) {
      const float x = rows.GetValue(i);
      for (uint32_t c = 0; c < 8; ++c) st.SetValue(i * 8 + c, x);
    }
    OrderPipes<HardEvent::S_MTE3>(&pipe);
    FaStatsOut(gm[FaStatBase(td, sg, n1, q0)], st, mt, td.statRow);
  }

  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECIN, 1> addQ_;
  TQue<QuePosition::VECOUT, 1> outQ_;
  TQue<QuePosition::VECIN, 1> maskQ_;
  TBuf<TPosition::VECCALC> zero_, tmp_, red_, state_, stats_, halfRow_, pen_, keep_;
  FaSeqGm seq_;
  FaPseBufs<T> pse_;
  FaDropout drop_;
  GlobalTensor<uint8_t> maskGm_;
  GlobalTensor<T> qGm_, kGm_, vGm_, outGm_, pGm_;
  GlobalTensor<float> maxGm_, sumGm_, sGm_, pvGm_, accGm_;
  const FlashAttentionTilingData *td_ = nullptr;
  uint32_t swap_ = 0;
};

template <typename T>
__aicore__ inline void Run(const FaArgs &a, const FlashAttentionTilingData &td) {
  FlashAttentionScoreKernel<T> op;
  // At kernel scope and outside any braces, before any InitBuffer: the vector core's client of
  // the cube core must live until the kernel ends.
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmNT, &td.mmNT, op.mmNN, &td.mmNN);
  op.Init(a, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void flash_attention_score(GM_ADDR query, GM_ADDR key, GM_ADDR value,
                                                            GM_ADDR realShift, GM_ADDR attnMask, GM_ADDR prefix, GM_ADDR actualSeqQlen,
                                                            GM_ADDR actualSeqKvlen, GM_ADDR dropMask, GM_ADDR dropSeed,
                                                            GM_ADDR softmaxMax,
                                                            GM_ADDR softmaxSum, GM_ADDR attentionOut,
                                                            GM_ADDR workspace, GM_ADDR tiling) {
  // Cube and vector work in one kernel: one AIV per AIC, so a block is one core pair.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(FlashAttentionTilingData);
  GET_TILING_DATA(td, tiling);
  const FaArgs a{query, key, value, realShift, attnMask, prefix, actualSeqQlen, actualSeqKvlen, dropMask, dropSeed,
                 softmaxMax, softmaxSum, attentionOut, workspace};
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(a, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(a, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(a, td);
  }
}
