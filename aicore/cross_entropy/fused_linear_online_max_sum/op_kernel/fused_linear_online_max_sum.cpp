// fused_linear_online_max_sum (ops-nn FusedLinearOnlineMaxSum, plus sum_logits_local): with the
// logits z = input · weightᵀ of the local weight's V rows (fp32 accumulation), the shard's id range
// [start, end) (end exclusive, as CANN's kernel compares; end − start may differ from V) and
// t = target[r], per row r:
//   logits_max_local[r]       = max_j z[r, j]                        (over all V columns)
//   sum_exp_logits_local[r]   = Σ_j exp(z[r, j] − logits_max_local[r])
//   predicted_logits_local[r] = z[r, t − start] − logits_max_local[r] inside the shard, else 0
//   target_mask bit r         = 1 outside the shard (pad bits of the last byte 1)
//   masked_target[r]          = t − start inside the shard, else 0
//   sum_logits_local[r]       = Σ_j z[r, j]
// and vocab_parallel_logits = z when the logits are returned. A target in [start + V, end) (a
// range longer than the weight) has no column: the CPU entry refuses it; here (the NPU checks no
// values) it is in the shard for target_mask and masked_target but its predicted logit is 0.
//
// A block owns whole 8-row groups of one row group and whole tiles of one vocabulary group (see the
// tiling header). For each tile of its rows it walks its vocabulary in tiles: the Matmul writes the
// fp32 logits tile to GM (the block's workspace tile, or its place in vocab_parallel_logits), and
// the vector pass folds the tile into the rows' running state with the online softmax update
// sum = sum · exp(old max − new max) + Σ_j exp(z − new max). With several vocabulary groups each
// block stores its rows' statistics over its group's columns, and after a SyncAll each block merges
// a share of the rows over the groups, in group order: max = max_g max_g,
// sum = Σ_g sum_g · exp(max_g − max), the sums of logits and the target logit added.
#include "../../../common/kernel_utils.h"
#include "fused_linear_online_max_sum_tiling_data.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// Start of every running max: the most negative finite float, so that the first tile's rescale
// factor exp(start − new max) is 0 rather than the NaN of exp(−inf − (−inf)).
constexpr float kLowest = -3.40282347e+38f;

// Offsets (floats) of the reduction results in reduceOut_: one 32-byte block each.
constexpr uint32_t kRedMax = 0, kRedSumExp = 8, kRedSum = 16;

// The partial statistics of a row over one vocabulary group, in workspace (kFlomsStats of them).
constexpr uint32_t kStatMax = 0, kStatSumExp = 1, kStatSum = 2, kStatPick = 3;

// T: dtype of input and weight; G: dtype of target and masked_target.
template <typename T, typename G>
class FusedLinearOnlineMaxSumKernel {
  using AType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using BType = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;
  using CType = MatmulType<TPosition::GM, CubeFormat::ND, float>;

 public:
  __aicore__ inline FusedLinearOnlineMaxSumKernel() {}

  // Registered by Run with REGIST_MATMUL_OBJ before Init's InitBuffer calls.
  TPipe pipe;
  Matmul<AType, BType, CType> mm;

  __aicore__ inline void Init(GM_ADDR input, GM_ADDR weight, GM_ADDR target, GM_ADDR logitsMax, GM_ADDR sumExp,
                              GM_ADDR predicted, GM_ADDR targetMask, GM_ADDR maskedTarget, GM_ADDR logits,
                              GM_ADDR sumLogits, GM_ADDR workspace, const FusedLinearOnlineMaxSumTilingData &td) {
    td_ = &td;
    rows_ = td.rows;
    hidden_ = td.hidden;
    vocab_ = td.vocab;
    vocabStart_ = td.vocabStart;
    rangeLen_ = td.vocabEnd - td.vocabStart;
    mTile_ = td.mTile;
    nTile_ = td.nTile;
    chunkRows_ = td.chunkRows;
    const int64_t block = GetBlockIdx(), groups = (rows_ + 7) / 8;
    vocabGroup_ = block / td.rowGroups;
    int64_t g0, g1, t0, t1;
    BlockShare(groups, block % td.rowGroups, td.rowGroups, g0, g1);
    rowBegin_ = g0 * 8;
    rowEnd_ = Min64(g1 * 8, rows_);
    BlockShare((vocab_ + nTile_ - 1) / nTile_, vocabGroup_, td.vocabGroups, t0, t1);
    vocabBegin_ = t0 * nTile_;
    vocabEnd_ = Min64(t1 * nTile_, vocab_);
    BlockShare(groups, block, GetBlockNum(), g0, g1);
    mergeBegin_ = g0 * 8;
    mergeEnd_ = Min64(g1 * 8, rows_);

    inputGm_.SetGlobalBuffer((__gm__ T *)input, uint64_t(rows_) * hidden_);
    weightGm_.SetGlobalBuffer((__gm__ T *)weight, uint64_t(vocab_) * hidden_);
    targetGm_.SetGlobalBuffer((__gm__ G *)target, rows_);
    maxGm_.SetGlobalBuffer((__gm__ float *)logitsMax, rows_);
    sumExpGm_.SetGlobalBuffer((__gm__ float *)sumExp, rows_);
    predGm_.SetGlobalBuffer((__gm__ float *)predicted, rows_);
    maskGm_.SetGlobalBuffer((__gm__ uint8_t *)targetMask, (rows_ + 7) / 8);
    maskedGm_.SetGlobalBuffer((__gm__ G *)maskedTarget, rows_);
    sumLogitsGm_.SetGlobalBuffer((__gm__ float *)sumLogits, rows_);
    if (td.returnLogits != 0) {
      tileGm_.SetGlobalBuffer((__gm__ float *)logits, uint64_t(rows_) * vocab_);
      ldc_ = vocab_;
    } else {
      const uint64_t tileElems = uint64_t(mTile_) * nTile_;
      tileGm_.SetGlobalBuffer((__gm__ float *)GetUserWorkspace(workspace) + block * tileElems, tileElems);
      ldc_ = nTile_;
    }
    statsGm_.SetGlobalBuffer((__gm__ float *)(GetUserWorkspace(workspace) + td.statsOffset),
                             uint64_t(td.vocabGroups) * kFlomsStats * td.statsPitch);
    tileAtRows_ = td.returnLogits != 0;

    // Same sizes as FlomsUbFixed / FlomsUbPerChunkRow in the host tiling.
    const uint32_t pitch = UbBytes(nTile_, 4) / 4;
    pipe.InitBuffer(chunkQ_, 2, chunkRows_ * pitch * 4);
    pipe.InitBuffer(expBuf_, pitch * 4);
    pipe.InitBuffer(reduceTmp_, pitch * 4);
    pipe.InitBuffer(reduceOut_, 3 * kUbAlign);
    pipe.InitBuffer(state_, 8 * mTile_ * 4);
    pipe.InitBuffer(localTarget_, mTile_ * 4);
    pipe.InitBuffer(targetQ_, 1, UbBytes(mTile_, sizeof(G)));
    pipe.InitBuffer(maskedQ_, 1, UbBytes(mTile_, sizeof(G)));
    pipe.InitBuffer(maskQ_, 1, UbBytes(mTile_ / 8, 1));
  }

  __aicore__ inline void Process() {
    for (int64_t r0 = rowBegin_; r0 < rowEnd_; r0 += mTile_) {
      const uint32_t mt = static_cast<uint32_t>(Min64(rowEnd_ - r0, mTile_));
      // target_mask and masked_target: from the blocks of vocabulary group 0 only.
      Targets(r0, mt, vocabGroup_ == 0);
      StartRows(mt);
      mm.SetTensorA(inputGm_[r0 * hidden_]);
      for (int64_t v0 = vocabBegin_; v0 < vocabEnd_; v0 += nTile_) {
        const uint32_t n = static_cast<uint32_t>(Min64(vocabEnd_ - v0, nTile_));
        const GlobalTensor<float> tile = tileAtRows_ ? tileGm_[r0 * vocab_ + v0] : tileGm_;
        mm.SetTensorB(weightGm_[v0 * hidden_], true);
        mm.SetSingleShape(mt, n, static_cast<int32_t>(hidden_));
        mm.IterateAll(tile);
        FoldTile(tile, mt, v0, n);
      }
      if (td_->vocabGroups > 1) {
        StoreStats(r0, mt);
      } else {
        FinishRows(r0, mt);
      }
    }
    mm.End();
    if (td_->vocabGroups == 1) return;
    // Every group's statistics of every row have landed.
    SyncAll();
    for (int64_t r0 = mergeBegin_; r0 < mergeEnd_; r0 += mTile_)
      Merge(r0, static_cast<uint32_t>(Min64(mergeEnd_ - r0, mTile_)));
  }

 private:
  // The per-row state of a row tile: eight fp32 arrays of mTile_ elements in state_.
  enum StateArray : uint32_t { kRunMax, kNewMax, kSumExp, kSumLogits, kTileSumExp, kTileSum, kPick, kFactor };

  __aicore__ inline LocalTensor<float> State(uint32_t a) {
    // kRunMax and kNewMax trade places after every vocabulary tile (swap_ toggles).
    if (a == kRunMax || a == kNewMax) a = (a ^ swap_);
    return state_.Get<float>()[a * mTile_];
  }

  // Each row's local target for rows [r0, r0 + mt) (its column in the weight, -1 when masked or
  // past the weight) and, with `write`, their masked_target and target_mask.
  __aicore__ inline void Targets(int64_t r0, uint32_t mt, bool write) {
    LocalTensor<G> tgt = targetQ_.AllocTensor<G>();
    CopyIn(tgt, targetGm_[r0], mt);
    targetQ_.EnQue(tgt);
    tgt = targetQ_.DeQue<G>();
    OrderPipes<HardEvent::MTE2_S>(&pipe);
    LocalTensor<G> masked;
    LocalTensor<uint8_t> mask;
    if (write) {
      masked = maskedQ_.AllocTensor<G>();
      mask = maskQ_.AllocTensor<uint8_t>();
    }
    LocalTensor<int32_t> local = localTarget_.Get<int32_t>();
    uint32_t bits = 0;
    for (uint32_t i = 0; i < mt; ++i) {
      const int64_t t = static_cast<int64_t>(tgt.GetValue(i)) - vocabStart_;
      const bool inside = t >= 0 && t < rangeLen_;
      local.SetValue(i, inside && t < vocab_ ? static_cast<int32_t>(t) : -1);
      if (!write) continue;
      masked.SetValue(i, static_cast<G>(inside ? t : 0));
      bits |= (inside ? 0u : 1u) << (i % 8);
      if (i % 8 == 7 || i + 1 == mt) {
        // Only the last row tile of BT can end inside a byte: its rows past BT are pad bits, set.
        if (i % 8 != 7) bits |= (0xFFu << (i % 8 + 1)) & 0xFFu;
        mask.SetValue(i / 8, static_cast<uint8_t>(bits));
        bits = 0;
      }
    }
    targetQ_.FreeTensor(tgt);
    if (!write) return;
    maskedQ_.EnQue(masked);
    maskQ_.EnQue(mask);
    masked = maskedQ_.DeQue<G>();
    mask = maskQ_.DeQue<uint8_t>();
    OrderPipes<HardEvent::S_MTE3>(&pipe);
    CopyOut(maskedGm_[r0], masked, mt);
    CopyOut(maskGm_[r0 / 8], mask, (mt + 7) / 8);
    maskedQ_.FreeTensor(masked);
    maskQ_.FreeTensor(mask);
  }

  __aicore__ inline void StartRows(uint32_t mt) {
    // The previous row tile's results have left for GM before the state is reset.
    OrderPipes<HardEvent::MTE3_V>(&pipe);
    Duplicate(State(kRunMax), kLowest, mt);
    Duplicate(State(kSumExp), 0.0f, mt);
    Duplicate(State(kSumLogits), 0.0f, mt);
    Duplicate(State(kPick), 0.0f, mt);
  }

  // Folds the logits tile [mt, n] (columns v0.. of the shard; row stride ldc_ in GM) into the
  // row state, chunkRows_ rows at a time.
  __aicore__ inline void FoldTile(const GlobalTensor<float> &tile, uint32_t mt, int64_t v0, uint32_t n) {
    const uint32_t pitch = UbBytes(n, 4) / 4;
    for (uint32_t c0 = 0; c0 < mt; c0 += chunkRows_) {
      const uint32_t cr = mt - c0 < chunkRows_ ? mt - c0 : chunkRows_;
      LocalTensor<float> z = chunkQ_.AllocTensor<float>();
      // Rows of n floats, ldc_ apart in GM, land 32-byte aligned in UB, `pitch` apart: any n and
      // V (e.g. 50257).
      DataCopyPad(z, tile[uint64_t(c0) * ldc_], DataCopyExtParams(cr, n * 4, uint32_t(ldc_ - n) * 4, 0, 0),
                  DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
      chunkQ_.EnQue(z);
      z = chunkQ_.DeQue<float>();
      for (uint32_t i = 0; i < cr; ++i) FoldRow(z[i * pitch], c0 + i, v0, n);
      chunkQ_.FreeTensor(z);
    }
    // sum = sum * exp(old max - new max) + tile sum (relative to the new max), for all rows at once.
    OrderPipes<HardEvent::S_V>(&pipe);
    LocalTensor<float> factor = State(kFactor), sumExp = State(kSumExp), sumLogits = State(kSumLogits);
    Sub(factor, State(kRunMax), State(kNewMax), mt);
    Exp(factor, factor, mt);
    Mul(sumExp, sumExp, factor, mt);
    Add(sumExp, sumExp, State(kTileSumExp), mt);
    Add(sumLogits, sumLogits, State(kTileSum), mt);
    swap_ ^= 1u;
  }

  // Row i of the row tile: its tile max, new running max, Σ exp(z - new max), Σ z and, when its
  // target column falls in this tile, the target logit.
  __aicore__ inline void FoldRow(const LocalTensor<float> &row, uint32_t i, int64_t v0, uint32_t n) {
    LocalTensor<float> red = reduceOut_.Get<float>(), tmp = reduceTmp_.Get<float>();
    ReduceMax(red[kRedMax], row, tmp, n);
    OrderPipes<HardEvent::V_S>(&pipe);
    const float tileMax = red.GetValue(kRedMax), oldMax = State(kRunMax).GetValue(i);
    const float newMax = tileMax > oldMax ? tileMax : oldMax;
    State(kNewMax).SetValue(i, newMax);
    const int64_t col = static_cast<int64_t>(localTarget_.Get<int32_t>().GetValue(i)) - v0;
    if (col >= 0 && col < n) State(kPick).SetValue(i, row.GetValue(static_cast<uint32_t>(col)));
    OrderPipes<HardEvent::S_V>(&pipe);
    LocalTensor<float> e = expBuf_.Get<float>();
    Adds(e, row, -newMax, n);
    Exp(e, e, n);
    ReduceSum(red[kRedSumExp], e, tmp, n);
    ReduceSum(red[kRedSum], row, tmp, n);
    OrderPipes<HardEvent::V_S>(&pipe);
    State(kTileSumExp).SetValue(i, red.GetValue(kRedSumExp));
    State(kTileSum).SetValue(i, red.GetValue(kRedSum));
  }

  // predicted = target logit - max (0 when masked); the four per-row outputs of the row tile.
  __aicore__ inline void FinishRows(int64_t r0, uint32_t mt) {
    WriteRows(r0, mt, State(kRunMax), State(kSumExp), State(kSumLogits), State(kPick));
  }

  // The outputs of rows [r0, r0 + n) from their max, sum of exps, sum of logits and target logit
  // (`pick`, overwritten with the predicted logit: minus the max, 0 without a local target).
  __aicore__ inline void WriteRows(int64_t r0, uint32_t n, const LocalTensor<float> &mx,
                                   const LocalTensor<float> &sum, const LocalTensor<float> &logits,
                                   const LocalTensor<float> &pick) {
    Sub(pick, pick, mx, n);
    OrderPipes<HardEvent::V_S>(&pipe);
    LocalTensor<int32_t> local = localTarget_.Get<int32_t>();
    for (uint32_t i = 0; i < n; ++i)
      if (local.GetValue(i) < 0) pick.SetValue(i, 0.0f);
    OrderPipes<HardEvent::S_MTE3>(&pipe);
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    CopyOut(maxGm_[r0], mx, n);
    CopyOut(sumExpGm_[r0], sum, n);
    CopyOut(predGm_[r0], pick, n);
    CopyOut(sumLogitsGm_[r0], logits, n);
  }

  // Statistic k of vocabulary group j, rows from r0.
  __aicore__ inline GlobalTensor<float> Stat(int64_t j, uint32_t k, int64_t r0) {
    return statsGm_[(uint64_t(j) * kFlomsStats + k) * td_->statsPitch + r0];
  }

  // Rows [r0, r0 + mt)'s statistics over this block's vocabulary group, to workspace: the max, the
  // sum of exps relative to it, the sum of logits, the target logit (0 when not in the group).
  __aicore__ inline void StoreStats(int64_t r0, uint32_t mt) {
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    CopyOut(Stat(vocabGroup_, kStatMax, r0), State(kRunMax), mt);
    CopyOut(Stat(vocabGroup_, kStatSumExp, r0), State(kSumExp), mt);
    CopyOut(Stat(vocabGroup_, kStatSum, r0), State(kSumLogits), mt);
    CopyOut(Stat(vocabGroup_, kStatPick, r0), State(kPick), mt);
  }

  // Rows [r0, r0 + n): the groups' statistics merged in group order into the four outputs (there
  // are at least two groups). The state arrays serve as scratch (no row tile is in flight).
  __aicore__ inline void Merge(int64_t r0, uint32_t n) {
    Targets(r0, n, false);
    const LocalTensor<float> st = state_.Get<float>();
    const LocalTensor<float> mx = st[0], sum = st[mTile_], logits = st[2 * mTile_], pick = st[3 * mTile_];
    const LocalTensor<float> x = st[4 * mTile_], y = st[5 * mTile_], newMax = st[6 * mTile_], f = st[7 * mTile_];
    // The previous rows' outputs have left for GM before the scratch is loaded again.
    OrderPipes<HardEvent::MTE3_MTE2>(&pipe);
    OrderPipes<HardEvent::V_MTE2>(&pipe);
    CopyIn(mx, Stat(0, kStatMax, r0), n);
    CopyIn(sum, Stat(0, kStatSumExp, r0), n);
    CopyIn(logits, Stat(0, kStatSum, r0), n);
    CopyIn(pick, Stat(0, kStatPick, r0), n);
    for (int64_t j = 1; j < td_->vocabGroups; ++j) {
      LoadStats(x, y, j, kStatMax, kStatSumExp, r0, n);
      Max(newMax, mx, x, n);
      Sub(f, mx, newMax, n);
      Exp(f, f, n);
      Mul(sum, sum, f, n);
      Sub(f, x, newMax, n);
      Exp(f, f, n);
      Mul(y, y, f, n);
      Add(sum, sum, y, n);
      Adds(mx, newMax, 0.0f, n);
      LoadStats(x, y, j, kStatSum, kStatPick, r0, n);
      Add(logits, logits, x, n);
      Add(pick, pick, y, n);
    }
    WriteRows(r0, n, mx, sum, logits, pick);
  }

  // x and y = statistics a and b of group j for rows [r0, r0 + n), once the vector unit has read
  // what they held, ready for it.
  __aicore__ inline void LoadStats(const LocalTensor<float> &x, const LocalTensor<float> &y, int64_t j, uint32_t a,
                                   uint32_t b, int64_t r0, uint32_t n) {
    OrderPipes<HardEvent::V_MTE2>(&pipe);
    CopyIn(x, Stat(j, a, r0), n);
    CopyIn(y, Stat(j, b, r0), n);
    OrderPipes<HardEvent::MTE2_V>(&pipe);
  }

  TQue<QuePosition::VECIN, 2> chunkQ_;
  TQue<QuePosition::VECIN, 1> targetQ_;
  TQue<QuePosition::VECOUT, 1> maskedQ_, maskQ_;
  TBuf<TPosition::VECCALC> expBuf_, reduceTmp_, reduceOut_, state_, localTarget_;

  GlobalTensor<T> inputGm_, weightGm_;
  GlobalTensor<G> targetGm_, maskedGm_;
  GlobalTensor<float> maxGm_, sumExpGm_, predGm_, sumLogitsGm_, tileGm_, statsGm_;
  GlobalTensor<uint8_t> maskGm_;

  const FusedLinearOnlineMaxSumTilingData *td_ = nullptr;
  int64_t rows_ = 0, hidden_ = 0, vocab_ = 0, vocabStart_ = 0, rangeLen_ = 0, rowBegin_ = 0, rowEnd_ = 0, ldc_ = 0;
  int64_t vocabGroup_ = 0, vocabBegin_ = 0, vocabEnd_ = 0, mergeBegin_ = 0, mergeEnd_ = 0;
  uint32_t mTile_ = 8, nTile_ = 0, chunkRows_ = 1, swap_ = 0;
  bool tileAtRows_ = false;
};

template <typename T, typename G>
__aicore__ inline void Run(GM_ADDR input, GM_ADDR weight, GM_ADDR target, GM_ADDR logitsMax, GM_ADDR sumExp,
                           GM_ADDR predicted, GM_ADDR targetMask, GM_ADDR maskedTarget, GM_ADDR logits,
                           GM_ADDR sumLogits, GM_ADDR workspace, const FusedLinearOnlineMaxSumTilingData &td) {
  FusedLinearOnlineMaxSumKernel<T, G> op;
  // At kernel scope and outside any braces, before any InitBuffer: on the cube core the
  // registration serves the vector core's Matmul requests and returns from here; on the vector
  // core it declares the client those requests go through, which must live until the kernel ends
  // (inside Init it was destroyed at Init's return, ending the cube side's service).
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mm, &td.mm);
  op.Init(input, weight, target, logitsMax, sumExp, predicted, targetMask, maskedTarget, logits, sumLogits, workspace,
          td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void fused_linear_online_max_sum(GM_ADDR input, GM_ADDR weight, GM_ADDR target,
                                                                  GM_ADDR logitsMax, GM_ADDR sumExp,
                                                                  GM_ADDR predicted, GM_ADDR targetMask,
                                                                  GM_ADDR maskedTarget, GM_ADDR logits,
                                                                  GM_ADDR sumLogits, GM_ADDR workspace,
                                                                  GM_ADDR tiling) {
  // One vector core per cube core: each block's vector pass reads the tiles its own Matmul wrote.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(FusedLinearOnlineMaxSumTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (the CANN compiler builds one binary per TILING_KEY_IS); see kCeKey* in
  // common/cross_entropy_common.h: (input dtype, target dtype).
  if (TILING_KEY_IS(1)) {
    Run<float, int32_t>(input, weight, target, logitsMax, sumExp, predicted, targetMask, maskedTarget, logits,
                        sumLogits, workspace, td);
  } else if (TILING_KEY_IS(2)) {
    Run<float, int64_t>(input, weight, target, logitsMax, sumExp, predicted, targetMask, maskedTarget, logits,
                        sumLogits, workspace, td);
  } else if (TILING_KEY_IS(3)) {
    Run<half, int32_t>(input, weight, target, logitsMax, sumExp, predicted, targetMask, maskedTarget, logits,
                       sumLogits, workspace, td);
  } else if (TILING_KEY_IS(4)) {
    Run<half, int64_t>(input, weight, target, logitsMax, sumExp, predicted, targetMask, maskedTarget, logits,
                       sumLogits, workspace, td);
  } else if (TILING_KEY_IS(5)) {
    Run<bfloat16_t, int32_t>(input, weight, target, logitsMax, sumExp, predicted, targetMask, maskedTarget, logits,
                             sumLogits, workspace, td);
  } else if (TILING_KEY_IS(6)) {
    Run<bfloat16_t, int64_t>(input, weight, target, logitsMax, sumExp, predicted, targetMask, maskedTarget, logits,
                             sumLogits, workspace, td);
  }
}
