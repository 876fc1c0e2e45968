// fused_linear_cross_entropy_loss_grad (CANN FusedLinearCrossEntropyLossGrad): the backward of the
// vocabulary-parallel linear + cross-entropy on one shard. With p[r,j] the softmax (given, or
// recomputed as exp(X[r].W[j] - logits_max[r]) / sum_exp_logits[r]),
//   G[r,j] = grad[r] * (p[r,j] - (1 - a) [row r unmasked and j == masked_target[r]] - a / Vg),
//   input_grad = G W  [BT, H],   weight_grad = G^T X  [V, H],
// accumulated in fp32 and never holding more than one [mt, nt] tile of G per block.
//
// Schedule (see the tiling header): round r, step s, block b works on V tile r*B + b and BT chunk
// (s + b) mod M; SyncAll after every step. Per (tile, chunk): the logits tile by Matmul into the
// block's workspace, a UB pass that turns it into G (in the input dtype, as the cube needs A and B
// of one dtype), then weight_grad tile += G^T X[chunk] and input_grad rows += G W[tile] by Matmul.
// fp32 accumulates straight into the outputs; fp16/bf16 into fp32 workspace, cast at the end (the
// weight_grad tile at the end of its round, input_grad after the last step).
//
// fp32 with the softmax given takes no G tiles (ProcessDirect): with X' = diag(grad) X,
//   input_grad  = diag(grad) (p W) - s grad[r] colsum(W) - (1 - a) grad[r] W[t_r],
//   weight_grad = p^T X' - s sum_r X'_r - (1 - a) sum_{r: t_r = j} X'_r   (s = a / Vg),
// the target terms over the unmasked rows whose target lies in the shard: each block runs one
// Matmul for its (row group, vocabulary group) of p W (K = V / Kg, into input_grad or a partial)
// and one over its share of the vocabulary (K = BT), straight from the stored softmax; after a
// SyncAll it adds the partials and the rank-one terms to its own rows.
#include "../../flce_grad_common.h"
#include "fused_linear_cross_entropy_loss_grad_tiling_data.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// The kernel's GM arguments, in entry order (one per line: GM_ADDR is a macro with a '*').
struct FlceGradArgs {
  GM_ADDR grad;
  GM_ADDR input;
  GM_ADDR weight;
  GM_ADDR targetMask;
  GM_ADDR maskedTarget;
  GM_ADDR logitsMax;
  GM_ADDR sumExp;
  GM_ADDR softmax;
  GM_ADDR inputGrad;
  GM_ADDR weightGrad;
  GM_ADDR workspace;
};

// T: dtype of input, weight and the gradients; TI: dtype of masked_target; kSoftmax: the
// high-performance mode (softmax given).
template <typename T, typename TI, bool kSoftmax>
class FlceGradKernel {
  static constexpr bool kF32 = AscendC::IsSameType<T, float>::value;
  using ND = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using NDTrans = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;
  using Acc = MatmulType<TPosition::GM, CubeFormat::ND, float>;

 public:
  __aicore__ inline FlceGradKernel() {}

  // Registered by Run with REGIST_MATMUL_OBJ before Init's InitBuffer calls.
  TPipe pipe;
  Matmul<ND, NDTrans, Acc> mmLogits;  // logits = X[chunk] * W[tile]^T
  Matmul<NDTrans, ND, Acc> mmWeight;  // weight_grad tile (+)= G^T * X[chunk]
  Matmul<ND, ND, Acc> mmInput;        // input_grad rows += G * W[tile]
  // ProcessDirect uses mmWeight for weight_grad rows = p^T X' and mmInput for input_grad rows = p W.

  __aicore__ inline void Init(const FlceGradArgs &a, const FusedLinearCrossEntropyLossGradTilingData &td) {
    td_ = &td;
    rows_ = td.rows;
    hidden_ = td.hidden;
    vocab_ = td.vocab;
    mt_ = td.chunkRows;
    nt_ = td.tileCols;
    block_ = GetBlockIdx();
    blocks_ = GetBlockNum();
    const uint64_t xy = uint64_t(rows_) * hidden_, wv = uint64_t(vocab_) * hidden_;
    gradGm_.SetGlobalBuffer((__gm__ float *)a.grad, rows_);
    xGm_.SetGlobalBuffer((__gm__ T *)a.input, xy);
    wGm_.SetGlobalBuffer((__gm__ T *)a.weight, wv);
    maskGm_.SetGlobalBuffer((__gm__ uint8_t *)a.targetMask, (rows_ + 7) / 8);
    targetGm_.SetGlobalBuffer((__gm__ TI *)a.maskedTarget, rows_);
    inputGradGm_.SetGlobalBuffer((__gm__ T *)a.inputGrad, xy);
    weightGradGm_.SetGlobalBuffer((__gm__ T *)a.weightGrad, wv);
    if constexpr (kSoftmax) {
      softmaxGm_.SetGlobalBuffer((__gm__ float *)a.softmax, uint64_t(rows_) * vocab_);
    } else {
      maxGm_.SetGlobalBuffer((__gm__ float *)a.logitsMax, rows_);
      sumGm_.SetGlobalBuffer((__gm__ float *)a.sumExp, rows_);
    }

    GM_ADDR user = GetUserWorkspace(a.workspace);
    GM_ADDR mine = user + td.blockOffset + uint64_t(block_) * td.blockBytes;
    const uint64_t tile = uint64_t(mt_) * nt_;
    if constexpr (kF32) {
      inputAccGm_.SetGlobalBuffer((__gm__ float *)a.inputGrad, xy);
    } else {
      inputAccGm_.SetGlobalBuffer((__gm__ float *)(user + td.inputAccOffset), xy);
      weightAccGm_.SetGlobalBuffer((__gm__ float *)(mine + td.weightAccOffset), uint64_t(nt_) * hidden_);
    }
    if constexpr (!kSoftmax) logitsGm_.SetGlobalBuffer((__gm__ float *)(mine + td.logitsOffset), tile);
    gGm_.SetGlobalBuffer((__gm__ T *)(mine + td.gOffset), tile);
    if constexpr (kDirect) {
      scaledGm_.SetGlobalBuffer((__gm__ float *)(user + td.scaledInputOffset), xy);
      partGm_.SetGlobalBuffer((__gm__ float *)(user + td.partialsOffset), uint64_t(blocks_) * 2 * hidden_);
      inputPartGm_.SetGlobalBuffer((__gm__ float *)(user + td.inputPartialsOffset),
                                   uint64_t(td.inputVocabGroups - 1) * xy);
    }

    // Same sizes as FlceGradUbRowData and ubChunkBytes in the host tiling.
    pipe.InitBuffer(inQ_, 2, td.ubChunkBytes);
    pipe.InitBuffer(outQ_, 2, td.ubChunkBytes);
    if constexpr (kDirect) pipe.InitBuffer(accBuf_, td.ubChunkBytes);
    pipe.InitBuffer(gradBuf_, UbBytes(mt_, 4));
    if constexpr (!kSoftmax) {
      pipe.InitBuffer(maxBuf_, UbBytes(mt_, 4));
      pipe.InitBuffer(sumBuf_, UbBytes(mt_, 4));
    }
    pipe.InitBuffer(targetBuf_, UbBytes(mt_, sizeof(TI)));
    // One byte more than mt bits: ProcessDirect's chunks may start inside a mask byte.
    pipe.InitBuffer(maskBuf_, UbBytes((mt_ + 7) / 8 + 1, 1));
  }

  __aicore__ inline void Process() {
    const int64_t chunks = td_->chunks;
    if (chunks == 0) {
      // No tokens: weight_grad is all zeros (input_grad is empty).
      ZeroRows(weightGradGm_, vocab_);
      return;
    }
    if constexpr (kDirect) {
      ProcessDirect();
      return;
    }
    ZeroRows(inputAccGm_, rows_);
    SyncAll();
    for (int64_t round = 0; round < td_->rounds; ++round) {
      const int64_t tile = round * blocks_ + block_;
      const bool active = tile < td_->tiles;
      for (int64_t step = 0; step < chunks; ++step) {
        if (active) Step(tile, (step + block_) % chunks, step == 0);
        SyncAll();
      }
      if constexpr (!kF32) {
        // The tile's last contribution came from this block's own last step.
        if (active) {
          const int64_t n0 = tile * nt_;
          CastOut(weightGradGm_[n0 * hidden_], weightAccGm_, uint64_t(Min64(nt_, vocab_ - n0)) * hidden_);
        }
      }
    }
    if constexpr (!kF32) {
      // After the last step's SyncAll every input_grad row is complete.
      int64_t r0, r1;
      BlockRows(rows_, r0, r1);
      CastOut(inputGradGm_[r0 * hidden_], inputAccGm_[r0 * hidden_], uint64_t(r1 - r0) * hidden_);
    }
  }

 private:
  static constexpr bool kDirect = kF32 && kSoftmax;

  __aicore__ inline void ProcessDirect() {
    int64_t r0, r1, v0, v1;
    BlockRows(rows_, r0, r1);
    BlockRows(vocab_, v0, v1);
    // Column pieces: H may exceed a UB buffer.
    const int64_t piece = td_->ubChunkBytes / 4;
    for (int64_t c0 = 0; c0 < hidden_; c0 += piece)
      ScaleRows(r0, r1, v0, v1, c0, static_cast<uint32_t>(Min64(piece, hidden_ - c0)));
    // X' and every block's partial sums are complete.
    SyncAll();
    const int32_t h = static_cast<int32_t>(hidden_);
    const int64_t groupRows = td_->inputRowGroups, groupVocab = td_->inputVocabGroups;
    if (block_ < groupRows * groupVocab) {
      int64_t g0, g1, k0, k1;
      const int64_t vocabGroup = block_ / groupRows;
      BlockShare(rows_, block_ % groupRows, groupRows, g0, g1);
      BlockShare(vocab_, vocabGroup, groupVocab, k0, k1);
      if (g1 > g0 && k1 > k0) {
        mmInput.SetOrgShape(static_cast<int32_t>(rows_), h, static_cast<int32_t>(vocab_));
        mmInput.SetSingleShape(static_cast<int32_t>(g1 - g0), h, static_cast<int32_t>(k1 - k0));
        mmInput.SetTensorA(softmaxGm_[g0 * vocab_ + k0]);
        mmInput.SetTensorB(wGm_[k0 * hidden_]);
        mmInput.IterateAll(vocabGroup == 0 ? inputGradGm_[g0 * hidden_]
                                           : inputPartGm_[((vocabGroup - 1) * rows_ + g0) * hidden_]);
        mmInput.End();
      }
    }
    if (v1 > v0) {
      mmWeight.SetOrgShape(static_cast<int32_t>(vocab_), h, static_cast<int32_t>(rows_));
      mmWeight.SetSingleShape(static_cast<int32_t>(v1 - v0), h, static_cast<int32_t>(rows_));
      mmWeight.SetTensorA(softmaxGm_[v0], true);
      mmWeight.SetTensorB(scaledGm_);
      mmWeight.IterateAll(weightGradGm_[v0 * hidden_]);
      mmWeight.End();
    }
    // The vector cores read the products back from GM, input_grad's rows from other blocks'.
    SyncAll();
    for (int64_t c0 = 0; c0 < hidden_; c0 += piece) {
      const uint32_t len = static_cast<uint32_t>(Min64(piece, hidden_ - c0));
      FixInputRows(r0, r1, c0, len);
      FixWeightRows(v0, v1, c0, len);
    }
  }

  // Columns [c0, c0 + len) of X'[r] = grad[r] X[r] for this block's rows [r0, r1) and, with label
  // smoothing, of this block's partial sums of X' over those rows and of W over its vocabulary rows
  // [v0, v1).
  __aicore__ inline void ScaleRows(int64_t r0, int64_t r1, int64_t v0, int64_t v1, int64_t c0, uint32_t len) {
    const bool smooth = td_->smoothPerClass != 0.0f;
    const LocalTensor<float> grad = gradBuf_.Get<float>(), acc = accBuf_.Get<float>();
    if (smooth) StartSum(acc, len);
    for (int64_t m0 = r0; m0 < r1; m0 += mt_) {
      const int32_t n = static_cast<int32_t>(Min64(mt_, r1 - m0));
      LoadRowData(m0, n);
      for (int32_t i = 0; i < n; ++i) {
        LocalTensor<float> in = LoadRow(xGm_[(m0 + i) * hidden_ + c0], len);
        const LocalTensor<float> out = outQ_.template AllocTensor<float>();
        Muls(out, in, grad.GetValue(i), len);
        if (smooth) Add(acc, acc, out, len);
        inQ_.FreeTensor(in);
        StoreRow(scaledGm_[(m0 + i) * hidden_ + c0], out, len);
      }
    }
    if (!smooth) return;
    EndSum(acc, partGm_[(block_ * 2) * hidden_ + c0], len);
    StartSum(acc, len);
    for (int64_t v = v0; v < v1; ++v) AddToSum(acc, wGm_[v * hidden_ + c0], len);
    EndSum(acc, partGm_[(block_ * 2 + 1) * hidden_ + c0], len);
  }

  // A GM row piece into an inQ_ tensor, ready for the vector unit (the caller frees it).
  __aicore__ inline LocalTensor<float> LoadRow(const GlobalTensor<float> &src, uint32_t len) {
    LocalTensor<float> in = inQ_.template AllocTensor<float>();
    CopyIn(in, src, len);
    inQ_.EnQue(in);
    return inQ_.template DeQue<float>();
  }

  // An outQ_ tensor the vector unit filled out to a GM row piece, and freed.
  __aicore__ inline void StoreRow(const GlobalTensor<float> &dst, LocalTensor<float> out, uint32_t len) {
    outQ_.EnQue(out);
    out = outQ_.template DeQue<float>();
    CopyOut(dst, out, len);
    outQ_.FreeTensor(out);
  }

  __aicore__ inline void AddToSum(const LocalTensor<float> &acc, const GlobalTensor<float> &src, uint32_t len) {
    LocalTensor<float> in = LoadRow(src, len);
    Add(acc, acc, in, len);
    inQ_.FreeTensor(in);
  }

  // acc[0, len) = 0, once its previous contents have left for GM.
  __aicore__ inline void StartSum(const LocalTensor<float> &acc, uint32_t len) {
    OrderPipes<HardEvent::MTE3_V>(&pipe);
    Duplicate(acc, 0.0f, static_cast<int32_t>(len));
  }

  __aicore__ inline void EndSum(const LocalTensor<float> &acc, const GlobalTensor<float> &dst, uint32_t len) {
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    CopyOut(dst, acc, len);
  }

  // acc[0, len) = the sum in block order of the blocks' partial sums `which` (0: X', 1: W) of the
  // column piece at c0.
  __aicore__ inline void GatherSums(const LocalTensor<float> &acc, int64_t which, int64_t c0, uint32_t len) {
    StartSum(acc, len);
    for (int64_t b = 0; b < blocks_; ++b) AddToSum(acc, partGm_[(b * 2 + which) * hidden_ + c0], len);
  }

  // Whether row i of the loaded chunk has its target in this shard; its local index in j.
  __aicore__ inline bool TargetHere(int32_t i, int64_t &j) {
    const int32_t bit = maskShift_ + i;
    if ((maskBuf_.Get<uint8_t>().GetValue(bit / 8) >> (bit % 8)) & 1) return false;
    j = static_cast<int64_t>(targetBuf_.Get<TI>().GetValue(i));
    return j >= 0 && j < vocab_;
  }

  // input_grad rows [r0, r1), columns [c0, c0 + len): grad[r] (p W)[r] - s grad[r] colsum(W) -
  // (1 - a) grad[r] W[t_r], (p W)[r] summed over the vocabulary groups in order.
  __aicore__ inline void FixInputRows(int64_t r0, int64_t r1, int64_t c0, uint32_t len) {
    const float smooth = td_->smoothPerClass, targetWeight = td_->targetWeight;
    const LocalTensor<float> grad = gradBuf_.Get<float>(), colSum = accBuf_.Get<float>();
    if (smooth != 0.0f) GatherSums(colSum, 1, c0, len);
    for (int64_t m0 = r0; m0 < r1; m0 += mt_) {
      const int32_t n = static_cast<int32_t>(Min64(mt_, r1 - m0));
      LoadRowData(m0, n);
      for (int32_t i = 0; i < n; ++i) {
        const float g = grad.GetValue(i);
        int64_t j = 0;
        LocalTensor<float> in = LoadRow(inputGradGm_[(m0 + i) * hidden_ + c0], len);
        for (int64_t group = 1; group < td_->inputVocabGroups; ++group) {
          LocalTensor<float> part = LoadRow(inputPartGm_[((group - 1) * rows_ + m0 + i) * hidden_ + c0], len);
          Add(in, in, part, len);
          inQ_.FreeTensor(part);
        }
        const LocalTensor<float> out = outQ_.template AllocTensor<float>();
        Muls(out, in, g, len);
        inQ_.FreeTensor(in);
        if (smooth != 0.0f) Axpy(out, colSum, -smooth * g, len);
        if (TargetHere(i, j)) {
          LocalTensor<float> row = LoadRow(wGm_[j * hidden_ + c0], len);
          Axpy(out, row, -targetWeight * g, len);
          inQ_.FreeTensor(row);
        }
        StoreRow(inputGradGm_[(m0 + i) * hidden_ + c0], out, len);
      }
    }
  }

  // weight_grad rows [v0, v1), columns [c0, c0 + len): minus s times the sum of X', then minus
  // (1 - a) X'[r] into row t_r for every unmasked row r whose target is here, in row order.
  __aicore__ inline void FixWeightRows(int64_t v0, int64_t v1, int64_t c0, uint32_t len) {
    const float smooth = td_->smoothPerClass, targetWeight = td_->targetWeight;
    if (smooth != 0.0f) {
      const LocalTensor<float> sum = accBuf_.Get<float>();
      GatherSums(sum, 0, c0, len);
      for (int64_t v = v0; v < v1; ++v) AddRow(weightGradGm_[v * hidden_ + c0], sum, -smooth, len);
    }
    for (int64_t m0 = 0; m0 < rows_; m0 += mt_) {
      const int32_t n = static_cast<int32_t>(Min64(mt_, rows_ - m0));
      LoadRowData(m0, n);
      for (int32_t i = 0; i < n; ++i) {
        int64_t j = 0;
        if (!TargetHere(i, j) || j < v0 || j >= v1) continue;
        LocalTensor<float> x = LoadRow(scaledGm_[(m0 + i) * hidden_ + c0], len);
        AddRow(weightGradGm_[j * hidden_ + c0], x, -targetWeight, len);
        inQ_.FreeTensor(x);
      }
    }
  }

  // dst[0, len) += alpha * src (UB), read after any earlier write to the same row has landed.
  __aicore__ inline void AddRow(const GlobalTensor<float> &dst, const LocalTensor<float> &src, float alpha,
                                uint32_t len) {
    OrderPipes<HardEvent::MTE3_MTE2>(&pipe);
    LocalTensor<float> in = LoadRow(dst, len);
    const LocalTensor<float> out = outQ_.template AllocTensor<float>();
    Muls(out, src, alpha, len);
    Add(out, out, in, len);
    inQ_.FreeTensor(in);
    StoreRow(dst, out, len);
  }

  __aicore__ inline void BlockRows(int64_t total, int64_t &r0, int64_t &r1) const {
    BlockShare(total, block_, blocks_, r0, r1);
  }

  // This block's share of the rows of a [total, H] GM matrix set to zero.
  template <typename U>
  __aicore__ inline void ZeroRows(const GlobalTensor<U> &dst, int64_t total) {
    int64_t r0, r1;
    BlockRows(total, r0, r1);
    ZeroGm(dst[r0 * hidden_], uint64_t(r1 - r0) * hidden_, outQ_, td_->ubChunkBytes);
  }

  __aicore__ inline void CastOut(const GlobalTensor<T> &dst, const GlobalTensor<float> &src, uint64_t count) {
    CastGm(dst, src, count, inQ_, outQ_, td_->ubChunkBytes);
  }

  // One (V tile, BT chunk) pair; `first`: the tile's first chunk in this round, which overwrites
  // the weight_grad tile instead of adding to it.
  __aicore__ inline void Step(int64_t tile, int64_t chunk, bool first) {
    const int64_t n0 = tile * nt_, m0 = chunk * mt_;
    const int32_t cols = static_cast<int32_t>(Min64(nt_, vocab_ - n0));
    const int32_t rows = static_cast<int32_t>(Min64(mt_, rows_ - m0));
    const int32_t h = static_cast<int32_t>(hidden_);
    const GlobalTensor<T> x = xGm_[m0 * hidden_], w = wGm_[n0 * hidden_];
    if constexpr (!kSoftmax) {
      mmLogits.SetOrgShape(rows, cols, h);
      mmLogits.SetSingleShape(rows, cols, h);
      mmLogits.SetTensorA(x);
      mmLogits.SetTensorB(w, true);
      mmLogits.IterateAll(logitsGm_);
      mmLogits.End();
    }
    BuildG(n0, cols, m0, rows);
    // The cube reads G from GM: the vector core's copies out must have landed.
    PipeBarrier<PIPE_ALL>();
    mmWeight.SetOrgShape(cols, h, rows);
    mmWeight.SetSingleShape(cols, h, rows);
    mmWeight.SetTensorA(gGm_, true);
    mmWeight.SetTensorB(x);
    if constexpr (kF32) {
      mmWeight.IterateAll(weightGradGm_[n0 * hidden_], first ? 0 : 1);
    } else {
      mmWeight.IterateAll(weightAccGm_, first ? 0 : 1);
    }
    mmWeight.End();
    mmInput.SetOrgShape(rows, h, cols);
    mmInput.SetSingleShape(rows, h, cols);
    mmInput.SetTensorA(gGm_);
    mmInput.SetTensorB(w);
    mmInput.IterateAll(inputAccGm_[m0 * hidden_], 1);
    mmInput.End();
  }

  // Chunk rows [m0, m0 + rows): grad, logits_max, sum_exp_logits, masked_target and mask bits in UB
  // for the scalar unit.
  // Row i's mask bit is bit maskShift_ + i of the loaded bytes.
  __aicore__ inline void LoadRowData(int64_t m0, int32_t rows) {
    // The scalar unit is done with the previous chunk's values.
    OrderPipes<HardEvent::S_MTE2>(&pipe);
    CopyIn(gradBuf_.Get<float>(), gradGm_[m0], rows);
    if constexpr (!kSoftmax) {
      CopyIn(maxBuf_.Get<float>(), maxGm_[m0], rows);
      CopyIn(sumBuf_.Get<float>(), sumGm_[m0], rows);
    }
    CopyIn(targetBuf_.Get<TI>(), targetGm_[m0], rows);
    maskShift_ = static_cast<int32_t>(m0 % 8);
    CopyIn(maskBuf_.Get<uint8_t>(), maskGm_[m0 / 8], static_cast<uint32_t>((maskShift_ + rows + 7) / 8));
    OrderPipes<HardEvent::MTE2_S>(&pipe);
  }

  // G tile [rows, cols] (row stride cols, dtype T) into gGm_, from the logits tile (memory-saving)
  // or softmax[m0.., n0..] (high-performance), batchRows rows per UB pass.
  __aicore__ inline void BuildG(int64_t n0, int32_t cols, int64_t m0, int32_t rows) {
    LoadRowData(m0, rows);
    const LocalTensor<float> grad = gradBuf_.Get<float>();
    const uint32_t inPitch = UbBytes(cols, 4) / 4, outPitch = UbBytes(cols, sizeof(T)) / sizeof(T);
    const uint64_t ld = kSoftmax ? uint64_t(vocab_) : uint64_t(cols);
    const float smooth = td_->smoothPerClass, targetWeight = td_->targetWeight;
    LocalTensor<float> rowMax, rowSum;
    if constexpr (!kSoftmax) {
      rowMax = maxBuf_.Get<float>();
      rowSum = sumBuf_.Get<float>();
    }
    for (int32_t r0 = 0; r0 < rows; r0 += int32_t(td_->batchRows)) {
      const int32_t nb = static_cast<int32_t>(Min64(td_->batchRows, rows - r0));
      LocalTensor<float> in = inQ_.template AllocTensor<float>();
      const GlobalTensor<float> src = kSoftmax ? softmaxGm_[(m0 + r0) * vocab_ + n0] : logitsGm_[uint64_t(r0) * cols];
      DataCopyPad(in, src, DataCopyExtParams(uint16_t(nb), uint32_t(cols) * 4, uint32_t((ld - cols) * 4), 0, 0),
                  DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
      inQ_.EnQue(in);
      in = inQ_.template DeQue<float>();
      LocalTensor<T> out = outQ_.template AllocTensor<T>();
      // fp32 writes G straight into the out buffer; fp16/bf16 build it in place and cast.
      const LocalTensor<float> g = kF32 ? out.template ReinterpretCast<float>() : in;
      for (int32_t i = 0; i < nb; ++i) {
        const int32_t r = r0 + i;
        const float gr = grad.GetValue(r);
        const LocalTensor<float> x = in[i * inPitch], y = g[i * inPitch];
        if constexpr (kSoftmax) {
          Muls(y, x, gr, cols);
        } else {
          Adds(y, x, -rowMax.GetValue(r), cols);
          Exp(y, y, cols);
          Muls(y, y, gr / rowSum.GetValue(r), cols);
        }
        if (smooth != 0.0f) Adds(y, y, -smooth * gr, cols);
      }
      // The target column of each unmasked row whose target lies in this tile: a scalar fix-up.
      OrderPipes<HardEvent::V_S>(&pipe);
      for (int32_t i = 0; i < nb; ++i) {
        const int32_t r = r0 + i;
        int64_t j = 0;
        if (!TargetHere(r, j) || j < n0 || j >= n0 + cols) continue;
        const uint32_t at = i * inPitch + uint32_t(j - n0);
        g.SetValue(at, g.GetValue(at) - targetWeight * grad.GetValue(r));
      }
      OrderPipes<HardEvent::S_V>(&pipe);
      if constexpr (!kF32) {
        for (int32_t i = 0; i < nb; ++i) Cast(out[i * outPitch], in[i * inPitch], RoundMode::CAST_RINT, cols);
      }
      inQ_.FreeTensor(in);
      outQ_.EnQue(out);
      out = outQ_.template DeQue<T>();
      DataCopyPad(gGm_[uint64_t(r0) * cols], out, DataCopyExtParams(uint16_t(nb), uint32_t(cols) * sizeof(T), 0, 0, 0));
      outQ_.FreeTensor(out);
    }
  }

  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECOUT, 2> outQ_;
  TBuf<TPosition::VECCALC> gradBuf_, maxBuf_, sumBuf_, targetBuf_, maskBuf_, accBuf_;

  GlobalTensor<float> gradGm_, maxGm_, sumGm_, softmaxGm_, inputAccGm_, weightAccGm_, logitsGm_;
  GlobalTensor<float> scaledGm_, partGm_;  // ProcessDirect: X' [BT, H]; per block [2, H] partial sums
  GlobalTensor<float> inputPartGm_;         // ProcessDirect: vocabulary groups 1.. of p W, [Kg - 1, BT, H]
  GlobalTensor<T> xGm_, wGm_, inputGradGm_, weightGradGm_, gGm_;
  GlobalTensor<uint8_t> maskGm_;
  GlobalTensor<TI> targetGm_;

  const FusedLinearCrossEntropyLossGradTilingData *td_ = nullptr;
  int64_t rows_ = 0, hidden_ = 0, vocab_ = 0, mt_ = 0, nt_ = 0, block_ = 0, blocks_ = 1;
  int32_t maskShift_ = 0;
};

template <typename T, typename TI, bool kSoftmax>
__aicore__ inline void Run(const FlceGradArgs &a, const FusedLinearCrossEntropyLossGradTilingData &td) {
  FlceGradKernel<T, TI, kSoftmax> op;
  // At kernel scope and outside any braces: on the cube core the registration serves the vector
  // core's Matmul requests and returns from here; on the vector core it declares the client those
  // requests go through, which must live until the kernel ends. The softmax mode leaves mmLogits
  // unused.
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmLogits, &td.mmLogits, op.mmWeight, &td.mmWeight, op.mmInput,
                    &td.mmInput);
  op.Init(a, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void fused_linear_cross_entropy_loss_grad(
    GM_ADDR grad, GM_ADDR input, GM_ADDR weight, GM_ADDR targetMask, GM_ADDR maskedTarget, GM_ADDR logitsMax,
    GM_ADDR sumExp, GM_ADDR softmax, GM_ADDR inputGrad, GM_ADDR weightGrad, GM_ADDR workspace, GM_ADDR tiling) {
  // Cube (Matmul) and vector work in one kernel: one AIV per AIC, so a block is one core pair.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(FusedLinearCrossEntropyLossGradTilingData);
  GET_TILING_DATA(td, tiling);
  const FlceGradArgs a{grad, input, weight, targetMask, maskedTarget, logitsMax, sumExp, softmax,
                       inputGrad, weightGrad, workspace};
  // Literal keys (the CANN compiler builds one binary per TILING_KEY_IS): the cross-entropy keys
  // 1..6 of (dtype, masked_target dtype) in memory-saving mode, 11..16 with softmax.
  if (TILING_KEY_IS(1)) {
    Run<float, int32_t, false>(a, td);
  } else if (TILING_KEY_IS(2)) {
    Run<float, int64_t, false>(a, td);
  } else if (TILING_KEY_IS(3)) {
    Run<half, int32_t, false>(a, td);
  } else if (TILING_KEY_IS(4)) {
    Run<half, int64_t, false>(a, td);
  } else if (TILING_KEY_IS(5)) {
    Run<bfloat16_t, int32_t, false>(a, td);
  } else if (TILING_KEY_IS(6)) {
    Run<bfloat16_t, int64_t, false>(a, td);
  } else if (TILING_KEY_IS(11)) {
    Run<float, int32_t, true>(a, td);
  } else if (TILING_KEY_IS(12)) {
    Run<float, int64_t, true>(a, td);
  } else if (TILING_KEY_IS(13)) {
    Run<half, int32_t, true>(a, td);
  } else if (TILING_KEY_IS(14)) {
    Run<half, int64_t, true>(a, td);
  } else if (TILING_KEY_IS(15)) {
    Run<bfloat16_t, int32_t, true>(a, td);
  } else if (TILING_KEY_IS(16)) {
    Run<bfloat16_t, int64_t, true>(a, td);
  }
}
