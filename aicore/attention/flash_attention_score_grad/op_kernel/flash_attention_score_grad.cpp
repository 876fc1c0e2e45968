// flash_attention_score_grad: dq, dk, dv of flash_attention_score, with P rebuilt from the
// forward's statistics, P = exp(scale S - max) / sum over the visible keys (0 elsewhere),
// D_i = Σ_d dO ∘ O (row i), dS = scale · P ∘ (dO Vᵀ - D) and
//   dV = Pᵀ dO,  dK = dSᵀ Q,  dQ = dS K.
// Deterministic, without atomics: a key pass owns (key head, key tile of a sequence) items and
// accumulates dK and dV of its tile over the group's query heads and query tiles in a fixed
// order; a query pass owns (query head, query tile of a sequence) items and accumulates dQ over the key
// tiles in order. Both recompute S and dP tile by tile (cube), P and dS in UB in fp32 (vector);
// no S1 x S2 buffer. Rows that see no key get no gradient. With a full [B, N1, S1, S2] real_shift
// (pseGrad), the query pass also writes d real_shift = P ∘ (dP - D) (pse_type 0) or its scaled
// form dS (pse_type 1), row by row, zeros where the row sees no key; otherwise dpse is zeros. Sequences, visible ranges and attn_mask
// as in the forward (flash_attention_kernel.h).
// With dropout (keep bits Z regenerated as the forward drew them, flash_attention_dropout.h):
// dV = (P ∘ Z / keep_prob)ᵀ dO and dS = P ∘ (dP ∘ Z / keep_prob - D); D = Σ dO ∘ O still holds.
#include "../../flash_attention_dropout.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// GM_ADDR is a pointer type macro: one member per declaration.
struct FagArgs {
  GM_ADDR q;
  GM_ADDR k;
  GM_ADDR v;
  GM_ADDR dy;
  GM_ADDR pse;
  GM_ADDR mask;
  GM_ADDR prefix;
  GM_ADDR cumQ;
  GM_ADDR cumKv;
  GM_ADDR dropMask;
  GM_ADDR dropSeed;
  GM_ADDR maxIn;
  GM_ADDR sumIn;
  GM_ADDR attnIn;
  GM_ADDR dq;
  GM_ADDR dk;
  GM_ADDR dv;
  GM_ADDR dpse;
  GM_ADDR workspace;
};

template <typename T>
class FlashAttentionScoreGradKernel {
  using ND = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using NDTrans = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;
  using Acc = MatmulType<TPosition::GM, CubeFormat::ND, float>;

 public:
  __aicore__ inline FlashAttentionScoreGradKernel() {}

  // Registered by Run with REGIST_MATMUL_OBJ before Init's InitBuffer calls.
  TPipe pipe;
  Matmul<ND, NDTrans, Acc> mmNT;  // S = Q Kᵀ, dP = dO Vᵀ
  Matmul<ND, ND, Acc> mmNN;       // dQ += dS K
  Matmul<NDTrans, ND, Acc> mmTN;  // dV += Pᵀ dO, dK += dSᵀ Q

  __aicore__ inline void Init(const FagArgs &a, const FlashAttentionTilingData &td) {
    td_ = &td;
    const int64_t mT = td.mTile, nT = td.nTile, d = td.dim, big = mT > nT ? mT : nT;
    const uint64_t qElems = uint64_t(td.qRows) * td.heads1 * d, kElems = uint64_t(td.kRows) * td.heads2 * d;
    const uint64_t oElems = uint64_t(td.qRows) * td.heads1 * td.dimV, vElems = uint64_t(td.kRows) * td.heads2 * td.dimV;
    qGm_.SetGlobalBuffer((__gm__ T *)a.q, qElems);
    kGm_.SetGlobalBuffer((__gm__ T *)a.k, kElems);
    vGm_.SetGlobalBuffer((__gm__ T *)a.v, vElems);
    dyGm_.SetGlobalBuffer((__gm__ T *)a.dy, oElems);
    oGm_.SetGlobalBuffer((__gm__ T *)a.attnIn, oElems);
    dqGm_.SetGlobalBuffer((__gm__ T *)a.dq, qElems);
    dkGm_.SetGlobalBuffer((__gm__ T *)a.dk, kElems);
    dvGm_.SetGlobalBuffer((__gm__ T *)a.dv, vElems);
    // d real_shift has real_shift's shape: the [1] placeholder when there is none.
    // (slopes are fp32 whatever T: counted in T-sized units, zero bytes being 0 in every type).
    dpseElems_ = td.pseKind == 0 ? 1 : td.pseKind == 1 ? uint64_t(td.pseElems) : uint64_t(td.pseElems) * 4 / sizeof(T);
    dpseGm_.SetGlobalBuffer((__gm__ T *)a.dpse, dpseElems_);
    const uint64_t stats = uint64_t(td.qRows) * td.heads1 * 8;
    maxGm_.SetGlobalBuffer((__gm__ float *)a.maxIn, stats);
    sumGm_.SetGlobalBuffer((__gm__ float *)a.sumIn, stats);
    FaBindSequences(seq_, maskGm_, a.mask, a.prefix, a.cumQ, a.cumKv, td);
    // The block's workspace (same sizes as the host tiling): S, P, dP, dS tiles (fp32-sized) and
    // two fp32 accumulators.
    const uint64_t tile = uint64_t(mT) * nT, floats = 4 * tile + 2 * uint64_t(big) * d + 2 * uint64_t(big);
    __gm__ float *ws = (__gm__ float *)GetUserWorkspace(a.workspace) + GetBlockIdx() * floats;
    sGm_.SetGlobalBuffer(ws, tile);
    pGm_.SetGlobalBuffer((__gm__ T *)(ws + tile), tile);
    dpGm_.SetGlobalBuffer(ws + 2 * tile, tile);
    dsGm_.SetGlobalBuffer((__gm__ T *)(ws + 3 * tile), tile);
    accAGm_.SetGlobalBuffer(ws + 4 * tile, uint64_t(big) * d);
    accBGm_.SetGlobalBuffer(ws + 4 * tile + big * d, uint64_t(big) * d);

    const uint32_t row = UbBytes(nT > d ? nT : d, 4);
    pipe.InitBuffer(inQ_, 2, row);
    pipe.InitBuffer(addQ_, 1, row);
    pipe.InitBuffer(outQ_, 1, row);
    pipe.InitBuffer(wideA_, row);
    pipe.InitBuffer(wideB_, row);
    pipe.InitBuffer(tmp_, row);
    pipe.InitBuffer(red_, kUbAlign);
    zeroBytes_ = UbBytes(nT > d ? nT : d, sizeof(T));
    pipe.InitBuffer(zero_, zeroBytes_);
    pipe.InitBuffer(statMax_, UbBytes(mT * 8, 4));
    pipe.InitBuffer(statSum_, UbBytes(mT * 8, 4));
    pipe.InitBuffer(dRow_, UbBytes(mT, 4));
    pipe.InitBuffer(maskQ_, 1, UbBytes(nT, 1));
    pipe.InitBuffer(halfRow_, UbBytes(nT, 2));
    pipe.InitBuffer(pen_, UbBytes(nT, 4));
    pipe.InitBuffer(keep_, UbBytes(nT, 4));
    FaInitPse(pipe, pse_, a.pse, td);
    FaInitDropout(pipe, drop_, a.dropMask, a.dropSeed, td, 1);
    // All-zero bytes are 0 in every float type.
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(zeroBytes_ / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
  }

  __aicore__ inline void Process() {
    const FlashAttentionTilingData &td = *td_;
    // Without a gradient to compute, d real_shift is zeros (one block writes them).
    if (!td.pseGrad && GetBlockIdx() == 0) ZeroRun(dpseGm_, dpseElems_);
    for (int64_t it = GetBlockIdx(); it < td.heads2 * td.kTiles; it += GetBlockNum()) {
      int64_t k0;
      const FaSeg sg = FaLocate(td, seq_, false, it % td.kTiles, td.nTile, k0);
      KeyTile(sg, it / td.kTiles, k0, static_cast<uint32_t>(Min64(td.nTile, sg.s2 - k0)));
    }
    for (int64_t it = GetBlockIdx(); it < td.heads1 * td.qTiles; it += GetBlockNum()) {
      int64_t q0;
      const FaSeg sg = FaLocate(td, seq_, true, it % td.qTiles, td.mTile, q0);
      QueryTile(sg, it / td.qTiles, q0, static_cast<uint32_t>(Min64(td.mTile, sg.s1 - q0)));
    }
    mmNT.End();
    mmNN.End();
    mmTN.End();
  }

 private:
  // dK and dV of keys [k0, k0 + nt) of key head n2: over the group's query heads, then query tiles.
  __aicore__ inline void KeyTile(const FaSeg &sg, int64_t n2, int64_t k0, uint32_t nt) {
    const FlashAttentionTilingData &td = *td_;
    const int64_t group = td.heads1 / td.heads2;
    const int32_t d = static_cast<int32_t>(td.dim);
    bool started = false;
    for (int64_t g = 0; g < group; ++g) {
      const int64_t n1 = n2 * group + g;
      for (int64_t q0 = 0; q0 < sg.s1; q0 += td.mTile) {
        const uint32_t mt = static_cast<uint32_t>(Min64(td.mTile, sg.s1 - q0));
        if (!FaTileVisible(sg, q0, mt, k0, nt)) continue;
        const int64_t qOff = FaQBase(td, sg, n1) + q0 * td.qRow, oOff = FaOBase(td, sg, n1) + q0 * td.oRow;
        Rebuild(sg, n1, q0, mt, k0, nt, true);
        // The cube reads P and dS from GM: the copies out must have landed.
        PipeBarrier<PIPE_ALL>();
        const uint8_t add = started ? 1 : 0;
        mmTN.SetOrgShape(nt, static_cast<int>(td.oRow), mt, mt);
        mmTN.SetSingleShape(nt, static_cast<int32_t>(td.dimV), mt);
        mmTN.SetTensorA(pGm_, true);
        mmTN.SetTensorB(dyGm_[oOff]);
        mmTN.IterateAll(accAGm_, add, true);
        mmTN.End();
        mmTN.SetOrgShape(nt, static_cast<int>(td.qRow), mt, mt);
        mmTN.SetSingleShape(nt, d, mt);
        mmTN.SetTensorA(dsGm_, true);
        mmTN.SetTensorB(qGm_[qOff]);
        mmTN.IterateAll(accBGm_, add, true);
        mmTN.End();
        started = true;
      }
    }
    const int64_t kOff = FaKBase(td, sg, n2 * group) + k0 * td.kRow, vOff = FaVBase(td, sg, n2 * group) + k0 * td.vRow;
    WriteRows(dvGm_[vOff], accAGm_, nt, td.vRow, td.dimV, started);
    WriteRows(dkGm_[kOff], accBGm_, nt, td.kRow, td.dim, started);
  }

  // dQ of query rows [q0, q0 + mt) of head n1, over the key tiles in order.
  __aicore__ inline void QueryTile(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt) {
    const FlashAttentionTilingData &td = *td_;
    const int64_t kBase = FaKBase(td, sg, n1);
    bool started = false;
    // d real_shift rows start as zeros; the visible keys' values overwrite them in order (MTE3).
    for (uint32_t i = 0; td.pseGrad && i < mt; ++i) ZeroRun(dpseGm_[FaPseAt(td, sg, n1, q0 + i, 0)], uint64_t(sg.s2));
    for (int64_t k0 = 0; k0 < sg.s2; k0 += td.nTile) {
      const uint32_t nt = static_cast<uint32_t>(Min64(td.nTile, sg.s2 - k0));
      if (!FaTileVisible(sg, q0, mt, k0, nt)) continue;
      Rebuild(sg, n1, q0, mt, k0, nt, false);
      PipeBarrier<PIPE_ALL>();
      mmNN.SetOrgShape(mt, static_cast<int>(td.kRow), nt, nt);
      mmNN.SetSingleShape(mt, static_cast<int>(td.dim), nt);
      mmNN.SetTensorA(dsGm_);
      mmNN.SetTensorB(kGm_[kBase + k0 * td.kRow]);
      mmNN.IterateAll(accAGm_, started ? 1 : 0, true);
      mmNN.End();
      started = true;
    }
    WriteRows(dqGm_[FaQBase(td, sg, n1) + q0 * td.qRow], accAGm_, mt, td.qRow, td.dim, started);
  }

  // The tile's dS (and, with writeP, P) into the workspace, T, zero where the row sees no key.
  __aicore__ inline void Rebuild(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt, int64_t k0, uint32_t nt,
                                 bool writeP) {
    const FlashAttentionTilingData &td = *td_;
    const int64_t qOff = FaQBase(td, sg, n1) + q0 * td.qRow, kOff = FaKBase(td, sg, n1) + k0 * td.kRow;
    const int64_t oOff = FaOBase(td, sg, n1) + q0 * td.oRow, vOff = FaVBase(td, sg, n1) + k0 * td.vRow;
    RowStats(sg, n1, q0, mt);
    // The previous tile's rows have been read from the workspace.
    PipeBarrier<PIPE_ALL>();
    mmNT.SetOrgShape(mt, nt, static_cast<int>(td.qRow), static_cast<int>(td.kRow));
    mmNT.SetSingleShape(mt, nt, static_cast<int>(td.dim));
    mmNT.SetTensorA(qGm_[qOff]);
    mmNT.SetTensorB(kGm_[kOff], true);
    mmNT.IterateAll(sGm_, 0, true);
    mmNT.End();
    mmNT.SetOrgShape(mt, nt, static_cast<int>(td.oRow), static_cast<int>(td.vRow));
    mmNT.SetSingleShape(mt, nt, static_cast<int>(td.dimV));
    mmNT.SetTensorA(dyGm_[oOff]);
    mmNT.SetTensorB(vGm_[vOff], true);
    mmNT.IterateAll(dpGm_, 0, true);
    mmNT.End();
    const LocalTensor<float> mx = statMax_.Get<float>(), sm = statSum_.Get<float>(), dr = dRow_.Get<float>();
    for (uint32_t i = 0; i < mt; ++i) {
      int64_t lo, hi;
      FaVisible(sg, q0 + i, k0, nt, lo, hi);
      const uint32_t len = hi > lo ? static_cast<uint32_t>(hi - lo) : 0;
      if (len > 0) {
        const float sum = sm.GetValue(i * 8), inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        const float rowMax = mx.GetValue(i * 8), di = dr.GetValue(i);
        LocalTensor<float> p = inQ_.AllocTensor<float>();
        FaCopyIn(p, sGm_[uint64_t(i) * nt + lo], len);
        inQ_.EnQue(p);
        p = inQ_.DeQue<float>();
        LocalTensor<float> ds = addQ_.AllocTensor<float>();
        FaCopyIn(ds, dpGm_[uint64_t(i) * nt + lo], len);
        addQ_.EnQue(ds);
        ds = addQ_.DeQue<float>();
        FaLogits(td, pse_, sg, n1, q0 + i, k0 + lo, p, len);
        // Masked keys score kFaLowest: P = 0 there (a row with every key masked has sum 0).
        if (td.hasMask)
          FaApplyMask(maskQ_, halfRow_.Get<half>(), pen_.Get<float>(), keep_.Get<float>(), p,
                      maskGm_[FaMaskAt(td, sg, n1, q0 + i, k0 + lo)], len);
        Adds(p, p, -rowMax, len);
        Exp(p, p, len);
        Muls(p, p, inv, len);
        if (td.dropKind) {
          FaDropKeep(pipe, drop_, td, sg, n1, q0 + i, 1, k0 + lo, len);
          FaDropApply(drop_, td, ds, ds, 0, len);
        }
        if (writeP && td.dropKind) {
          FaDropApply(drop_, td, wideA_.Get<float>(), p, 0, len);
          Emit(pGm_[uint64_t(i) * nt + lo], wideA_.Get<float>(), len);
        } else if (writeP) {
          Emit(pGm_[uint64_t(i) * nt + lo], p, len);
        }
        Adds(ds, ds, -di, len);
        Mul(ds, ds, p, len);
        const bool dpse = !writeP && td.pseGrad;
        if (dpse && !td.pseAddFirst) Emit(dpseGm_[FaPseAt(td, sg, n1, q0 + i, k0 + lo)], ds, len);
        Muls(ds, ds, td.scale, len);
        if (dpse && td.pseAddFirst) Emit(dpseGm_[FaPseAt(td, sg, n1, q0 + i, k0 + lo)], ds, len);
        inQ_.FreeTensor(p);
        Emit(dsGm_[uint64_t(i) * nt + lo], ds, len);
        addQ_.FreeTensor(ds);
      }
      const LocalTensor<T> zero = zero_.Get<T>();
      if (writeP) {
        FaCopyOut(pGm_[uint64_t(i) * nt], zero, static_cast<uint32_t>(lo));
        FaCopyOut(pGm_[uint64_t(i) * nt + hi], zero, static_cast<uint32_t>(nt - hi));
      }
      FaCopyOut(dsGm_[uint64_t(i) * nt], zero, static_cast<uint32_t>(lo));
      FaCopyOut(dsGm_[uint64_t(i) * nt + hi], zero, static_cast<uint32_t>(nt - hi));
    }
  }

  // `count` zeros of T into GM, in runs of the zero row.
  __aicore__ inline void ZeroRun(const GlobalTensor<T> &dst, uint64_t count) {
    const uint64_t run = zeroBytes_ / sizeof(T);
    for (uint64_t x = 0; x < count; x += run)
      FaCopyOut(dst[x], zero_.Get<T>(), static_cast<uint32_t>(count - x < run ? count - x : run));
  }

  // A fp32 UB row into GM as T.
  __aicore__ inline void Emit(const GlobalTensor<T> &dst, const LocalTensor<float> &src, uint32_t len) {
    LocalTensor<T> o = outQ_.AllocTensor<T>();
    FaNarrow(o, src, len);
    outQ_.EnQue(o);
    o = outQ_.DeQue<T>();
    FaCopyOut(dst, o, len);
    outQ_.FreeTensor(o);
  }

  // softmax_max and softmax_sum of the rows into UB, and D_i = Σ dO ∘ O per row.
  __aicore__ inline void RowStats(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt) {
    const FlashAttentionTilingData &td = *td_;
    const uint32_t d = static_cast<uint32_t>(td.dimV);
    const int64_t oOff = FaOBase(td, sg, n1) + q0 * td.oRow, sOff = FaStatBase(td, sg, n1, q0);
    // The previous tile's scalar and vector reads of these buffers are done.
    PipeBarrier<PIPE_ALL>();
    FaStatsIn(statMax_.Get<float>(), maxGm_[sOff], mt, td.statRow);
    FaStatsIn(statSum_.Get<float>(), sumGm_[sOff], mt, td.statRow);
    LocalTensor<float> red = red_.Get<float>(), dr = dRow_.Get<float>();
    for (uint32_t i = 0; i < mt; ++i) {
      LocalTensor<T> dy = inQ_.AllocTensor<T>();
      FaCopyIn(dy, dyGm_[oOff + int64_t(i) * td.oRow], d);
      inQ_.EnQue(dy);
      dy = inQ_.DeQue<T>();
      LocalTensor<T> o = addQ_.AllocTensor<T>();
      FaCopyIn(o, oGm_[oOff + int64_t(i) * td.oRow], d);
      addQ_.EnQue(o);
      o = addQ_.DeQue<T>();
      LocalTensor<float> a = ToFloat(dy, wideA_, d), c = ToFloat(o, wideB_, d);
      Mul(tmp_.Get<float>(), a, c, d);
      inQ_.FreeTensor(dy);
      addQ_.FreeTensor(o);
      ReduceSum(red, tmp_.Get<float>(), wideA_.Get<float>(), d);
      OrderPipes<HardEvent::V_S>(&pipe);
      dr.SetValue(i, red.GetValue(0));
      OrderPipes<HardEvent::S_V>(&pipe);
    }
    OrderPipes<HardEvent::MTE2_S>(&pipe);
  }

  // rows of `dim` elements of the fp32 accumulator into GM as T (rowStride apart), or zeros when
  // nothing added.
  __aicore__ inline void WriteRows(const GlobalTensor<T> &dst, const GlobalTensor<float> &acc, uint32_t rows,
                                   int64_t rowStride, int64_t dim, bool started) {
    const uint32_t d = static_cast<uint32_t>(dim);
    PipeBarrier<PIPE_ALL>();
    for (uint32_t i = 0; i < rows; ++i) {
      if (!started) {
        FaCopyOut(dst[int64_t(i) * rowStride], zero_.Get<T>(), d);
        continue;
      }
      LocalTensor<float> x = inQ_.AllocTensor<float>();
      FaCopyIn(x, acc[uint64_t(i) * d], d);
      inQ_.EnQue(x);
      x = inQ_.DeQue<float>();
      LocalTensor<T> o = outQ_.AllocTensor<T>();
      FaNarrow(o, x, d);
      inQ_.FreeTensor(x);
      outQ_.EnQue(o);
      o = outQ_.DeQue<T>();
      FaCopyOut(dst[int64_t(i) * rowStride], o, d);
      outQ_.FreeTensor(o);
    }
  }

  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECIN, 1> addQ_;
  TQue<QuePosition::VECOUT, 1> outQ_;
  TQue<QuePosition::VECIN, 1> maskQ_;
  TBuf<TPosition::VECCALC> wideA_, wideB_, tmp_, red_, zero_, statMax_, statSum_, dRow_, halfRow_, pen_, keep_;
  FaSeqGm seq_;
  GlobalTensor<uint8_t> maskGm_;
  GlobalTensor<T> qGm_, kGm_, vGm_, dyGm_, oGm_, dqGm_, dkGm_, dvGm_, pGm_, dsGm_, dpseGm_;
  FaPseBufs<T> pse_;
  FaDropout drop_;
  uint64_t dpseElems_ = 0;
  GlobalTensor<float> maxGm_, sumGm_, sGm_, dpGm_, accAGm_, accBGm_;
  const FlashAttentionTilingData *td_ = nullptr;
  uint32_t zeroBytes_ = 0;
};

template <typename T>
__aicore__ inline void Run(const FagArgs &a, const FlashAttentionTilingData &td) {
  FlashAttentionScoreGradKernel<T> op;
  // At kernel scope and outside any braces, before any InitBuffer: the vector core's client of
  // the cube core must live until the kernel ends.
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmNT, &td.mmNT, op.mmNN, &td.mmNN, op.mmTN, &td.mmTN);
  op.Init(a, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void flash_attention_score_grad(GM_ADDR query, GM_ADDR key, GM_ADDR value,
                                                                 GM_ADDR dy, GM_ADDR realShift, GM_ADDR attnMask,
                                                                 GM_ADDR prefix,
                                                                 GM_ADDR actualSeqQlen, GM_ADDR actualSeqKvlen,
                                                                 GM_ADDR dropMask, GM_ADDR dropSeed, GM_ADDR softmaxMax, GM_ADDR softmaxSum,
                                                                 GM_ADDR attentionIn, GM_ADDR dq, GM_ADDR dk,
                                                                 GM_ADDR dv, GM_ADDR dpse, GM_ADDR workspace,
                                                                 GM_ADDR tiling) {
  // Cube and vector work in one kernel: one AIV per AIC, so a block is one core pair.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(FlashAttentionTilingData);
  GET_TILING_DATA(td, tiling);
  const FagArgs a{query,      key,        value,       dy, realShift, attnMask, prefix, actualSeqQlen,
                  actualSeqKvlen, dropMask, dropSeed, softmaxMax, softmaxSum, attentionIn, dq, dk, dv, dpse,
                  workspace};
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(a, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(a, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(a, td);
  }
}
