// lightning_indexer: for every query token t and key head n, the index scores
//   I[t, s] = Σ_g w[t, g] · ReLU(q[t, g] · k[s])   (g over the group of query heads of n)
// over the visible keys s (sparse_mode 0: all; 3: right-down causal), then the top-k keys by
// score: sparse_indices (ties to the lower key index; -1 past the visible keys) and
// sparse_values (-inf there).
//
// Work item: a run of query rows of one batch and key head. Per key tile, one cube product gives
// the scores of all the run's query heads; the vector core folds each query row's heads into I
// (ReLU, weighted sum), sorts the tile (Sort32 runs merged by MrgSort) and merges it into the
// row's running top-k, which waits in the block's workspace between tiles. Once the top-k is full,
// only the tile's scores above its k-th score can enter it: those candidates are packed by
// GatherMask and only they are sorted and merged (none: the tile is skipped). No T x T or
// T x N x T buffer exists: the workspace holds one tile of scores. Paged keys (PA_BSND) are read
// block by block through the block table: key s of batch b is row
// block_table[b, s / blockSize] * blockSize + s % blockSize.
#include "dsa/lightning_indexer_segment.h"
#include "dsa/lightning_indexer_tiling_data.h"
#include "kernel_utils.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

constexpr float kNegInf = -__builtin_inff();
constexpr uint32_t kTileBytes = 16 * 1024;

template <typename T>
class LightningIndexerKernel {
  using F = MatmulType<TPosition::GM, CubeFormat::ND, float>;
  using FT = MatmulType<TPosition::GM, CubeFormat::ND, float, true>;

 public:
  __aicore__ inline LightningIndexerKernel() {}

  TPipe pipe;
  Matmul<F, FT, F> mm;

  __aicore__ inline void Init(GM_ADDR q, GM_ADDR k, GM_ADDR w, GM_ADDR qLen, GM_ADDR kLen, GM_ADDR table, GM_ADDR idx,
                              GM_ADDR val, GM_ADDR workspace, const LightningIndexerTilingData &td) {
    td_ = &td;
    tableGm_.SetGlobalBuffer((__gm__ int32_t *)table);
    qGm_.SetGlobalBuffer((__gm__ T *)q);
    kGm_.SetGlobalBuffer((__gm__ T *)k);
    wGm_.SetGlobalBuffer((__gm__ T *)w);
    qLenGm_.SetGlobalBuffer((__gm__ int64_t *)qLen);
    kLenGm_.SetGlobalBuffer((__gm__ int64_t *)kLen);
    idxGm_.SetGlobalBuffer((__gm__ int32_t *)idx);
    valGm_.SetGlobalBuffer((__gm__ T *)val);
    __gm__ float *ws = (__gm__ float *)GetUserWorkspace(workspace) + GetBlockIdx() * td.blockFloats;
    qf_.SetGlobalBuffer(ws + td.offQ);
    kf_.SetGlobalBuffer(ws + td.offK);
    score_.SetGlobalBuffer(ws + td.offScore);
    top_.SetGlobalBuffer(ws + td.offTop);
    const uint32_t topK = static_cast<uint32_t>(td.topK), tile = td.keyTile;
    pipe.InitBuffer(inQ_, 2, kTileBytes);
    pipe.InitBuffer(outQ_, 1, kTileBytes);
    pipe.InitBuffer(xf_, kTileBytes);
    pipe.InitBuffer(wts_, kTileBytes);
    pipe.InitBuffer(acc_, tile * 4);
    pipe.InitBuffer(tmp_, tile * 4);
    pipe.InitBuffer(keyIdx_, tile * 4);
    pipe.InitBuffer(candIdx_, tile * 4);
    pipe.InitBuffer(mask_, UbBytes(tile / 8, 1));
    pipe.InitBuffer(sortA_, tile * 8);
    pipe.InitBuffer(sortB_, tile * 8);
    pipe.InitBuffer(run_, UbBytes(topK, 8));
    pipe.InitBuffer(merged_, UbBytes(topK + tile, 8));
    pipe.InitBuffer(off_, UbBytes(topK, 4));
    pipe.InitBuffer(off4_, UbBytes(topK, 4));
    pipe.InitBuffer(outT_, UbBytes(topK, sizeof(T)));
    // Byte offsets of the scores (8j) and of the indices (8j + 4) of k proposals.
    LocalTensor<int32_t> off = off_.Get<int32_t>(), off4 = off4_.Get<int32_t>();
    ArithProgression<int32_t>(off, 0, 8, static_cast<int32_t>(topK));
    ArithProgression<int32_t>(off4, 4, 8, static_cast<int32_t>(topK));
  }

  __aicore__ inline void Process() {
    const LightningIndexerTilingData &td = *td_;
    int64_t item = 0;
    for (int64_t b = 0; b < td.batch; ++b) {
      const LiSeg seg = Segment(b);
      const int64_t runs = (seg.rows + td.qRows - 1) / td.qRows;
      for (int64_t n = 0; n < td.n2; ++n)
        for (int64_t r = 0; r < runs; ++r, ++item)
          if (item % GetBlockNum() == GetBlockIdx())
            Item(seg, n, r * td.qRows, static_cast<uint32_t>(Min64(td.qRows, seg.rows - r * td.qRows)));
    }
    mm.End();
  }

 private:
  __aicore__ inline LiSeg Segment(int64_t b) const {
    const LightningIndexerTilingData &td = *td_;
    return LiSegment(td.qLenMode, td.kLenMode, td.seq1, td.seq2, qLenGm_, kLenGm_, b);
  }

  // Keys visible to query row i of the batch: a prefix [0, visible) of its keys.
  __aicore__ inline int64_t Visible(const LiSeg &s, int64_t i) const {
    if (i >= s.valid) return 0;
    if (td_->sparseMode == 0) return s.keys;
    const int64_t v = i + 1 + s.keys - s.valid;
    return v < 0 ? 0 : v > s.keys ? s.keys : v;
  }

  __aicore__ inline void Item(const LiSeg &seg, int64_t n, int64_t i0, uint32_t m) {
    const LightningIndexerTilingData &td = *td_;
    const uint32_t g = static_cast<uint32_t>(td.group), d = static_cast<uint32_t>(td.dim);
    int64_t maxVis = 0;
    for (uint32_t i = 0; i < m; ++i) {
      count_[i] = 0;
      const int64_t v = Visible(seg, i0 + i);
      if (v > maxVis) maxVis = v;
    }
    if (maxVis > 0) {
      const int64_t qRow = (seg.qStart + i0) * td.n1 + n * g;
      // The run's query heads, token by token: g rows of d elements each.
      for (uint32_t i = 0; i < m; ++i)
        LoadRows(qGm_, (qRow + int64_t(i) * td.n1) * td.dim, td.dim, g, d, qf_[uint64_t(i) * g * d]);
      LoadWeights(qRow, m);
      for (int64_t s0 = 0; s0 < maxVis; s0 += td.keyTile) {
        const uint32_t nk = static_cast<uint32_t>(Min64(td.keyTile, maxVis - s0));
        LoadKeys(seg, n, s0, nk);
        Scores(m * g, nk);
        for (uint32_t i = 0; i < m; ++i) {
          const int64_t nv = Min64(nk, Visible(seg, i0 + i) - s0);
          if (nv > 0) RowTile(i, s0, nk, static_cast<uint32_t>(nv));
        }
      }
    }
    for (uint32_t i = 0; i < m; ++i) Emit(i, ((seg.qStart + i0 + i) * td.n2 + n) * td.topK);
  }

  // rows GM rows of len elements of T, `stride` apart, into fp32 rows of len in dst (contiguous).
  __aicore__ inline void LoadRows(const GlobalTensor<T> &src, int64_t base, int64_t stride, uint32_t rows, uint32_t len,
                                  const GlobalTensor<float> &dst) {
    const uint32_t pitch = UbBytes(len, sizeof(T)) / sizeof(T);
    const uint32_t per = kTileBytes / (pitch * 4);
    for (uint32_t r0 = 0; r0 < rows; r0 += per) {
      const uint32_t nr = rows - r0 < per ? rows - r0 : per, count = nr * pitch;
      LocalTensor<T> x = inQ_.AllocTensor<T>();
      DataCopyPad(x, src[base + int64_t(r0) * stride],
                  DataCopyExtParams(nr, len * sizeof(T), (stride - len) * sizeof(T), 0, 0),
                  DataCopyPadExtParams<T>(false, 0, 0, 0));
      inQ_.EnQue(x);
      x = inQ_.DeQue<T>();
      LocalTensor<float> xf = ToFloat(x, xf_, count);
      LocalTensor<float> y = outQ_.AllocTensor<float>();
      Adds(y, xf, 0.0f, count);
      inQ_.FreeTensor(x);
      outQ_.EnQue(y);
      y = outQ_.DeQue<float>();
      const uint32_t gap = (pitch * 4 - UbBytes(len, 4)) / kUbAlign;
      DataCopyPad(dst[uint64_t(r0) * len], y, DataCopyExtParams(nr, len * 4, gap, 0, 0));
      outQ_.FreeTensor(y);
    }
    PipeBarrier<PIPE_ALL>();
  }

  // Keys [s0, s0 + nk) of the batch's head n into kf_: one run of rows, or paged one block's run
  // at a time.
  __aicore__ inline void LoadKeys(const LiSeg &seg, int64_t n, int64_t s0, uint32_t nk) {
    const LightningIndexerTilingData &td = *td_;
    const uint32_t d = static_cast<uint32_t>(td.dim);
    if (td.blockSize == 0) {
      LoadRows(kGm_, ((seg.kStart + s0) * td.n2 + n) * td.dim, td.n2 * td.dim, nk, d, kf_);
      return;
    }
    for (int64_t s = s0; s < s0 + nk;) {
      const int64_t off = s % td.blockSize, run = Min64(td.blockSize - off, s0 + nk - s);
      const int64_t row = int64_t(tableGm_.GetValue(uint64_t(seg.b * td.maxBlocks + s / td.blockSize))) * td.blockSize + off;
      LoadRows(kGm_, (row * td.n2 + n) * td.dim, td.n2 * td.dim, static_cast<uint32_t>(run), d,
               kf_[uint64_t(s - s0) * d]);
      s += run;
    }
  }

  // The run's weights, fp32 in wts_: row i's group at i * wPitch_.
  __aicore__ inline void LoadWeights(int64_t qRow, uint32_t m) {
    const uint32_t g = static_cast<uint32_t>(td_->group);
    wPitch_ = UbBytes(g, sizeof(T)) / sizeof(T);
    LocalTensor<T> x = inQ_.AllocTensor<T>();
    DataCopyPad(x, wGm_[qRow], DataCopyExtParams(m, g * sizeof(T), (td_->n1 - g) * sizeof(T), 0, 0),
                DataCopyPadExtParams<T>(false, 0, 0, 0));
    inQ_.EnQue(x);
    x = inQ_.DeQue<T>();
    LocalTensor<float> xf = ToFloat(x, xf_, m * wPitch_);
    Adds(wts_.Get<float>(), xf, 0.0f, m * wPitch_);
    inQ_.FreeTensor(x);
    OrderPipes<HardEvent::V_S>(&pipe);
  }

  // score_[heads, nk] = qf_ x kf_ᵀ.
  __aicore__ inline void Scores(uint32_t heads, uint32_t nk) {
    const int d = static_cast<int>(td_->dim);
    PipeBarrier<PIPE_ALL>();
    mm.SetOrgShape(heads, nk, d, d);
    mm.SetSingleShape(heads, nk, d);
    mm.SetTensorA(qf_);
    mm.SetTensorB(kf_, true);
    mm.IterateAll(score_, 0, true);
    mm.End();
    PipeBarrier<PIPE_ALL>();
  }

  // Row i's index scores over the tile's first nv keys (of nk), sorted and merged into its top-k.
  __aicore__ inline void RowTile(uint32_t i, int64_t s0, uint32_t nk, uint32_t nv) {
    const uint32_t g = static_cast<uint32_t>(td_->group);
    const uint32_t pitch = UbBytes(nk, 4) / 4, per = kTileBytes / (pitch * 4);
    LocalTensor<float> acc = acc_.Get<float>(), tmp = tmp_.Get<float>(), w = wts_.Get<float>();
    Duplicate(acc, 0.0f, static_cast<int32_t>(pitch));
    for (uint32_t g0 = 0; g0 < g; g0 += per) {
      const uint32_t nr = g - g0 < per ? g - g0 : per;
      LocalTensor<float> x = inQ_.AllocTensor<float>();
      DataCopyPad(x, score_[(uint64_t(i) * g + g0) * nk], DataCopyExtParams(nr, nk * 4, 0, 0, 0),
                  DataCopyPadExtParams<float>(false, 0, 0, 0));
      inQ_.EnQue(x);
      x = inQ_.DeQue<float>();
      Relu(x, x, static_cast<int32_t>(nr * pitch));
      for (uint32_t j = 0; j < nr; ++j)
        Axpy(acc, x[j * pitch], w.GetValue(i * wPitch_ + g0 + j), static_cast<int32_t>(pitch));
      inQ_.FreeTensor(x);
    }
    // The tail past the visible keys at -inf, up to whole 256-byte compare repeats and the
    // smallest sort size holding nv: it never beats a visible key, which precedes it.
    const uint32_t padded = (nv + 63) / 64 * 64, nsort = SortSize(nv);
    const uint32_t fill = padded > nsort ? padded : nsort, aligned = (nv + 7) / 8 * 8;
    OrderPipes<HardEvent::V_S>(&pipe);
    for (uint32_t j = nv; j < aligned; ++j) acc.SetValue(j, kNegInf);
    OrderPipes<HardEvent::S_V>(&pipe);
    if (aligned < fill) Duplicate(acc[aligned], kNegInf, static_cast<int32_t>(fill - aligned));
    LocalTensor<int32_t> keys = keyIdx_.Get<int32_t>();
    CreateVecIndex(keys, static_cast<int32_t>(s0), fill);
    PipeBarrier<PIPE_V>();
    const uint32_t k = static_cast<uint32_t>(td_->topK);
    if (count_[i] < k) {
      MergeIntoTop(i, SortTile(acc, keys.ReinterpretCast<uint32_t>(), nsort), nv < k ? nv : k);
      return;
    }
    const uint32_t c = Candidates(i, padded);
    if (c == 0) return;
    MergeIntoTop(i, SortTile(tmp, candIdx_.Get<uint32_t>(), SortSize(c)), c < k ? c : k);
  }

  // 32 * 2^j: the fewest whole Sort32 repeats that merge pass by pass into one run.
  __aicore__ inline uint32_t SortSize(uint32_t n) const {
    uint32_t size = 32;
    while (size < n) size *= 2;
    return size;
  }

  // Packs the scores of acc_ (`padded` of them, the tail at -inf) that beat row i's full top-k
  // into tmp_ and their key indices into candIdx_, the rest of their sort size at -inf; returns
  // their number. Its k-th score wins ties, being an earlier key.
  __aicore__ inline uint32_t Candidates(uint32_t i, uint32_t padded) {
    LocalTensor<float> cand = tmp_.Get<float>();
    LocalTensor<uint8_t> mask = mask_.Get<uint8_t>();
    CompareScalar(mask, acc_.Get<float>(), kth_[i], CMPMODE::GT, padded);
    PipeBarrier<PIPE_V>();
    const LocalTensor<uint32_t> bits = mask.ReinterpretCast<uint32_t>();
    const GatherMaskParams params(1, 1, 8, 8);
    uint64_t c = 0, ci = 0;
    GatherMask(cand, acc_.Get<float>(), bits, true, padded, params, c);
    GatherMask(candIdx_.Get<uint32_t>(), keyIdx_.Get<uint32_t>(), bits, true, padded, params, ci);
    const uint32_t n = static_cast<uint32_t>(c);
    if (n == 0) return 0;
    const uint32_t nsort = SortSize(n), aligned = (n + 7) / 8 * 8;
    OrderPipes<HardEvent::V_S>(&pipe);
    for (uint32_t j = n; j < aligned; ++j) cand.SetValue(j, kNegInf);
    OrderPipes<HardEvent::S_V>(&pipe);
    if (aligned < nsort) Duplicate(cand[aligned], kNegInf, static_cast<int32_t>(nsort - aligned));
    PipeBarrier<PIPE_V>();
    return n;
  }

  // The n (32 * 2^j) scores as (score, key index) proposals, descending: Sort32 runs merged four
  // at a time, then two if one pair is left; ties keep key order (Sort32 and MrgSort are stable,
  // the earlier queue first).
  __aicore__ inline LocalTensor<float> SortTile(const LocalTensor<float> &scores, const LocalTensor<uint32_t> &keys,
                                                uint32_t n) {
    LocalTensor<float> src = sortA_.Get<float>(), dst = sortB_.Get<float>();
    Sort32(src, scores, keys, static_cast<int32_t>(n / 32));
    for (uint32_t len = 32; len < n;) {
      PipeBarrier<PIPE_V>();
      const uint32_t ways = n / len >= 4 ? 4 : 2;
      const uint16_t lens[4] = {uint16_t(len), uint16_t(len), uint16_t(len), uint16_t(len)};
      const MrgSortSrcList<float> runs = ways == 4 ? MrgSortSrcList<float>(src, src[len * 2], src[len * 4], src[len * 6])
                                                   : MrgSortSrcList<float>(src, src[len * 2], src, src);
      MrgSort(dst, runs, MrgSort4Info(lens, false, ways == 4 ? 15 : 3, static_cast<uint16_t>(n / (ways * len))));
      LocalTensor<float> t = src;
      src = dst;
      dst = t;
      len *= ways;
    }
    PipeBarrier<PIPE_V>();
    return src;
  }

  // Merges the first `take` proposals of `sorted` into row i's running top-k (the earlier keys
  // first on equal scores, as the running list holds lower key indices).
  __aicore__ inline void MergeIntoTop(uint32_t i, const LocalTensor<float> &sorted, uint32_t take) {
    const uint32_t k = static_cast<uint32_t>(td_->topK), cnt = count_[i];
    const GlobalTensor<float> top = top_[uint64_t(i) * k * 2];
    OrderPipes<HardEvent::MTE3_MTE2>(&pipe);
    if (cnt == 0) {
      OrderPipes<HardEvent::V_MTE3>(&pipe);
      CopyOut(top, sorted, take * 2);
      OrderPipes<HardEvent::MTE3_V>(&pipe);
      count_[i] = take;
      NoteKth(i, sorted);
      return;
    }
    LocalTensor<float> run = run_.Get<float>(), merged = merged_.Get<float>();
    CopyIn(run, top, cnt * 2);
    OrderPipes<HardEvent::MTE2_V>(&pipe);
    const uint16_t lens[4] = {uint16_t(cnt), uint16_t(take), 0, 0};
    MrgSort(merged, MrgSortSrcList<float>(run, sorted, sorted, sorted), MrgSort4Info(lens, false, 3, 1));
    const uint32_t total = cnt + take < k ? cnt + take : k;
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    CopyOut(top, merged, total * 2);
    OrderPipes<HardEvent::MTE3_V>(&pipe);
    count_[i] = total;
    NoteKth(i, merged);
  }

  // Once row i's top-k is full: its k-th score, from the UB list just stored (a scalar read of UB,
  // not of the GM copy the MTE3 wrote).
  __aicore__ inline void NoteKth(uint32_t i, const LocalTensor<float> &list) {
    const uint32_t k = static_cast<uint32_t>(td_->topK);
    if (count_[i] < k) return;
    OrderPipes<HardEvent::V_S>(&pipe);
    kth_[i] = list.GetValue((k - 1) * 2);
    OrderPipes<HardEvent::S_V>(&pipe);
  }

  // Row i's outputs at element `at`: the top-k's indices and scores, -1 / -inf past its count.
  __aicore__ inline void Emit(uint32_t i, int64_t at) {
    const uint32_t k = static_cast<uint32_t>(td_->topK), cnt = count_[i];
    LocalTensor<float> run = run_.Get<float>(), merged = merged_.Get<float>();
    LocalTensor<int32_t> outIdx = merged.ReinterpretCast<int32_t>();
    LocalTensor<float> outVal = merged[UbBytes(k, 4) / 4];
    OrderPipes<HardEvent::MTE3_V>(&pipe);
    Duplicate(outIdx, int32_t(-1), static_cast<int32_t>(k));
    Duplicate(outVal, kNegInf, static_cast<int32_t>(k));
    if (cnt > 0) {
      OrderPipes<HardEvent::MTE3_MTE2>(&pipe);
      CopyIn(run, top_[uint64_t(i) * k * 2], cnt * 2);
      OrderPipes<HardEvent::MTE2_V>(&pipe);
      PipeBarrier<PIPE_V>();
      const LocalTensor<uint32_t> bits = run.ReinterpretCast<uint32_t>();
      Gather(outVal.ReinterpretCast<uint32_t>(), bits, off_.Get<uint32_t>(), 0, cnt);
      Gather(outIdx.ReinterpretCast<uint32_t>(), bits, off4_.Get<uint32_t>(), 0, cnt);
    }
    PipeBarrier<PIPE_V>();
    LocalTensor<T> y = outT_.Get<T>();
    if constexpr (AscendC::IsSameType<T, float>::value) {
      Adds(y, outVal, 0.0f, static_cast<int32_t>(k));
    } else {
      Cast(y, outVal, RoundMode::CAST_RINT, k);
    }
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    CopyOut(idxGm_[at], outIdx, k);
    CopyOut(valGm_[at], y, k);
  }

  GlobalTensor<T> qGm_, kGm_, wGm_, valGm_;
  GlobalTensor<int64_t> qLenGm_, kLenGm_;
  GlobalTensor<int32_t> idxGm_, tableGm_;
  GlobalTensor<float> qf_, kf_, score_, top_;
  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECOUT, 1> outQ_;
  TBuf<TPosition::VECCALC> xf_, wts_, acc_, tmp_, keyIdx_, candIdx_, mask_, sortA_, sortB_, run_, merged_, off_, off4_, outT_;
  const LightningIndexerTilingData *td_ = nullptr;
  uint32_t wPitch_ = 0;
  uint32_t count_[64];  // proposals in each run row's top-k (kLiMaxQueryRows)
  float kth_[64];       // its k-th score, once full
};

template <typename T>
__aicore__ inline void Run(GM_ADDR q, GM_ADDR k, GM_ADDR w, GM_ADDR qLen, GM_ADDR kLen, GM_ADDR table, GM_ADDR idx,
                           GM_ADDR val, GM_ADDR workspace, const LightningIndexerTilingData &td) {
  LightningIndexerKernel<T> op;
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mm, &td.mmNT);
  op.Init(q, k, w, qLen, kLen, table, idx, val, workspace, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void lightning_indexer(GM_ADDR query, GM_ADDR key, GM_ADDR weights,
                                                        GM_ADDR actualSeqLengthsQuery, GM_ADDR actualSeqLengthsKey,
                                                        GM_ADDR blockTable, GM_ADDR sparseIndices, GM_ADDR sparseValues, GM_ADDR workspace,
                                                        GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(LightningIndexerTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(query, key, weights, actualSeqLengthsQuery, actualSeqLengthsKey, blockTable, sparseIndices, sparseValues,
               workspace, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(query, key, weights, actualSeqLengthsQuery, actualSeqLengthsKey, blockTable, sparseIndices, sparseValues, workspace,
              td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(query, key, weights, actualSeqLengthsQuery, actualSeqLengthsKey, blockTable, sparseIndices, sparseValues,
                    workspace, td);
  }
}
