// fused_linear_cross_entropy_grad_in_forward (ms_ops's own op, no CANN counterpart): the loss of
// the linear + cross-entropy together with both gradients of sum_r loss_r, computed while each
// token block's logits are at hand, so that a backward only scales them by d loss. With
// z = X W^T [N, V], a = label_smoothing, w_r = 0 for ignored tokens and 1 otherwise:
//   loss[r]     = w_r (ln sum_j exp z[r,j] - (1 - a) z[r,t_r] - (a / V) sum_j z[r,j])
//   G[r, j]     = w_r (softmax(z_r)_j - a / V - (1 - a) [j == t_r])
//   input_grad  = G W,   weight_grad = G^T X
// Three products per token (z, G^T X, G W), fp32 accumulation throughout.
//
// The tokens go in blocks of c rows (see the tiling header). Per token block, SyncAll after each
// phase:
//  1. logits: (V tile, row chunk) parts round-robin over the blocks; each part's logits into the
//     workspace by Matmul, then the part's per-row partials: max, exp-sum relative to that max,
//     target logit (0 outside the tile) and logit sum.
//  2. combine: the token block's rows over the blocks; the partials folded in tile order into the row
//     max M and exp-sum S; the loss.
//  3. G: the parts again; each turns its logits into G in place, in the input dtype (the cube
//     multiplies operands of one dtype), over the first bytes of the part.
//  4. products: V tiles round-robin, each weight_grad tile (+)= G[chunk, tile]^T X[chunk] over
//     the chunks in order; (row chunk, H slice) units round-robin the other way round, each
//     input_grad slice = sum over the tiles in order of G[chunk, tile] W[tile, slice].
// Every output element has one writer per token block and a fixed order of contributions: the
// results are bitwise reproducible, and for one chunk size do not depend on the chunks per token
// block (every sum runs over the same parts in the same global order). The loss-grad kernel recomputes the logits and so
// pairs V tiles with rotating row chunks, step by step; here G is stored, so each output region
// gets one owner and the parallelism is not bound to the chunks of a token block.
// fp32 weight_grad accumulates over the token blocks in place. fp16/bf16 weight_grad goes in
// (V tile, row part) units: a part's product over the token block's chunks into an fp32 scratch
// of the block, then a vector pass adds it to the running sum, held as a pair hi + lo of the
// input dtype: hi is the output itself (rounded to nearest from the fp32 sum a = hi + lo + part)
// and lo the rounded remainder a - hi, so the pair carries about twice the dtype's precision (the
// final rounding's error stays far above what the pair loses over the token blocks) at half the
// bytes of an fp32 [V, H] accumulator. fp16/bf16 input_grad rows are rounded from their fp32
// accumulator after their token block.
#include "../../flce_grad_common.h"
#include "fused_linear_cross_entropy_grad_in_forward_tiling_data.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// Start of every row max: the most negative finite float.
constexpr float kLowest = -3.40282347e+38f;
// Offsets (floats) of the reduction results in reduceOut_: one 32-byte block each.
constexpr uint32_t kRedMax = 0, kRedSumExp = 8, kRedSum = 16;
// The per-(tile, row) partials, in their order in the stats workspace and in rowBuf_.
enum Stat : uint32_t { kStatMax, kStatSumExp, kStatPick, kStatSum, kNumStats };

__aicore__ inline int64_t CeilDiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The kernel's GM arguments, in entry order (one per line: GM_ADDR is a macro with a '*').
struct FlceGifArgs {
  GM_ADDR input;
  GM_ADDR weight;
  GM_ADDR target;
  GM_ADDR loss;
  GM_ADDR inputGrad;
  GM_ADDR weightGrad;
  GM_ADDR workspace;
};

// One (V tile, row chunk) part of a token block: vocabulary entries [n0, n0 + cols), the block's
// rows [m0, m0 + rows), its logits (and then G) at float `offset` of the logits workspace, row
// stride cols.
struct Part {
  int64_t tile, n0, m0;
  int32_t cols, rows;
  uint64_t offset;
};

// T: dtype of input, weight and the gradients; TI: dtype of target.
template <typename T, typename TI>
class FlceGifKernel {
  static constexpr bool kF32 = AscendC::IsSameType<T, float>::value;
  // T elements per float: G of a part starts at T offset offset * kGScale.
  static constexpr uint64_t kGScale = 4 / sizeof(T);
  using ND = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using NDTrans = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;
  using Acc = MatmulType<TPosition::GM, CubeFormat::ND, float>;
  using TilingData = FusedLinearCrossEntropyGradInForwardTilingData;

 public:
  __aicore__ inline FlceGifKernel() {}

  // Registered by Run with REGIST_MATMUL_OBJ before Init's InitBuffer calls.
  TPipe pipe;
  Matmul<ND, NDTrans, Acc> mmLogits;  // logits of a part = X[chunk] W[tile]^T
  Matmul<NDTrans, ND, Acc> mmWeight;  // weight_grad tile or part (+)= G[chunk, tile]^T X[chunk]
  Matmul<ND, ND, Acc> mmInput;        // input_grad slice (+)= G[chunk, tile] W[tile, slice]

  __aicore__ inline void Init(const FlceGifArgs &a, const TilingData &td) {
    td_ = &td;
    rows_ = td.rows;
    hidden_ = td.hidden;
    vocab_ = td.vocab;
    mt_ = td.chunkRows;
    nt_ = td.tileCols;
    tileRows_ = td.tileRows;
    block_ = GetBlockIdx();
    blocks_ = GetBlockNum();
    const uint64_t xy = uint64_t(rows_) * hidden_, wv = uint64_t(vocab_) * hidden_;
    xGm_.SetGlobalBuffer((__gm__ T *)a.input, xy);
    wGm_.SetGlobalBuffer((__gm__ T *)a.weight, wv);
    targetGm_.SetGlobalBuffer((__gm__ TI *)a.target, rows_);
    lossGm_.SetGlobalBuffer((__gm__ float *)a.loss, rows_);
    inputGradGm_.SetGlobalBuffer((__gm__ T *)a.inputGrad, xy);
    weightGradGm_.SetGlobalBuffer((__gm__ T *)a.weightGrad, wv);

    GM_ADDR user = GetUserWorkspace(a.workspace);
    const uint64_t logits = uint64_t(tileRows_) * vocab_;
    logitsGm_.SetGlobalBuffer((__gm__ float *)(user + td.logitsOffset), logits);
    gGm_.SetGlobalBuffer((__gm__ T *)(user + td.logitsOffset), logits * kGScale);
    statsGm_.SetGlobalBuffer((__gm__ float *)(user + td.statsOffset), uint64_t(td.tiles) * kNumStats * tileRows_);
    rowStatsGm_.SetGlobalBuffer((__gm__ float *)(user + td.rowStatsOffset), 2 * uint64_t(tileRows_));
    if constexpr (kF32) {
      inputAccGm_.SetGlobalBuffer((__gm__ float *)a.inputGrad, xy);
      weightAccGm_.SetGlobalBuffer((__gm__ float *)a.weightGrad, wv);
    } else {
      inputAccGm_.SetGlobalBuffer((__gm__ float *)(user + td.inputAccOffset), uint64_t(tileRows_) * hidden_);
      const uint64_t part = uint64_t(td.weightPartRows) * hidden_;
      weightAccGm_.SetGlobalBuffer((__gm__ float *)(user + td.weightAccOffset) + block_ * part, part);
      if (td_->tokenBlocks > 1) weightLoGm_.SetGlobalBuffer((__gm__ T *)(user + td.weightLoOffset), wv);
    }

    // Same sizes as FlceGifUbFixed and ubChunkBytes in the host tiling.
    rowPitch_ = UbBytes(mt_, 4) / 4;
    pipe.InitBuffer(inQ_, 2, td.ubChunkBytes);
    pipe.InitBuffer(outQ_, 2, td.ubChunkBytes);
    pipe.InitBuffer(rowBuf_, kNumStats * rowPitch_ * 4);
    pipe.InitBuffer(targetBuf_, UbBytes(mt_, sizeof(TI)));
    pipe.InitBuffer(tmpBuf_, UbBytes(mt_ > nt_ ? mt_ : nt_, 4));
    pipe.InitBuffer(reduceTmp_, UbBytes(nt_, 4));
    pipe.InitBuffer(reduceOut_, 3 * kUbAlign);
  }

  __aicore__ inline void Process() {
    if (rows_ == 0) {
      // No tokens: weight_grad is all zeros (loss and input_grad are empty).
      int64_t v0, v1;
      BlockShare(vocab_, block_, blocks_, v0, v1);
      ZeroGm(weightGradGm_[v0 * hidden_], uint64_t(v1 - v0) * hidden_, outQ_, td_->ubChunkBytes);
      return;
    }
    for (int64_t kb = 0; kb < td_->tokenBlocks; ++kb) {
      const int64_t b0 = kb * td_->blockRows, rows = Min64(td_->blockRows, rows_ - b0);
      // The previous token block's input_grad rows are complete since its last SyncAll, and its
      // accumulator is not written again before this block's products.
      if constexpr (!kF32) {
        if (kb > 0) RoundInputRows(b0 - td_->blockRows, td_->blockRows);
      }
      Logits(b0, rows);
      EndPhase();
      Combine(b0, rows);
      EndPhase();
      BuildG(b0, rows);
      EndPhase();
      Products(kb, b0, rows);
      EndPhase();
    }
    if constexpr (!kF32) {
      const int64_t last = (td_->tokenBlocks - 1) * td_->blockRows;
      RoundInputRows(last, rows_ - last);
    }
  }

 private:
  // Every phase reuses UB buffers and reads what other blocks wrote: all this core issued has
  // completed before the blocks meet.
  __aicore__ inline void EndPhase() {
    PipeBarrier<PIPE_ALL>();
    SyncAll();
  }

  __aicore__ inline Part MakePart(int64_t tile, int64_t chunk, int64_t rows) const {
    Part p;
    p.tile = tile;
    p.n0 = tile * nt_;
    p.m0 = chunk * mt_;
    p.cols = static_cast<int32_t>(Min64(nt_, vocab_ - p.n0));
    p.rows = static_cast<int32_t>(Min64(mt_, rows - p.m0));
    p.offset = uint64_t(tile) * tileRows_ * nt_ + uint64_t(p.m0) * p.cols;
    return p;
  }

  // Targets of token rows [r, r + n) into targetBuf_ for the scalar unit (after the scalar reads
  // of the previous ones).
  __aicore__ inline void LoadTargets(int64_t r, int32_t n) {
    OrderPipes<HardEvent::S_MTE2>(&pipe);
    CopyIn(targetBuf_.Get<TI>(), targetGm_[r], n);
    OrderPipes<HardEvent::MTE2_S>(&pipe);
  }

  __aicore__ inline LocalTensor<float> RowArray(Stat s) { return rowBuf_.Get<float>()[s * rowPitch_]; }

  // Phase 1.
  __aicore__ inline void Logits(int64_t b0, int64_t rows) {
    const int64_t chunks = CeilDiv64(rows, mt_);
    const int32_t h = static_cast<int32_t>(hidden_);
    for (int64_t u = block_; u < td_->tiles * chunks; u += blocks_) {
      const Part p = MakePart(u / chunks, u % chunks, rows);
      const GlobalTensor<float> z = logitsGm_[p.offset];
      mmLogits.SetOrgShape(p.rows, p.cols, h);
      mmLogits.SetSingleShape(p.rows, p.cols, h);
      mmLogits.SetTensorA(xGm_[(b0 + p.m0) * hidden_]);
      mmLogits.SetTensorB(wGm_[p.n0 * hidden_], true);
      mmLogits.IterateAll(z);
      mmLogits.End();
      PartStats(z, b0, p);
    }
  }

  // The partials of each row of part p (logits z, row stride p.cols) into the stats workspace.
  __aicore__ inline void PartStats(const GlobalTensor<float> &z, int64_t b0, const Part &p) {
    LoadTargets(b0 + p.m0, p.rows);
    const LocalTensor<TI> target = targetBuf_.Get<TI>();
    const LocalTensor<float> red = reduceOut_.Get<float>(), tmp = reduceTmp_.Get<float>(), e = tmpBuf_.Get<float>();
    const LocalTensor<float> rowMax = RowArray(kStatMax), sumExp = RowArray(kStatSumExp), pick = RowArray(kStatPick),
                             sum = RowArray(kStatSum);
    const uint32_t pitch = UbBytes(p.cols, 4) / 4;
    for (int32_t r0 = 0; r0 < p.rows; r0 += int32_t(td_->batchRows)) {
      const int32_t nb = static_cast<int32_t>(Min64(td_->batchRows, p.rows - r0));
      LocalTensor<float> in = inQ_.template AllocTensor<float>();
      DataCopyPad(in, z[uint64_t(r0) * p.cols], DataCopyExtParams(uint16_t(nb), uint32_t(p.cols) * 4, 0, 0, 0),
                  DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
      inQ_.EnQue(in);
      in = inQ_.template DeQue<float>();
      for (int32_t i = 0; i < nb; ++i) {
        const int32_t r = r0 + i;
        const LocalTensor<float> row = in[i * pitch];
        ReduceMax(red[kRedMax], row, tmp, p.cols);
        OrderPipes<HardEvent::V_S>(&pipe);
        const float m = red.GetValue(kRedMax);
        const int64_t j = static_cast<int64_t>(target.GetValue(r)) - p.n0;
        rowMax.SetValue(r, m);
        pick.SetValue(r, j >= 0 && j < p.cols ? row.GetValue(static_cast<uint32_t>(j)) : 0.0f);
        OrderPipes<HardEvent::S_V>(&pipe);
        Adds(e, row, -m, p.cols);
        Exp(e, e, p.cols);
        ReduceSum(red[kRedSumExp], e, tmp, p.cols);
        ReduceSum(red[kRedSum], row, tmp, p.cols);
        OrderPipes<HardEvent::V_S>(&pipe);
        sumExp.SetValue(r, red.GetValue(kRedSumExp));
        sum.SetValue(r, red.GetValue(kRedSum));
      }
      inQ_.FreeTensor(in);
    }
    OrderPipes<HardEvent::S_MTE3>(&pipe);
    // The four partial rows, tileRows apart in GM.
    const uint32_t gap = (rowPitch_ * 4 - UbBytes(p.rows, 4)) / kUbAlign;
    DataCopyPad(statsGm_[uint64_t(p.tile) * kNumStats * tileRows_ + p.m0], rowBuf_.Get<float>(),
                DataCopyExtParams(kNumStats, uint32_t(p.rows) * 4, gap, uint32_t(tileRows_ - p.rows) * 4, 0));
    // The next part's scalar writes wait for this copy.
    OrderPipes<HardEvent::MTE3_S>(&pipe);
  }

  // Phase 2.
  __aicore__ inline void Combine(int64_t b0, int64_t rows) {
    int64_t r0, r1;
    BlockShare(rows, block_, blocks_, r0, r1);
    for (int64_t r = r0; r < r1; r += mt_) CombineRows(b0, r, static_cast<int32_t>(Min64(mt_, r1 - r)));
  }

  // Rows [r, r + n) of the token block at b0: M, S and the loss.
  __aicore__ inline void CombineRows(int64_t b0, int64_t r, int32_t n) {
    const LocalTensor<float> rowMax = RowArray(kStatMax), sumExp = RowArray(kStatSumExp), pick = RowArray(kStatPick),
                             sum = RowArray(kStatSum), tmp = tmpBuf_.Get<float>();
    const int64_t tiles = td_->tiles;
    // The previous rows' M and S have left for GM.
    OrderPipes<HardEvent::MTE3_V>(&pipe);
    Duplicate(rowMax, kLowest, n);
    for (int64_t t = 0; t < tiles; ++t) {
      LocalTensor<float> in = inQ_.template AllocTensor<float>();
      CopyIn(in, statsGm_[uint64_t(t * kNumStats + kStatMax) * tileRows_ + r], n);
      inQ_.EnQue(in);
      in = inQ_.template DeQue<float>();
      Max(rowMax, rowMax, in, n);
      inQ_.FreeTensor(in);
    }
    Duplicate(sumExp, 0.0f, n);
    Duplicate(pick, 0.0f, n);
    Duplicate(sum, 0.0f, n);
    const uint32_t q = UbBytes(n, 4) / 4;
    for (int64_t t = 0; t < tiles; ++t) {
      LocalTensor<float> in = inQ_.template AllocTensor<float>();
      DataCopyPad(in, statsGm_[uint64_t(t) * kNumStats * tileRows_ + r],
                  DataCopyExtParams(kNumStats, uint32_t(n) * 4, uint32_t(tileRows_ - n) * 4, 0, 0),
                  DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
      inQ_.EnQue(in);
      in = inQ_.template DeQue<float>();
      // S += s_t exp(m_t - M); the target logit is in one tile, the others add zeros.
      Sub(tmp, in[kStatMax * q], rowMax, n);
      Exp(tmp, tmp, n);
      Mul(tmp, tmp, in[kStatSumExp * q], n);
      Add(sumExp, sumExp, tmp, n);
      Add(pick, pick, in[kStatPick * q], n);
      Add(sum, sum, in[kStatSum * q], n);
      inQ_.FreeTensor(in);
    }
    LocalTensor<float> loss = outQ_.template AllocTensor<float>();
    Ln(loss, sumExp, n);
    Add(loss, loss, rowMax, n);
    Muls(pick, pick, -td_->targetWeight, n);
    Add(loss, loss, pick, n);
    Muls(sum, sum, -td_->smoothPerClass, n);
    Add(loss, loss, sum, n);
    LoadTargets(b0 + r, n);
    OrderPipes<HardEvent::V_S>(&pipe);
    const LocalTensor<TI> target = targetBuf_.Get<TI>();
    for (int32_t i = 0; i < n; ++i)
      if (static_cast<int64_t>(target.GetValue(i)) == td_->ignoreIndex) loss.SetValue(i, 0.0f);
    outQ_.EnQue(loss);
    loss = outQ_.template DeQue<float>();
    OrderPipes<HardEvent::S_MTE3>(&pipe);
    CopyOut(lossGm_[b0 + r], loss, n);
    outQ_.FreeTensor(loss);
    CopyOut(rowStatsGm_[r], rowMax, n);
    CopyOut(rowStatsGm_[tileRows_ + r], sumExp, n);
  }

  // Phase 3.
  __aicore__ inline void BuildG(int64_t b0, int64_t rows) {
    const int64_t chunks = CeilDiv64(rows, mt_);
    for (int64_t u = block_; u < td_->tiles * chunks; u += blocks_) PartG(b0, MakePart(u / chunks, u % chunks, rows));
  }

  // G of part p over its logits, batchRows rows per UB pass. A pass writes T rows no further
  // into the part than the fp32 rows it (and the passes before it) read.
  __aicore__ inline void PartG(int64_t b0, const Part &p) {
    OrderPipes<HardEvent::S_MTE2>(&pipe);
    CopyIn(targetBuf_.Get<TI>(), targetGm_[b0 + p.m0], p.rows);
    CopyIn(RowArray(kStatMax), rowStatsGm_[p.m0], p.rows);
    CopyIn(RowArray(kStatSumExp), rowStatsGm_[tileRows_ + p.m0], p.rows);
    OrderPipes<HardEvent::MTE2_S>(&pipe);
    const LocalTensor<TI> target = targetBuf_.Get<TI>();
    const LocalTensor<float> rowMax = RowArray(kStatMax), sumExp = RowArray(kStatSumExp);
    const uint32_t inPitch = UbBytes(p.cols, 4) / 4, outPitch = UbBytes(p.cols, sizeof(T)) / sizeof(T);
    const float smooth = td_->smoothPerClass;
    for (int32_t r0 = 0; r0 < p.rows; r0 += int32_t(td_->batchRows)) {
      const int32_t nb = static_cast<int32_t>(Min64(td_->batchRows, p.rows - r0));
      LocalTensor<float> in = inQ_.template AllocTensor<float>();
      DataCopyPad(in, logitsGm_[p.offset + uint64_t(r0) * p.cols],
                  DataCopyExtParams(uint16_t(nb), uint32_t(p.cols) * 4, 0, 0, 0),
                  DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
      inQ_.EnQue(in);
      in = inQ_.template DeQue<float>();
      LocalTensor<T> out = outQ_.template AllocTensor<T>();
      // fp32 writes G straight into the out buffer; fp16/bf16 build it in place and cast.
      const LocalTensor<float> g = kF32 ? out.template ReinterpretCast<float>() : in;
      for (int32_t i = 0; i < nb; ++i) {
        const int32_t r = r0 + i;
        const LocalTensor<float> x = in[i * inPitch], y = g[i * inPitch];
        if (static_cast<int64_t>(target.GetValue(r)) == td_->ignoreIndex) {
          Duplicate(y, 0.0f, p.cols);
          continue;
        }
        Adds(y, x, -rowMax.GetValue(r), p.cols);
        Exp(y, y, p.cols);
        Muls(y, y, 1.0f / sumExp.GetValue(r), p.cols);
        if (smooth != 0.0f) Adds(y, y, -smooth, p.cols);
      }
      // The target column of each counted row whose target lies in this tile: a scalar fix-up.
      OrderPipes<HardEvent::V_S>(&pipe);
      for (int32_t i = 0; i < nb; ++i) {
        const int64_t t = static_cast<int64_t>(target.GetValue(r0 + i));
        const int64_t j = t - p.n0;
        if (t == td_->ignoreIndex || j < 0 || j >= p.cols) continue;
        const uint32_t at = i * inPitch + uint32_t(j);
        g.SetValue(at, g.GetValue(at) - td_->targetWeight);
      }
      OrderPipes<HardEvent::S_V>(&pipe);
      if constexpr (!kF32) {
        for (int32_t i = 0; i < nb; ++i) Cast(out[i * outPitch], in[i * inPitch], RoundMode::CAST_RINT, p.cols);
      }
      inQ_.FreeTensor(in);
      outQ_.EnQue(out);
      out = outQ_.template DeQue<T>();
      DataCopyPad(gGm_[p.offset * kGScale + uint64_t(r0) * p.cols], out,
                  DataCopyExtParams(uint16_t(nb), uint32_t(p.cols) * sizeof(T), 0, 0, 0));
      outQ_.FreeTensor(out);
    }
  }

  // Phase 4.
  __aicore__ inline void Products(int64_t kb, int64_t b0, int64_t rows) {
    const int64_t chunks = CeilDiv64(rows, mt_), slices = td_->slices;
    // The cube reads G from GM: the vector cores' copies out must have landed.
    PipeBarrier<PIPE_ALL>();
    if constexpr (kF32) {
      for (int64_t tile = block_; tile < td_->tiles; tile += blocks_) WeightTile(kb, b0, rows, chunks, tile);
    } else {
      const int64_t parts = CeilDiv64(nt_, td_->weightPartRows);
      for (int64_t u = block_; u < td_->tiles * parts; u += blocks_) WeightPart(kb, b0, rows, chunks, u / parts, u % parts);
    }
    // From the last block down, so that blocks with one V tile more get fewer of these.
    for (int64_t u = blocks_ - 1 - block_; u < chunks * slices; u += blocks_) InputSlice(b0, rows, u / slices, u % slices);
  }

  // fp32: weight_grad tile (+)= G[chunk, tile]^T X[chunk] over the chunks, in place.
  __aicore__ inline void WeightTile(int64_t kb, int64_t b0, int64_t rows, int64_t chunks, int64_t tile) {
    const int64_t n0 = tile * nt_;
    const int32_t cols = static_cast<int32_t>(Min64(nt_, vocab_ - n0)), h = static_cast<int32_t>(hidden_);
    const GlobalTensor<float> acc = weightAccGm_[n0 * hidden_];
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const Part p = MakePart(tile, chunk, rows);
      mmWeight.SetOrgShape(cols, h, p.rows);
      mmWeight.SetSingleShape(cols, h, p.rows);
      mmWeight.SetTensorA(gGm_[p.offset * kGScale], true);
      mmWeight.SetTensorB(xGm_[(b0 + p.m0) * hidden_]);
      mmWeight.IterateAll(acc, kb == 0 && chunk == 0 ? 0 : 1);
      mmWeight.End();
    }
  }

  // fp16/bf16: weight_grad rows [n, n + prow) of V tile `tile` (row part `part`): the token block's
  // product into this block's fp32 scratch, then into the hi/lo pair.
  __aicore__ inline void WeightPart(int64_t kb, int64_t b0, int64_t rows, int64_t chunks, int64_t tile, int64_t part) {
    const int64_t rs = td_->weightPartRows, j0 = part * rs;
    const int32_t cols = static_cast<int32_t>(Min64(nt_, vocab_ - tile * nt_)), h = static_cast<int32_t>(hidden_);
    if (j0 >= cols) return;
    const int32_t prow = static_cast<int32_t>(Min64(rs, cols - j0));
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const Part p = MakePart(tile, chunk, rows);
      // A = columns [j0, j0 + prow) of G[chunk, tile] (row stride cols), transposed.
      mmWeight.SetOrgShape(cols, h, p.rows);
      mmWeight.SetSingleShape(prow, h, p.rows);
      mmWeight.SetTensorA(gGm_[p.offset * kGScale + j0], true);
      mmWeight.SetTensorB(xGm_[(b0 + p.m0) * hidden_]);
      mmWeight.IterateAll(weightAccGm_, chunk == 0 ? 0 : 1);
      mmWeight.End();
    }
    AddToPair(kb == 0, kb == td_->tokenBlocks - 1, (tile * nt_ + j0) * hidden_, uint64_t(prow) * hidden_);
  }

  // hi/lo at element e of weight_grad (count elements) += the scratch. The first token block has
  // no pair yet; the last one needs no remainder.
  __aicore__ inline void AddToPair(bool first, bool last, uint64_t e, uint64_t count) {
    const uint32_t n = td_->pairElems;
    for (uint64_t i = 0; i < count; i += n) {
      const uint32_t k = static_cast<uint32_t>(Min64(n, count - i));
      LocalTensor<float> s = inQ_.template AllocTensor<float>();
      CopyIn(s, weightAccGm_[i], k);
      inQ_.EnQue(s);
      LocalTensor<T> pair;
      if (!first) {
        pair = inQ_.template AllocTensor<T>();
        CopyIn(pair, weightGradGm_[e + i], k);
        CopyIn(pair[n], weightLoGm_[e + i], k);
        inQ_.EnQue(pair);
      }
      s = inQ_.template DeQue<float>();
      // Outputs: hi at [0, n), lo at [n, 2n); before them the float lo (first 4k bytes).
      LocalTensor<T> out = outQ_.template AllocTensor<T>();
      LocalTensor<float> t = outQ_.template AllocTensor<float>();
      LocalTensor<float> a = s, spare = t;
      if (!first) {
        pair = inQ_.template DeQue<T>();
        const LocalTensor<float> lo = out.template ReinterpretCast<float>();
        Cast(t, pair, RoundMode::CAST_NONE, k);
        Cast(lo, pair[n], RoundMode::CAST_NONE, k);
        Add(t, t, lo, k);  // exact: lo is at most half an ulp of hi
        Add(t, t, s, k);
        a = t;
        spare = s;
        inQ_.FreeTensor(pair);
      }
      Cast(out, a, RoundMode::CAST_RINT, k);
      if (!last) {
        Cast(spare, out, RoundMode::CAST_NONE, k);
        Sub(spare, a, spare, k);
        Cast(out[n], spare, RoundMode::CAST_RINT, k);
      }
      inQ_.FreeTensor(s);
      outQ_.FreeTensor(t);
      outQ_.EnQue(out);
      out = outQ_.template DeQue<T>();
      CopyOut(weightGradGm_[e + i], out, k);
      if (!last) CopyOut(weightLoGm_[e + i], out[n], k);
      outQ_.FreeTensor(out);
    }
  }

  __aicore__ inline void InputSlice(int64_t b0, int64_t rows, int64_t chunk, int64_t slice) {
    const int64_t m0 = chunk * mt_, h0 = slice * td_->sliceCols;
    const int32_t mrows = static_cast<int32_t>(Min64(mt_, rows - m0)), h = static_cast<int32_t>(hidden_);
    const int32_t hs = static_cast<int32_t>(Min64(td_->sliceCols, hidden_ - h0));
    const GlobalTensor<float> acc = inputAccGm_[((kF32 ? b0 : 0) + m0) * hidden_ + h0];
    for (int64_t tile = 0; tile < td_->tiles; ++tile) {
      const Part p = MakePart(tile, chunk, rows);
      mmInput.SetOrgShape(mrows, h, p.cols);
      mmInput.SetSingleShape(mrows, hs, p.cols);
      mmInput.SetTensorA(gGm_[p.offset * kGScale]);
      mmInput.SetTensorB(wGm_[p.n0 * hidden_ + h0]);
      mmInput.IterateAll(acc, tile == 0 ? 0 : 1);
      mmInput.End();
    }
  }

  // fp16/bf16: the input_grad rows [b0, b0 + rows) of a finished token block, this block's share.
  __aicore__ inline void RoundInputRows(int64_t b0, int64_t rows) {
    int64_t r0, r1;
    BlockShare(rows, block_, blocks_, r0, r1);
    CastGm(inputGradGm_[(b0 + r0) * hidden_], inputAccGm_[r0 * hidden_], uint64_t(r1 - r0) * hidden_, inQ_, outQ_,
           td_->ubChunkBytes);
  }

  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECOUT, 2> outQ_;
  TBuf<TPosition::VECCALC> rowBuf_, targetBuf_, tmpBuf_, reduceTmp_, reduceOut_;

  GlobalTensor<T> xGm_, wGm_, inputGradGm_, weightGradGm_, gGm_, weightLoGm_;
  GlobalTensor<TI> targetGm_;
  GlobalTensor<float> lossGm_, logitsGm_, statsGm_, rowStatsGm_, inputAccGm_, weightAccGm_;

  const TilingData *td_ = nullptr;
  int64_t rows_ = 0, hidden_ = 0, vocab_ = 0, mt_ = 0, nt_ = 0, tileRows_ = 0, block_ = 0, blocks_ = 1;
  uint32_t rowPitch_ = 0;
};

template <typename T, typename TI>
__aicore__ inline void Run(const FlceGifArgs &a, const FusedLinearCrossEntropyGradInForwardTilingData &td) {
  FlceGifKernel<T, TI> op;
  // At kernel scope and outside any braces: on the cube core the registration serves the vector
  // core's Matmul requests and returns from here; on the vector core it declares the client those
  // requests go through, which must live until the kernel ends.
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmLogits, &td.mmLogits, op.mmWeight, &td.mmWeight, op.mmInput,
                    &td.mmInput);
  op.Init(a, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void fused_linear_cross_entropy_grad_in_forward(GM_ADDR input, GM_ADDR weight,
                                                                                GM_ADDR target, GM_ADDR loss,
                                                                                GM_ADDR inputGrad, GM_ADDR weightGrad,
                                                                                GM_ADDR workspace, GM_ADDR tiling) {
  // Cube (Matmul) and vector work in one kernel: one AIV per AIC, so a block is one core pair.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(FusedLinearCrossEntropyGradInForwardTilingData);
  GET_TILING_DATA(td, tiling);
  const FlceGifArgs a{input, weight, target, loss, inputGrad, weightGrad, workspace};
  // Literal keys (the CANN compiler builds one binary per TILING_KEY_IS): the cross-entropy keys
  // 1..6 of (dtype, target dtype), common/cross_entropy_common.h.
  if (TILING_KEY_IS(1)) {
    Run<float, int32_t>(a, td);
  } else if (TILING_KEY_IS(2)) {
    Run<float, int64_t>(a, td);
  } else if (TILING_KEY_IS(3)) {
    Run<half, int32_t>(a, td);
  } else if (TILING_KEY_IS(4)) {
    Run<half, int64_t>(a, td);
  } else if (TILING_KEY_IS(5)) {
    Run<bfloat16_t, int32_t>(a, td);
  } else if (TILING_KEY_IS(6)) {
    Run<bfloat16_t, int64_t>(a, td);
  }
}
