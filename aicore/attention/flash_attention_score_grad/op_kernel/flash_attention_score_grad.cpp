// flash_attention_score_grad: dq, dk, dv of flash_attention_score, with P rebuilt from the
// forward's statistics, P = exp(scale S - max) / sum over the visible keys (0 elsewhere),
// D_i = Σ_d dO ∘ O (row i), dS = scale · P ∘ (dO Vᵀ - D) and
//   dV = Pᵀ dO,  dK = dSᵀ Q,  dQ = dS K.
// Deterministic, each gradient summed in a fixed order whatever the blocks' timing: the work is
// (key head, query tile, key tile) pairs, taken diagonal by diagonal (query tile index minus key
// tile index within the sequence), one SyncAll between diagonals. A diagonal holds each query tile
// and each key tile at most once, so its pairs add into disjoint rows of dQ, dK and dV (the cube's
// store atomic, into fp32 accumulators: the outputs themselves for fp32, a workspace copy for
// fp16/bf16, narrowed at the end); across diagonals the order is fixed. Each pair recomputes S and
// dP (cube), builds P and dS in UB in fp32 (vector), and makes three products: dV += Pᵀ dO,
// dK += dSᵀ Q, dQ += dS K; five products per tile pair in all, the fewest a recomputing backward
// needs. No S1 x S2 buffer. Rows that see no key get no gradient. With a full [B, N1, S1, S2]
// real_shift (pseGrad), each pair also writes its tile of d real_shift = P ∘ (dP - D) (pse_type 0)
// or its scaled form dS (pse_type 1), over zeros written first; otherwise dpse is zeros. Sequences,
// visible ranges and attn_mask as in the forward (flash_attention_kernel.h).
// With dropout (keep bits Z regenerated as the forward drew them, flash_attention_dropout.h):
// dV = (P ∘ Z / keep_prob)ᵀ dO and dS = P ∘ (dP ∘ Z / keep_prob - D); D = Σ dO ∘ O still holds.
#include "../../flash_attention_dropout.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// UB bytes of one fp32 chunk of a score, gradient or accumulator tile.
constexpr uint32_t kFaChunkBytes = 16384;

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
    const int64_t mT = td.mTile, nT = td.nTile, d = td.dim;
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
    FaBindSequences(seq_, logits_.mask, a.mask, a.prefix, a.cumQ, a.cumKv, td);
    // The workspace (same sizes as the host tiling): each block's S and dP tiles (fp32), P and dS
    // written over them (Rebuild reads a chunk of S and dP rows before it writes the chunk's P and
    // dS, which start no later), the rows' D, then, for fp16/bf16, the fp32 accumulators of dq,
    // dk, dv, laid out as the outputs.
    const uint64_t tile = uint64_t(mT) * nT;
    __gm__ float *base = (__gm__ float *)GetUserWorkspace(a.workspace), *ws = base + GetBlockIdx() * 2 * tile;
    __gm__ float *rowD = base + uint64_t(GetBlockNum()) * 2 * tile;
    rowDGm_.SetGlobalBuffer(rowD, ms_ops::FaRowDFloats(td));
    sGm_.SetGlobalBuffer(ws, tile);
    pGm_.SetGlobalBuffer((__gm__ T *)ws, tile);
    dpGm_.SetGlobalBuffer(ws + tile, tile);
    dsGm_.SetGlobalBuffer((__gm__ T *)(ws + tile), tile);
    qElems_ = qElems;
    kElems_ = kElems;
    vElems_ = vElems;
    if constexpr (AscendC::IsSameType<T, float>::value) {
      accQ_.SetGlobalBuffer((__gm__ float *)a.dq, qElems);
      accK_.SetGlobalBuffer((__gm__ float *)a.dk, kElems);
      accV_.SetGlobalBuffer((__gm__ float *)a.dv, vElems);
    } else {
      __gm__ float *acc = rowD + ms_ops::FaRowDFloats(td);
      accQ_.SetGlobalBuffer(acc, qElems);
      accK_.SetGlobalBuffer(acc + qElems, kElems);
      accV_.SetGlobalBuffer(acc + qElems + kElems, vElems);
    }

    nPitch_ = FaPitch(nT);
    // UB tiles of D-element rows (dK, dQ) are sized for D; those of D_v-element rows (dO, O, dV)
    // fit in them, D_v <= D.
    dPitch_ = FaPitch(d);
    vPitch_ = FaPitch(td.dimV);
    sRows_ = FaChunkRows(nPitch_, kFaChunkBytes);
    aRows_ = FaChunkRows(dPitch_, kFaChunkBytes);
    pipe.InitBuffer(sQ_, 1, sRows_ * nPitch_ * 4);
    pipe.InitBuffer(dpQ_, 1, sRows_ * nPitch_ * 4);
    pipe.InitBuffer(outQ_, 1, UbBytes(sRows_ * nPitch_ > aRows_ * dPitch_ ? sRows_ * nPitch_ : aRows_ * dPitch_,
                                      sizeof(T)));
    pipe.InitBuffer(aQ_, 1, aRows_ * dPitch_ * 4);
    pipe.InitBuffer(bQ_, 1, aRows_ * dPitch_ * 4);
    if constexpr (!AscendC::IsSameType<T, float>::value) {
      pipe.InitBuffer(wideA_, aRows_ * dPitch_ * 4);
      pipe.InitBuffer(wideB_, aRows_ * dPitch_ * 4);
    }
    pipe.InitBuffer(fold_, 2 * (sRows_ > aRows_ ? sRows_ : aRows_) * kFaLanes * 4);
    const uint32_t statRows = (static_cast<uint32_t>(mT) + 7) / 8 * 8;
    pipe.InitBuffer(statMax_, statRows * kUbAlign);
    pipe.InitBuffer(statSum_, statRows * kUbAlign);
    pipe.InitBuffer(dBlk_, statRows * kUbAlign);
    pipe.InitBuffer(dRow_, statRows * 4);
    zeroBytes_ = UbBytes(nT > d ? nT : d, sizeof(T));
    pipe.InitBuffer(zero_, zeroBytes_);
    FaInitLogits(pipe, logits_, a.pse, td);
    FaInitDropout(pipe, drop_, a.dropMask, a.dropSeed, td, sRows_);
    // All-zero bytes are 0 in every float type.
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(zeroBytes_ / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
  }

  __aicore__ inline void Process() {
    const FlashAttentionTilingData &td = *td_;
    // The accumulators and d real_shift start as zeros, a slice per block.
    ZeroSlice(accQ_, qElems_);
    ZeroSlice(accK_, kElems_);
    ZeroSlice(accV_, vElems_);
    ZeroSlice(dpseGm_, dpseElems_);
    // D of every query row, once: the pairs of all diagonals read it.
    for (int64_t it = GetBlockIdx(); it < td.heads1 * td.qTiles; it += GetBlockNum()) {
      int64_t q0;
      const FaSeg sg = FaLocate(td, seq_, true, it % td.qTiles, td.mTile, q0);
      RowD(sg, it / td.qTiles, q0, static_cast<uint32_t>(Min64(td.mTile, sg.s1 - q0)));
    }
    PipeBarrier<PIPE_ALL>();
    SyncAll();
    const int64_t qT = (td.seq1 + td.mTile - 1) / td.mTile, kT = (td.seq2 + td.nTile - 1) / td.nTile;
    for (int64_t diag = 1 - kT; diag < qT; ++diag) {
      // Every block sees the same pairs: an empty diagonal is skipped by all of them.
      if (!Diagonal(diag)) continue;
      // The diagonal's additions have landed before the next one adds to the same rows.
      PipeBarrier<PIPE_ALL>();
      SyncAll();
    }
    if constexpr (!AscendC::IsSameType<T, float>::value) {
      Narrow(dqGm_, accQ_, qElems_);
      Narrow(dkGm_, accK_, kElems_);
      Narrow(dvGm_, accV_, vElems_);
    }
    mmNT.End();
    mmNN.End();
    mmTN.End();
  }

 private:
  // The visible (key head, query tile, key tile j = i - diag) pairs of diagonal diag; whether
  // there are any. A pair goes to the block of its (sequence, key tile, key head), the same on
  // every diagonal: a block keeps adding into the same dK and dV rows (hot in its caches on the
  // CPU), and the pairs of one diagonal, having distinct key tiles, spread over the blocks.
  __aicore__ inline bool Diagonal(int64_t diag) {
    const FlashAttentionTilingData &td = *td_;
    const int64_t perSeq = (td.seq2 + td.nTile - 1) / td.nTile;
    bool any = false;
    for (int64_t tile = 0; tile < td.qTiles; ++tile) {
      int64_t q0;
      const FaSeg sg = FaLocate(td, seq_, true, tile, td.mTile, q0);
      const int64_t k0 = (q0 / td.mTile - diag) * td.nTile;
      if (k0 < 0 || k0 >= sg.s2) continue;
      const uint32_t mt = static_cast<uint32_t>(Min64(td.mTile, sg.s1 - q0));
      const uint32_t nt = static_cast<uint32_t>(Min64(td.nTile, sg.s2 - k0));
      if (!FaTileVisible(sg, q0, mt, k0, nt)) continue;
      any = true;
      const int64_t owner = (sg.b * perSeq + k0 / td.nTile) * td.heads2;
      for (int64_t n2 = 0; n2 < td.heads2; ++n2)
        if ((owner + n2) % GetBlockNum() == GetBlockIdx()) Pair(sg, n2, q0, mt, k0, nt);
    }
    return any;
  }

  // Query rows [q0, q0 + mt) against keys [k0, k0 + nt) for the query heads of key head n2, in
  // order: dV and dK of the keys, dQ of the rows.
  __aicore__ inline void Pair(const FaSeg &sg, int64_t n2, int64_t q0, uint32_t mt, int64_t k0, uint32_t nt) {
    const FlashAttentionTilingData &td = *td_;
    const int64_t group = td.heads1 / td.heads2;
    const int32_t d = static_cast<int32_t>(td.dim), m = static_cast<int32_t>(mt), n = static_cast<int32_t>(nt);
    const int32_t qRow = static_cast<int32_t>(td.qRow), kRow = static_cast<int32_t>(td.kRow);
    for (int64_t g = 0; g < group; ++g) {
      const int64_t n1 = n2 * group + g;
      const int64_t qOff = FaQBase(td, sg, n1) + q0 * td.qRow, oOff = FaOBase(td, sg, n1) + q0 * td.oRow;
      const int64_t kOff = FaKBase(td, sg, n1) + k0 * td.kRow, vOff = FaVBase(td, sg, n1) + k0 * td.vRow;
      RowStats(sg, n1, q0, mt);
      Rebuild(sg, n1, q0, mt, k0, nt);
      // The cube reads P and dS from GM: the copies out must have landed.
      PipeBarrier<PIPE_ALL>();
      AddProduct(mmTN, n, static_cast<int32_t>(td.dimV), m, pGm_, true, dyGm_[oOff], static_cast<int32_t>(td.oRow),
                 accV_[vOff], static_cast<int32_t>(td.vRow));
      AddProduct(mmTN, n, d, m, dsGm_, true, qGm_[qOff], qRow, accK_[kOff], kRow);
      AddProduct(mmNN, m, d, n, dsGm_, false, kGm_[kOff], kRow, accQ_[qOff], qRow);
    }
  }

  // C [m x n] += op(A) B by the store atomic, C's rows ldc apart: A stored m x k, or k x m when
  // transA (a tile of the workspace, compact); B k x n, rows ldb apart.
  template <class MM>
  __aicore__ inline void AddProduct(MM &mm, int32_t m, int32_t n, int32_t k, const GlobalTensor<T> &a, bool transA,
                                    const GlobalTensor<T> &b, int32_t ldb, const GlobalTensor<float> &c, int32_t ldc) {
    mm.SetOrgShape(m, ldb, k, k, ldc);
    mm.SetSingleShape(m, n, k);
    mm.SetTensorA(a, transA);
    mm.SetTensorB(b);
    mm.IterateAll(c, 1);
    mm.End();
  }

  // This block's share [start, end) of n elements: slices of whole 256-element runs.
  __aicore__ inline void Slice(uint64_t n, uint64_t &start, uint64_t &end) {
    const uint64_t blocks = GetBlockNum(), per = ((n + blocks - 1) / blocks + 255) / 256 * 256;
    start = GetBlockIdx() * per;
    end = start + per < n ? start + per : n;
  }

  template <typename U>
  __aicore__ inline void ZeroSlice(const GlobalTensor<U> &dst, uint64_t n) {
    uint64_t start, end;
    Slice(n, start, end);
    if (start < end) ZeroRun(dst[start], end - start);
  }

  // This block's slice of an fp32 accumulator into the T output.
  __aicore__ inline void Narrow(const GlobalTensor<T> &dst, const GlobalTensor<float> &acc, uint64_t n) {
    uint64_t start, end;
    Slice(n, start, end);
    const uint64_t chunk = uint64_t(aRows_) * dPitch_;
    for (uint64_t x = start; x < end; x += chunk) {
      const uint32_t len = static_cast<uint32_t>(end - x < chunk ? end - x : chunk);
      LocalTensor<float> f = aQ_.AllocTensor<float>();
      CopyIn(f, acc[x], len);
      aQ_.EnQue(f);
      f = aQ_.DeQue<float>();
      LocalTensor<T> o = outQ_.AllocTensor<T>();
      FaNarrow(o, f, len);
      aQ_.FreeTensor(f);
      outQ_.EnQue(o);
      o = outQ_.DeQue<T>();
      CopyOut(dst[x], o, len);
      outQ_.FreeTensor(o);
    }
  }

  // The tile's P and dS into the workspace, T, zero where the row sees no key,
  // from the rows' statistics RowStats loaded; a chunk of rows per vector call:
  // P = exp(logits - shift) * (1 / sum) with the row statistics as broadcast blocks,
  // dS = scale * P * (dP - D). With dropout, dP and the P written for dV carry
  // the keep bits (Z / keep_prob) while dS takes the undropped P: P is dropped after dS.
  __aicore__ inline void Rebuild(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt, int64_t k0, uint32_t nt) {
    const FlashAttentionTilingData &td = *td_;
    const int64_t qOff = FaQBase(td, sg, n1) + q0 * td.qRow, kOff = FaKBase(td, sg, n1) + k0 * td.kRow;
    const int64_t oOff = FaOBase(td, sg, n1) + q0 * td.oRow, vOff = FaVBase(td, sg, n1) + k0 * td.vRow;
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
    const bool scaled = td.pseKind != 0 || td.hasMask;
    if (scaled) FaTileLogits(pipe, logits_, td, sg, n1, q0, mt, k0, nt, sGm_);
    const uint32_t pitch = nPitch_;
    const LocalTensor<float> shift = statMax_.Get<float>(), inv = statSum_.Get<float>(), dBlk = dBlk_.Get<float>();
    // fp32 P and dS (without d real_shift) are made in the output queue's tensor by their last
    // operation, so no copy into it is needed; otherwise Emit narrows them into it.
    const bool direct = AscendC::IsSameType<T, float>::value && !td.pseGrad;
    for (uint32_t r0 = 0; r0 < mt; r0 += sRows_) {
      const uint32_t rows = mt - r0 < sRows_ ? mt - r0 : sRows_;
      const int32_t count = static_cast<int32_t>(rows * pitch);
      LocalTensor<float> p = sQ_.AllocTensor<float>();
      FaTileIn(p, sGm_[uint64_t(r0) * nt], rows, nt, nt, pitch);
      sQ_.EnQue(p);
      LocalTensor<float> ds = dpQ_.AllocTensor<float>();
      FaTileIn(ds, dpGm_[uint64_t(r0) * nt], rows, nt, nt, pitch);
      dpQ_.EnQue(ds);
      p = sQ_.DeQue<float>();
      ds = dpQ_.DeQue<float>();
      if (!scaled) Muls(p, p, td.scale, count);
      for (uint32_t r = 0; r < rows; ++r) {
        int64_t lo, hi;
        FaVisible(sg, q0 + r0 + r, k0, nt, lo, hi);
        FaKeepColumns(p[r * pitch], nt, lo, hi);
      }
      RowsByBlocks<RowOp::kSub>(p, p, shift[r0 * 8], rows, pitch);
      Exp(p, p, count);
      LocalTensor<float> pOut = p;
      if (direct) pOut = outQ_.AllocTensor<float>();
      RowsByBlocks<RowOp::kMul>(pOut, p, inv[r0 * 8], rows, pitch);
      if (td.dropKind) {
        FaDropKeep(pipe, drop_, td, sg, n1, q0 + r0, rows, k0, nt);
        for (uint32_t r = 0; r < rows; ++r) FaDropApply(drop_, td, ds[r * pitch], ds[r * pitch], r, nt);
      }
      RowsByBlocks<RowOp::kSub>(ds, ds, dBlk[r0 * 8], rows, pitch);
      Mul(ds, ds, pOut, count);
      for (uint32_t r = 0; td.dropKind && r < rows; ++r)
        FaDropApply(drop_, td, pOut[r * pitch], pOut[r * pitch], r, nt);
      if (direct) {
        EmitQueued(pGm_[uint64_t(r0) * nt], pOut, rows, nt);
      } else {
        Emit(pGm_[uint64_t(r0) * nt], p, rows, nt, nt);
      }
      sQ_.FreeTensor(p);
      if (direct) {
        LocalTensor<float> o = outQ_.AllocTensor<float>();
        Muls(o, ds, td.scale, count);
        EmitQueued(dsGm_[uint64_t(r0) * nt], o, rows, nt);
      } else {
        const int64_t pseAt = td.pseGrad ? int64_t(FaPseAt(td, sg, n1, q0 + r0, k0)) : 0;
        if (td.pseGrad && !td.pseAddFirst) Emit(dpseGm_[pseAt], ds, rows, nt, td.pseRow);
        Muls(ds, ds, td.scale, count);
        if (td.pseGrad && td.pseAddFirst) Emit(dpseGm_[pseAt], ds, rows, nt, td.pseRow);
        Emit(dsGm_[uint64_t(r0) * nt], ds, rows, nt, nt);
      }
      dpQ_.FreeTensor(ds);
    }
  }

  // A tensor of outQ_ holding a [rows x pitch] fp32 tile (T = float) into the workspace's compact
  // rows [rows x cols], and back to the queue.
  __aicore__ inline void EmitQueued(const GlobalTensor<T> &dst, LocalTensor<float> &o, uint32_t rows, uint32_t cols) {
    outQ_.EnQue(o);
    LocalTensor<T> t = outQ_.DeQue<T>();
    FaTileOut(dst, t, rows, cols, cols, nPitch_);
    outQ_.FreeTensor(t);
  }

  // `count` zeros into GM, in runs of the zero row.
  template <typename U>
  __aicore__ inline void ZeroRun(const GlobalTensor<U> &dst, uint64_t count) {
    const uint64_t run = zeroBytes_ / sizeof(U);
    for (uint64_t x = 0; x < count; x += run)
      CopyOut(dst[x], zero_.Get<U>(), static_cast<uint32_t>(count - x < run ? count - x : run));
  }

  // A [rows x pitch] fp32 UB tile into GM rows [rows x cols] (ld apart) as T.
  __aicore__ inline void Emit(const GlobalTensor<T> &dst, const LocalTensor<float> &src, uint32_t rows, uint32_t cols,
                              int64_t ld) {
    LocalTensor<T> o = outQ_.AllocTensor<T>();
    FaNarrow(o, src, rows * nPitch_);
    outQ_.EnQue(o);
    o = outQ_.DeQue<T>();
    FaTileOut(dst, o, rows, cols, ld, nPitch_);
    outQ_.FreeTensor(o);
  }

  // The rows' statistics as broadcast blocks of 8 floats: shift = max(softmax_max, kFaShiftFloor),
  // 1 / softmax_sum (1e30 for a row with sum 0, whose P is 0 anyway) and D (RowD).
  __aicore__ inline void RowStats(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt) {
    const FlashAttentionTilingData &td = *td_;
    const int64_t sOff = FaStatBase(td, sg, n1, q0);
    const LocalTensor<float> shift = statMax_.Get<float>(), inv = statSum_.Get<float>();
    // The previous tile's vector reads of these buffers are done.
    PipeBarrier<PIPE_ALL>();
    FaStatsIn(shift, maxGm_[sOff], mt, td.statRow);
    FaStatsIn(inv, sumGm_[sOff], mt, td.statRow);
    CopyIn(dRow_.Get<float>(), rowDGm_[RowDAt(sg, n1, q0)], mt);
    OrderPipes<HardEvent::MTE2_V>(&pipe);
    const int32_t blocks = static_cast<int32_t>(mt * 8);
    Maxs(shift, shift, kFaShiftFloor, blocks);
    Maxs(inv, inv, 1.0e-30f, blocks);
    const LocalTensor<float> one = dBlk_.Get<float>();
    Duplicate(one, 1.0f, blocks);
    Div(inv, one, inv, blocks);
    Brcb(dBlk_.Get<float>(), dRow_.Get<float>(), static_cast<uint8_t>((mt + 7) / 8), BrcbRepeatParams(1, 8));
  }

  // Where row q0 of head n1 has its D in the workspace ([N1, qRows]).
  __aicore__ inline int64_t RowDAt(const FaSeg &sg, int64_t n1, int64_t q0) {
    return n1 * td_->qRows + (td_->packed ? sg.qStart : sg.b * td_->seq1) + q0;
  }

  // D = Σ dO ∘ O of rows [q0, q0 + mt) of head n1, a whole chunk of rows per vector call, into
  // the workspace.
  __aicore__ inline void RowD(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt) {
    const FlashAttentionTilingData &td = *td_;
    const uint32_t d = static_cast<uint32_t>(td.dimV), pitch = vPitch_;
    const int64_t oOff = FaOBase(td, sg, n1) + q0 * td.oRow;
    const LocalTensor<float> dr = dRow_.Get<float>();
    // The previous rows' D has left for GM before dr is rewritten.
    PipeBarrier<PIPE_ALL>();
    for (uint32_t r0 = 0; r0 < mt; r0 += aRows_) {
      const uint32_t rows = mt - r0 < aRows_ ? mt - r0 : aRows_;
      LocalTensor<T> dy = aQ_.AllocTensor<T>();
      FaTileIn(dy, dyGm_[oOff + int64_t(r0) * td.oRow], rows, d, td.oRow, pitch);
      aQ_.EnQue(dy);
      LocalTensor<T> o = bQ_.AllocTensor<T>();
      FaTileIn(o, oGm_[oOff + int64_t(r0) * td.oRow], rows, d, td.oRow, pitch);
      bQ_.EnQue(o);
      dy = aQ_.DeQue<T>();
      o = bQ_.DeQue<T>();
      const LocalTensor<float> a = ToFloat(dy, wideA_, rows * pitch), c = ToFloat(o, wideB_, rows * pitch);
      const LocalTensor<float> prod = AscendC::IsSameType<T, float>::value ? a : c;
      Mul(prod, a, c, static_cast<int32_t>(rows * pitch));
      FaRowReduce<false>(dr[r0], prod, fold_.Get<float>(), rows, pitch, d);
      aQ_.FreeTensor(dy);
      bQ_.FreeTensor(o);
    }
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    CopyOut(rowDGm_[RowDAt(sg, n1, q0)], dr, mt);
  }

  TQue<QuePosition::VECIN, 1> sQ_, dpQ_, aQ_, bQ_;
  TQue<QuePosition::VECOUT, 1> outQ_;
  TBuf<TPosition::VECCALC> wideA_, wideB_, fold_, zero_, statMax_, statSum_, dBlk_, dRow_;
  FaSeqGm seq_;
  GlobalTensor<T> qGm_, kGm_, vGm_, dyGm_, oGm_, dqGm_, dkGm_, dvGm_, pGm_, dsGm_, dpseGm_;
  FaLogitBufs<T> logits_;
  FaDropout drop_;
  uint64_t dpseElems_ = 0, qElems_ = 0, kElems_ = 0, vElems_ = 0;
  GlobalTensor<float> maxGm_, sumGm_, rowDGm_, sGm_, dpGm_;
  GlobalTensor<float> accQ_, accK_, accV_;  // dq, dk, dv in fp32: the outputs for fp32, else workspace
  const FlashAttentionTilingData *td_ = nullptr;
  uint32_t zeroBytes_ = 0, nPitch_ = 0, dPitch_ = 0, vPitch_ = 0, sRows_ = 0, aRows_ = 0;
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
