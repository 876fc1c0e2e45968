// flash_attention_score (CANN FlashAttentionScore): per sequence and head,
// out = softmax(scale * Q Kᵀ (+ real_shift or ALiBi, FaLogits) restricted to the visible keys) V, with GQA (query head n
// reads key/value head n / (N1 / N2)); softmax_max / softmax_sum are the rows' max of the scaled
// scores and Σ exp(score - max), 8 equal copies per row. The visible keys are a range per row
// (sparse_mode, pre/next_tokens, prefix; flash_attention_kernel.h), minus those attn_mask marks.
// A row with no visible key outputs 0. Sequences are a batch of equal lengths or packed (TND).
// With dropout, P V takes P with its dropped elements zeroed and the kept ones scaled by
// 1 / keep_prob (flash_attention_dropout.h), while softmax_sum is the sum of the undropped P.
//
// A work item is (query head, tile of mTile query rows of one sequence); blocks take them tile by
// tile from the last (with causal masks, the most keys) down, so that they end close together. For
// each tile of up to nTile keys that any of its rows sees (cut after the last key a row of the item
// sees, FaKeysEnd), the cube computes S = Q Kᵀ into the block's fp32 workspace; the vector pass
// turns the tile, a chunk of rows per call, into P = exp(scale S - new max) over its visible keys
// (0 elsewhere), kept as T for the cube, and updates the running max and sum; it scales the fp32
// accumulator by exp(old max - new max) and the cube adds P V into it. No S1 x S2 buffer.
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

// UB bytes of a chunk of score rows, S (fp32), P (T) and FaRowReduce's two 64-lane scratch rows
// per row, and of a chunk of an accumulator tile. At 512 keys that is 24 rows (fp32): the vector
// pass is about 35 calls a chunk whatever its rows, so longer chunks mean fewer calls for the same
// elements (16 rows took a third more vector time in the twin).
constexpr uint32_t kFaScoreChunkBytes = 110592, kFaChunkBytes = 16384;

// Rows of a score chunk of `pitch`-element rows with T probabilities (RowsIn).
template <typename T>
__aicore__ inline uint32_t FaScoreChunkRows(uint32_t pitch) {
  const uint32_t lanes = pitch > kFaLanes ? pitch : kFaLanes;
  return RowsIn(kFaScoreChunkBytes, lanes * (4 + sizeof(T)) + 2 * kFaLanes * 4);
}

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
  Matmul<ND, ND, Acc> mmNN;       // acc += P V

  __aicore__ inline void Init(const FaArgs &a, const FlashAttentionTilingData &td) {
    td_ = &td;
    const int64_t mT = td.mTile, nT = td.nTile, d = td.dim, dv = td.dimV;
    const uint64_t qElems = uint64_t(td.qRows) * td.heads1 * d, kElems = uint64_t(td.kRows) * td.heads2 * d;
    qGm_.SetGlobalBuffer((__gm__ T *)a.q, qElems);
    kGm_.SetGlobalBuffer((__gm__ T *)a.k, kElems);
    vGm_.SetGlobalBuffer((__gm__ T *)a.v, uint64_t(td.kRows) * td.heads2 * dv);
    outGm_.SetGlobalBuffer((__gm__ T *)a.out, uint64_t(td.qRows) * td.heads1 * dv);
    const uint64_t stats = uint64_t(td.qRows) * td.heads1 * 8;
    maxGm_.SetGlobalBuffer((__gm__ float *)a.maxOut, stats);
    sumGm_.SetGlobalBuffer((__gm__ float *)a.sumOut, stats);
    FaBindSequences(seq_, logits_.mask, a.mask, a.prefix, a.cumQ, a.cumKv, td);
    // The block's workspace: S (fp32) with P (T) written over it (Probabilities reads a chunk of S
    // rows before it writes the chunk's P, which starts no later), and the fp32 accumulator (the
    // tiling sizes it mT x D >= mT x D_v).
    const uint64_t floats = uint64_t(mT) * nT + uint64_t(mT) * d;
    __gm__ float *ws = (__gm__ float *)GetUserWorkspace(a.workspace) + GetBlockIdx() * floats;
    sGm_.SetGlobalBuffer(ws, uint64_t(mT) * nT);
    pGm_.SetGlobalBuffer((__gm__ T *)ws, uint64_t(mT) * nT);
    accGm_.SetGlobalBuffer(ws + mT * nT, uint64_t(mT) * dv);

    nPitch_ = FaPitch(nT);
    dPitch_ = FaPitch(dv);
    sRows_ = FaScoreChunkRows<T>(nPitch_);
    aRows_ = FaChunkRows(dPitch_, kFaChunkBytes);
    pipe.InitBuffer(sQ_, 1, sRows_ * nPitch_ * 4);
    pipe.InitBuffer(pQ_, 1, UbBytes(sRows_ * nPitch_, sizeof(T)));
    pipe.InitBuffer(aQ_, 1, aRows_ * dPitch_ * 4);
    pipe.InitBuffer(oQ_, 1, aRows_ * dPitch_ * 4);
    pipe.InitBuffer(fold_, 2 * sRows_ * kFaLanes * 4);
    pipe.InitBuffer(brc_, (sRows_ > aRows_ ? sRows_ : aRows_) * kUbAlign);
    statRows_ = (static_cast<uint32_t>(mT) + 7) / 8 * 8;
    pipe.InitBuffer(state_, kStates * statRows_ * 4);
    pipe.InitBuffer(stats_, statRows_ * kUbAlign);
    const uint32_t zeroBytes = UbBytes(dv, sizeof(T));
    pipe.InitBuffer(zero_, zeroBytes);
    // Without real_shift and attn_mask every score is scale * QKᵀ or a hidden key's kFaLowest, so a
    // chunk whose rows all see a key of the tile goes through SoftmaxFlashV2 (FlashChunk).
    flash_ = td.pseKind == 0 && !td.hasMask;
    if (flash_) {
      pipe.InitBuffer(flashStats_, kFlashStats * sRows_ * kUbAlign);
      Duplicate(FlashStat(kZeroSum), 0.0f, static_cast<int32_t>(sRows_ * 8));
      softmax_ = SoftMaxFlashV2TilingFunc(SoftMaxShapeInfo{sRows_, nPitch_, sRows_, nPitch_}, 4, 4,
                                          2 * sRows_ * kFaLanes * 4, true);
    }
    FaInitLogits(pipe, logits_, a.pse, td);
    FaInitDropout(pipe, drop_, a.dropMask, a.dropSeed, td, sRows_);
    // All-zero bytes are 0 in every float type.
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(zeroBytes / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
  }

  __aicore__ inline void Process() {
    const FlashAttentionTilingData &td = *td_;
    for (int64_t round = 0, it; (it = DealtItem(round)) < td.heads1 * td.qTiles; ++round) {
      int64_t q0;
      const FaSeg sg = FaLocate(td, seq_, true, td.qTiles - 1 - it / td.heads1, td.mTile, q0);
      QueryTile(sg, it % td.heads1, q0, static_cast<uint32_t>(Min64(td.mTile, sg.s1 - q0)));
    }
    mmNT.End();
    mmNN.End();
  }

 private:
  enum State : uint32_t { kRunMax, kNewMax, kSum, kTileMax, kTileSum, kFactor, kShift, kStates };
  static constexpr int64_t kDiagRows = 64;
  // SoftmaxFlashV2's row statistics, one 32-byte block per row of a chunk.
  enum FlashStatBlocks : uint32_t { kInMax, kZeroSum, kOutMax, kOutSum, kExpMax, kFlashStats };

  __aicore__ inline LocalTensor<float> FlashStat(uint32_t a) { return flashStats_.Get<float>()[a * sRows_ * 8]; }

  __aicore__ inline LocalTensor<float> St(uint32_t a) {
    // kRunMax and kNewMax trade places after every key tile.
    if (a == kRunMax || a == kNewMax) a ^= swap_;
    return state_.Get<float>()[a * statRows_];
  }

  __aicore__ inline void QueryTile(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt) {
    const FlashAttentionTilingData &td = *td_;
    const int64_t qBase = FaQBase(td, sg, n1) + q0 * td.qRow, kBase = FaKBase(td, sg, n1), vBase = FaVBase(td, sg, n1);
    // The previous tile's state has left for GM.
    PipeBarrier<PIPE_ALL>();
    Duplicate(St(kRunMax), kFaLowest, mt);
    Duplicate(St(kSum), 0.0f, mt);
    bool started = false;
    const int64_t kEnd = FaKeysEnd(sg, q0, mt);
    for (int64_t k0 = FaKeysBegin(sg, q0); k0 < kEnd; k0 += td.nTile) {
      const uint32_t nt = static_cast<uint32_t>(Min64(td.nTile, kEnd - k0));
      if (!FaTileVisible(sg, q0, mt, k0, nt)) continue;
      PipeBarrier<PIPE_ALL>();
      // The tile's rows in one group, or, where its first rows see fewer of its keys than its last
      // (the causal diagonal), in groups of kDiagRows whose scores and share of P V stop at their
      // last visible key: the scores past it are masked below anyway and P is 0 there. A 256-row
      // tile on the diagonal multiplies 3/8 fewer pairs.
      const uint32_t group = GroupKeys(sg, q0, Min64(kDiagRows, mt), k0, nt) < static_cast<int>(nt) ? kDiagRows : mt;
      for (uint32_t c0 = 0; c0 < mt; c0 += group) {
        const uint32_t rc = static_cast<uint32_t>(Min64(group, mt - c0));
        mmNT.SetOrgShape(rc, nt, static_cast<int>(td.qRow), static_cast<int>(td.kRow));
        mmNT.SetSingleShape(rc, GroupKeys(sg, q0 + c0, rc, k0, nt), static_cast<int>(td.dim));
        mmNT.SetTensorA(qGm_[qBase + c0 * td.qRow]);
        mmNT.SetTensorB(kGm_[kBase + k0 * td.kRow], true);
        mmNT.IterateAll(sGm_[uint64_t(c0) * nt]);
        mmNT.End();
      }
      if (td.pseKind != 0 || td.hasMask) FaTileLogits(pipe, logits_, td, sg, n1, q0, mt, k0, nt, sGm_);
      Probabilities(sg, n1, q0, mt, k0, nt);
      if (started) Rescale(mt);
      // The cube reads P and adds into the accumulator in GM: the copies out must have landed.
      PipeBarrier<PIPE_ALL>();
      for (uint32_t c0 = 0; c0 < mt; c0 += group) {
        const uint32_t rc = static_cast<uint32_t>(Min64(group, mt - c0));
        mmNN.SetOrgShape(rc, static_cast<int>(td.vRow), nt, nt);
        mmNN.SetSingleShape(rc, static_cast<int>(td.dimV), GroupKeys(sg, q0 + c0, rc, k0, nt));
        mmNN.SetTensorA(pGm_[uint64_t(c0) * nt]);
        mmNN.SetTensorB(vGm_[vBase + k0 * td.vRow]);
        mmNN.IterateAll(accGm_[uint64_t(c0) * td.dimV], started ? 1 : 0, true);
        mmNN.End();
      }
      started = true;
    }
    Finish(sg, n1, q0, mt, started);
  }

  // Keys [k0, k0 + this) of an nt-key tile that query rows [q, q + rows) may see: at least one,
  // so that a group's P V still writes its accumulator rows on the first tile.
  __aicore__ inline int GroupKeys(const FaSeg &sg, int64_t q, int64_t rows, int64_t k0, uint32_t nt) {
    const int64_t n = FaKeysEnd(sg, q, rows) - k0;
    return static_cast<int>(n < 1 ? 1 : (n > int64_t(nt) ? int64_t(nt) : n));
  }

  // P = exp(logits - new max) of the tile into the workspace as T (0 for the keys a row does not
  // see), the new running max and the tile's row sums; then factor and sum for all rows. Whole
  // chunks of rows at a time: the scores' invisible keys become kFaLowest, then FlashChunk or
  // GeneralChunk makes the chunk's exponentials and statistics.
  __aicore__ inline void Probabilities(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt, int64_t k0, uint32_t nt) {
    const FlashAttentionTilingData &td = *td_;
    const uint32_t pitch = nPitch_;
    const bool scaled = td.pseKind != 0 || td.hasMask;
    for (uint32_t r0 = 0; r0 < mt; r0 += sRows_) {
      const uint32_t rows = mt - r0 < sRows_ ? mt - r0 : sRows_;
      LocalTensor<float> s = sQ_.AllocTensor<float>();
      FaTileIn(s, sGm_[uint64_t(r0) * nt], rows, nt, nt, pitch);
      sQ_.EnQue(s);
      s = sQ_.DeQue<float>();
      if (!scaled) Muls(s, s, td.scale, static_cast<int32_t>(rows * pitch));
      bool blind = false;
      for (uint32_t r = 0; r < rows; ++r) {
        int64_t lo, hi;
        FaVisible(sg, q0 + r0 + r, k0, nt, lo, hi);
        FaKeepColumns(s[r * pitch], nt, lo, hi);
        blind = blind || hi <= lo;
      }
      LocalTensor<T> p = pQ_.AllocTensor<T>();
      const int32_t count = static_cast<int32_t>(rows * pitch);
      // fp32 P is the exponential itself; fp16/bf16 P its cast.
      const LocalTensor<float> e = AscendC::IsSameType<T, float>::value ? p.template ReinterpretCast<float>() : s;
      if (flash_ && !blind) {
        FlashChunk(e, s, r0, rows, nt);
      } else {
        GeneralChunk(e, s, r0, rows, nt);
      }
      if (td.dropKind) {
        FaDropKeep(pipe, drop_, td, sg, n1, q0 + r0, rows, k0, nt);
        for (uint32_t r = 0; r < rows; ++r) FaDropApply(drop_, td, e[r * pitch], e[r * pitch], r, nt);
      }
      if constexpr (!AscendC::IsSameType<T, float>::value) Cast(p, s, RoundMode::CAST_RINT, count);
      sQ_.FreeTensor(s);
      pQ_.EnQue(p);
      p = pQ_.DeQue<T>();
      FaTileOut(pGm_[uint64_t(r0) * nt], p, rows, nt, nt, pitch);
      pQ_.FreeTensor(p);
    }
    // sum = sum * exp(old max - new max) + tile sum, for all rows at once.
    const LocalTensor<float> factor = St(kFactor), sum = St(kSum);
    Sub(factor, St(kRunMax), St(kNewMax), static_cast<int32_t>(mt));
    Exp(factor, factor, static_cast<int32_t>(mt));
    Mul(sum, sum, factor, static_cast<int32_t>(mt));
    Add(sum, sum, St(kTileSum), static_cast<int32_t>(mt));
    swap_ ^= 1u;
  }

  // Rows [r0, r0 + rows) of the tile, each seeing a key of it, by SoftmaxFlashV2: e = exp(s - new
  // max) over the first nt columns, the new running max max(old, row max) and the row sums of e
  // (its input sum is zero: the tile's sums are merged for all rows afterwards). The statistics go
  // in and out of the API as one block per row (Brcb, BlockReduceMax of the equal copies).
  __aicore__ inline void FlashChunk(const LocalTensor<float> &e, const LocalTensor<float> &s, uint32_t r0,
                                    uint32_t rows, uint32_t nt) {
    const uint8_t groups = static_cast<uint8_t>((rows + 7) / 8);
    Brcb(FlashStat(kInMax), St(kRunMax)[r0], groups, BrcbRepeatParams(1, 8));
    SoftmaxFlashV2<float, true>(e, FlashStat(kOutSum), FlashStat(kOutMax), s, FlashStat(kExpMax),
                                FlashStat(kZeroSum), FlashStat(kInMax), fold_.Get<uint8_t>(), softmax_,
                                SoftMaxShapeInfo{rows, nPitch_, rows, nt});
    BlockReduceMax(St(kNewMax)[r0], FlashStat(kOutMax), groups, static_cast<int32_t>(kFaLanes), 1, 1, 8);
    BlockReduceMax(St(kTileSum)[r0], FlashStat(kOutSum), groups, static_cast<int32_t>(kFaLanes), 1, 1, 8);
  }

  // The same for any rows, some perhaps seeing no key of the tile or all their keys masked: the
  // shift exp(s - shift) uses is the new max raised to kFaShiftFloor, so such a row's e is 0.
  __aicore__ inline void GeneralChunk(const LocalTensor<float> &e, const LocalTensor<float> &s, uint32_t r0,
                                      uint32_t rows, uint32_t nt) {
    const uint32_t pitch = nPitch_;
    const LocalTensor<float> fold = fold_.Get<float>(), newMax = St(kNewMax)[r0], shift = St(kShift)[r0];
    FaRowReduce<true>(St(kTileMax)[r0], s, fold, rows, pitch, nt);
    Max(newMax, St(kTileMax)[r0], St(kRunMax)[r0], static_cast<int32_t>(rows));
    Maxs(shift, newMax, kFaShiftFloor, static_cast<int32_t>(rows));
    RowsBy<RowOp::kSub>(s, s, shift, brc_.Get<float>(), rows, pitch);
    Exp(e, s, static_cast<int32_t>(rows * pitch));
    // The row sums are the softmax's: anything applied to P from here on (dropout's keep mask)
    // leaves them as they are.
    FaRowReduce<false>(St(kTileSum)[r0], e, fold, rows, pitch, nt);
  }

  // acc = acc * factor, chunk by chunk, before the cube adds this tile's P V to it.
  __aicore__ inline void Rescale(uint32_t mt) {
    const uint32_t d = static_cast<uint32_t>(td_->dimV);
    for (uint32_t r0 = 0; r0 < mt; r0 += aRows_) {
      const uint32_t rows = mt - r0 < aRows_ ? mt - r0 : aRows_;
      LocalTensor<float> acc = aQ_.AllocTensor<float>();
      FaTileIn(acc, accGm_[uint64_t(r0) * d], rows, d, d, dPitch_);
      aQ_.EnQue(acc);
      acc = aQ_.DeQue<float>();
      LocalTensor<float> o = oQ_.AllocTensor<float>();
      RowsBy<RowOp::kMul>(o, acc, St(kFactor)[r0], brc_.Get<float>(), rows, dPitch_);
      aQ_.FreeTensor(acc);
      oQ_.EnQue(o);
      o = oQ_.DeQue<float>();
      FaTileOut(accGm_[uint64_t(r0) * d], o, rows, d, d, dPitch_);
      oQ_.FreeTensor(o);
    }
  }

  // out = acc / sum (0 for a row that saw no key), softmax_max and softmax_sum.
  __aicore__ inline void Finish(const FaSeg &sg, int64_t n1, int64_t q0, uint32_t mt, bool started) {
    const FlashAttentionTilingData &td = *td_;
    const uint32_t d = static_cast<uint32_t>(td.dimV);
    const int64_t oBase = FaOBase(td, sg, n1) + q0 * td.oRow;
    // The accumulator rows the cube just wrote are read back.
    PipeBarrier<PIPE_ALL>();
    if (!started) {
      for (uint32_t i = 0; i < mt; ++i) CopyOut(outGm_[oBase + int64_t(i) * td.oRow], zero_.Get<T>(), d);
    } else {
      // A row with a visible key has sum >= 1 (its max contributes exp(0)); one without has acc 0.
      const LocalTensor<float> inv = St(kShift), one = St(kTileMax);
      Maxs(inv, St(kSum), 1.0e-30f, static_cast<int32_t>(mt));
      Duplicate(one, 1.0f, static_cast<int32_t>(mt));
      Div(inv, one, inv, static_cast<int32_t>(mt));
      for (uint32_t r0 = 0; r0 < mt; r0 += aRows_) {
        const uint32_t rows = mt - r0 < aRows_ ? mt - r0 : aRows_;
        LocalTensor<float> acc = aQ_.AllocTensor<float>();
        FaTileIn(acc, accGm_[uint64_t(r0) * d], rows, d, d, dPitch_);
        aQ_.EnQue(acc);
        acc = aQ_.DeQue<float>();
        RowsBy<RowOp::kMul>(acc, acc, inv[r0], brc_.Get<float>(), rows, dPitch_);
        LocalTensor<T> o = oQ_.AllocTensor<T>();
        FaNarrow(o, acc, rows * dPitch_);
        aQ_.FreeTensor(acc);
        oQ_.EnQue(o);
        o = oQ_.DeQue<T>();
        FaTileOut(outGm_[oBase + int64_t(r0) * td.oRow], o, rows, d, td.oRow, dPitch_);
        oQ_.FreeTensor(o);
      }
    }
    WriteStats(maxGm_, St(kRunMax), sg, n1, q0, mt);
    WriteStats(sumGm_, St(kSum), sg, n1, q0, mt);
  }

  // Rows [q0, q0 + mt) of a [B, N1, S1, 8] or [T1, N1, 8] statistic: each row's value broadcast to
  // its 8 copies (one block) by Brcb.
  __aicore__ inline void WriteStats(const GlobalTensor<float> &gm, const LocalTensor<float> &rows, const FaSeg &sg,
                                    int64_t n1, int64_t q0, uint32_t mt) {
    const FlashAttentionTilingData &td = *td_;
    LocalTensor<float> st = stats_.Get<float>();
    // The previous copy out of this buffer has completed.
    OrderPipes<HardEvent::MTE3_V>(&pipe);
    Brcb(st, rows, static_cast<uint8_t>((mt + 7) / 8), BrcbRepeatParams(1, 8));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    FaStatsOut(gm[FaStatBase(td, sg, n1, q0)], st, mt, td.statRow);
  }

  TQue<QuePosition::VECIN, 1> sQ_, aQ_;
  TQue<QuePosition::VECOUT, 1> pQ_, oQ_;
  TBuf<TPosition::VECCALC> zero_, fold_, brc_, state_, stats_, flashStats_;
  SoftMaxTiling softmax_;
  bool flash_ = false;
  FaSeqGm seq_;
  FaLogitBufs<T> logits_;
  FaDropout drop_;
  GlobalTensor<T> qGm_, kGm_, vGm_, outGm_, pGm_;
  GlobalTensor<float> maxGm_, sumGm_, sGm_, accGm_;
  const FlashAttentionTilingData *td_ = nullptr;
  uint32_t swap_ = 0, nPitch_ = 0, dPitch_ = 0, sRows_ = 0, aRows_ = 0, statRows_ = 0;
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
