// sparse_flash_attention_grad: d query, d key, d value, d query_rope, d key_rope of
// sparse_flash_attention, with P rebuilt from the forward's statistics over each query row's
// visible selected keys (sparse_flash_attention.cpp), D = rowsum(dO ∘ O), dS = scale·P∘(dO Vᵀ - D):
//   d[q | q_rope] = dS [K | K_rope],  dV_j = Σ P_j dO,  d[k | k_rope]_j = Σ dS_j [q | q_rope].
// An item (query row, key head) gathers its G query rows and dO rows into its workspace and then,
// nTile visible selected keys at a time (as many as a buffer of the gather queue holds), the key
// rows into one queue buffer and the value rows into the other, where the cube reads them: S and
// dP by the cube, P and dS in UB in fp32 (all rows of the tile in a few vector calls), d[q | q_rope]
// of its rows accumulated by the cube from the same key rows, and the tile's key gradients
// dSᵀ [Q | Q_rope] and Pᵀ dO by the cube into UB, which the store atomics add row by row into the
// block's own partial sums of the key gradients (one fp32 row per key row and key head). No
// gathered key or value row goes back out to GM. After a SyncAll every block sums a
// slice of the key rows over all blocks' partials, pairwise in a fixed tree, into d key, d key_rope
// and d value. Deterministic: a block's adds come in its items' order and the blocks' sums in the
// tree's, whatever the timing. The cube work is that of the selected pairs alone; the partial sums
// cost a [key rows, qkDim + vDim] fp32 workspace per block.
#include "../../sparse_flash_attention/sparse_flash_attention_kernel.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// GM_ADDR is a pointer type macro: one member per declaration.
struct SfagArgs {
  GM_ADDR q;
  GM_ADDR k;
  GM_ADDR v;
  GM_ADDR idx;
  GM_ADDR dy;
  GM_ADDR attnIn;
  GM_ADDR maxIn;
  GM_ADDR sumIn;
  GM_ADDR qRope;
  GM_ADDR kRope;
  GM_ADDR cumQ;
  GM_ADDR cumKv;
  GM_ADDR dq;
  GM_ADDR dk;
  GM_ADDR dv;
  GM_ADDR dqRope;
  GM_ADDR dkRope;
  GM_ADDR workspace;
};

template <typename T>
class SparseFlashAttentionGradKernel {
  using ND = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using NDTrans = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;
  using Ub = MatmulType<TPosition::VECOUT, CubeFormat::ND, T>;
  using UbTrans = MatmulType<TPosition::VECOUT, CubeFormat::ND, T, true>;
  using Acc = MatmulType<TPosition::GM, CubeFormat::ND, float>;
  using AccUb = MatmulType<TPosition::VECIN, CubeFormat::ND, float>;

 public:
  __aicore__ inline SparseFlashAttentionGradKernel() {}

  // Registered by Run with REGIST_MATMUL_OBJ before Init's InitBuffer calls.
  TPipe pipe;
  Matmul<ND, UbTrans, Acc> mmNT;    // S = Q Kᵀ and dP = dO Vᵀ, K's and V's rows in UB
  Matmul<ND, Ub, Acc> mmNN;         // dQ += dS K, K's rows in UB
  Matmul<NDTrans, ND, AccUb> mmTN;  // a tile's dV = Pᵀ dO, dK = dSᵀ Q, into UB

  __aicore__ inline void Init(const SfagArgs &a, const SparseFlashAttentionTilingData &td) {
    td_ = &td;
    const uint64_t qRows = uint64_t(td.qRows) * td.heads1, kRows = uint64_t(td.kRows) * td.heads2;
    const uint64_t ropeQ = td.ropeDim > 0 ? qRows * td.ropeDim : 1, ropeK = td.ropeDim > 0 ? kRows * td.ropeDim : 1;
    qGm_.SetGlobalBuffer((__gm__ T *)a.q, qRows * td.dim);
    kGm_.SetGlobalBuffer((__gm__ T *)a.k, kRows * td.dim);
    vGm_.SetGlobalBuffer((__gm__ T *)a.v, kRows * td.vDim);
    qRopeGm_.SetGlobalBuffer((__gm__ T *)a.qRope, ropeQ);
    kRopeGm_.SetGlobalBuffer((__gm__ T *)a.kRope, ropeK);
    idxGm_.SetGlobalBuffer((__gm__ int32_t *)a.idx, uint64_t(td.qRows) * td.heads2 * td.topK);
    dyGm_.SetGlobalBuffer((__gm__ T *)a.dy, qRows * td.vDim);
    oGm_.SetGlobalBuffer((__gm__ T *)a.attnIn, qRows * td.vDim);
    maxGm_.SetGlobalBuffer((__gm__ float *)a.maxIn, qRows);
    sumGm_.SetGlobalBuffer((__gm__ float *)a.sumIn, qRows);
    dqGm_.SetGlobalBuffer((__gm__ T *)a.dq, qRows * td.dim);
    dkGm_.SetGlobalBuffer((__gm__ T *)a.dk, kRows * td.dim);
    dvGm_.SetGlobalBuffer((__gm__ T *)a.dv, kRows * td.vDim);
    dqRopeGm_.SetGlobalBuffer((__gm__ T *)a.dqRope, ropeQ);
    dkRopeGm_.SetGlobalBuffer((__gm__ T *)a.dkRope, ropeK);
    if (td.packed || td.lengthsQ) cumQ_.SetGlobalBuffer((__gm__ int64_t *)a.cumQ, uint64_t(td.batch));
    if (td.packed || td.lengthsKv) cumKv_.SetGlobalBuffer((__gm__ int64_t *)a.cumKv, uint64_t(td.batch));
    // The block's workspace, in SfaWorkspaceFloats' order.
    wsBase_ = (__gm__ float *)GetUserWorkspace(a.workspace);
    blockFloats_ = ms_ops::SfaWorkspaceFloats(td, true);
    const uint64_t g = uint64_t(td.group), qk = uint64_t(td.qkDim);
    const uint64_t qPitch = ms_ops::SfaGradQPitch(td), vPitch = ms_ops::SfaGradVPitch(td);
    tilePitch_ = static_cast<uint32_t>(ms_ops::SfaGradTilePitch(td));
    const uint64_t tile = g * tilePitch_;
    __gm__ float *block = wsBase_ + GetBlockIdx() * blockFloats_, *ws = block;
    sGm_.SetGlobalBuffer(ws, tile);
    dpGm_.SetGlobalBuffer(ws + tile, tile);
    pGm_.SetGlobalBuffer((__gm__ T *)(ws + 2 * tile), tile);
    dsGm_.SetGlobalBuffer((__gm__ T *)(ws + 3 * tile), tile);
    ws += 4 * tile;
    accGm_.SetGlobalBuffer(ws, g * qk);
    ws += g * qk;
    qgGm_.SetGlobalBuffer((__gm__ T *)ws, g * qPitch);
    ws += g * qPitch;
    doGm_.SetGlobalBuffer((__gm__ T *)ws, g * vPitch);
    partAt_ = uint64_t(ws + g * vPitch - block);
    partGm_ = PartOf(GetBlockIdx());

    // Rows of fp32 as wide as a head or 8 rows of a tile (Rebuild's least chunk).
    const int64_t wide = td.qkDim > td.vDim ? td.qkDim : td.vDim, len = wide > 8 * tilePitch_ ? wide : 8 * tilePitch_;
    const uint32_t row = UbBytes(len, 4);
    chunkRows_ = RowsIn(row, tilePitch_ * 4);
    pipe.InitBuffer(inQ_, 2, row);
    pipe.InitBuffer(addQ_, 1, row);
    pipe.InitBuffer(outQ_, 1, row);
    pipe.InitBuffer(tmp_, row);
    pipe.InitBuffer(wideA_, row);
    pipe.InitBuffer(wideB_, row);
    queBytes_ = static_cast<uint32_t>(ms_ops::SfaQueueBytes(td, sizeof(T), true));
    pipe.InitBuffer(gatherQ_, 2, queBytes_);
    pipe.InitBuffer(zero_, UbBytes(int64_t(wide), sizeof(T)));
    pipe.InitBuffer(red_, kUbAlign);
    pipe.InitBuffer(idx_, UbBytes(td.idxChunk, 4));
    pipe.InitBuffer(pos_, UbBytes(td.nTile, 4));
    pipe.InitBuffer(statMax_, UbBytes(td.group, 4));
    pipe.InitBuffer(statSum_, UbBytes(td.group, 4));
    pipe.InitBuffer(dRow_, UbBytes(td.group, 4));
    cursor_.Init(&pipe, idx_, td);
    // All-zero bytes are 0 in every float type.
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(UbBytes(int64_t(wide), sizeof(T)) / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    // The rows' padding columns of gathered Q and dO enter the key gradients' padding columns
    // (never copied out): zeros, so that no NaN of the fresh workspace travels through the cube.
    for (uint32_t h = 0; h < g; ++h) {
      CopyOut(qgGm_[h * qPitch], zero_.Get<T>(), static_cast<uint32_t>(qPitch));
      CopyOut(doGm_[h * vPitch], zero_.Get<T>(), static_cast<uint32_t>(vPitch));
    }
  }

  __aicore__ inline void Process() {
    const SparseFlashAttentionTilingData &td = *td_;
    // Without rope parts d query_rope / d key_rope are the [1] placeholders' zeros.
    if (td.ropeDim == 0 && GetBlockIdx() == 0) {
      CopyOut(dqRopeGm_, zero_.Get<T>(), 1);
      CopyOut(dkRopeGm_, zero_.Get<T>(), 1);
    }
    ZeroPartial();
    const int64_t items = td.qRows * td.heads2;
    for (int64_t it = GetBlockIdx(); it < items; it += GetBlockNum()) QueryItem(it / td.heads2, it % td.heads2);
    mmNT.End();
    mmNN.End();
    mmTN.End();
    // Every block's partial sums are complete before any block adds them up.
    PipeBarrier<PIPE_ALL>();
    SyncAll();
    ReducePartials();
  }

 private:
  // ---- an item: the group's rows of query row t against its selected keys ----
  __aicore__ inline void QueryItem(int64_t t, int64_t n2) {
    const SparseFlashAttentionTilingData &td = *td_;
    const SfaSeq sq = SfaSequenceOfRow(td, cumQ_, cumKv_, t);
    const uint32_t g = static_cast<uint32_t>(td.group), qk = static_cast<uint32_t>(td.qkDim);
    const int64_t head0 = t * td.heads1 + n2 * td.group;
    const int64_t qPitch = int64_t(ms_ops::SfaGradQPitch(td)), vPitch = int64_t(ms_ops::SfaGradVPitch(td));
    // The previous item's reads of the workspace and UB rows are done.
    PipeBarrier<PIPE_ALL>();
    const uint32_t batch = static_cast<uint32_t>(td.gatherRows);
    SfaGatherRows(gatherQ_, batch, qgGm_, qGm_, qRopeGm_, td.dim, td.ropeDim, qPitch, g, SfaLinearRows{head0, 1});
    SfaGatherRows(gatherQ_, batch, doGm_, dyGm_, dyGm_, td.vDim, 0, vPitch, g, SfaLinearRows{head0, 1});
    RowStats(t, n2, SfaStatBase(td, sq, t, n2));
    cursor_.Start(idxGm_[(t * td.heads2 + n2) * td.topK], SfaVisible(td, sq, t - sq.qStart));
    const LocalTensor<int32_t> pos = pos_.Get<int32_t>();
    const GlobalTensor<int32_t> noTable;
    const SfaSelectedRows keys{&td, &noTable, &sq, pos, n2};
    const GlobalTensor<T> dy = dyGm_[head0 * td.vDim];
    const uint32_t tile = static_cast<uint32_t>(td.nTile);
    bool started = false;
    for (;;) {
      const uint32_t nt = cursor_.Next(pos, tile);
      if (nt == 0) break;
      // The previous tile's products and copies are done with the queue buffers and the tiles.
      PipeBarrier<PIPE_ALL>();
      LocalTensor<T> k = gatherQ_.AllocTensor<T>(), v = k;
      SfaGatherToUb(k, tile, kGm_, kRopeGm_, td.dim, td.ropeDim, 0, nt, keys);
      // When value is key, dP reads the key rows' main parts.
      if (!td.valueIsKey) {
        v = gatherQ_.AllocTensor<T>();
        SfaGatherToUb(v, tile, vGm_, vGm_, td.vDim, 0, 0, nt, keys);
      }
      // The cube reads the rows where MTE2 put them.
      PipeBarrier<PIPE_ALL>();
      ScoreRows(k, nt);
      DpRows(dy, v, td.valueIsKey ? td.dim : td.vDim, nt);
      if (!td.valueIsKey) gatherQ_.FreeTensor(v);
      Rebuild();
      // The cube reads dS where the copies out put it.
      PipeBarrier<PIPE_ALL>();
      QueryGrads(k, nt, started);
      gatherQ_.FreeTensor(k);
      started = true;
      AddKeyGrads(keys, nt);
      if (nt < tile) break;
    }
    PipeBarrier<PIPE_ALL>();
    for (uint32_t h = 0; h < g; ++h) {
      const int64_t r = head0 + h;
      WriteRow(dqGm_[r * td.dim], accGm_[uint64_t(h) * qk], td.dim, started);
      if (td.ropeDim > 0) WriteRow(dqRopeGm_[r * td.ropeDim], accGm_[uint64_t(h) * qk + td.dim], td.ropeDim, started);
    }
  }

  // The tile's key gradients added to the block's partial sums at their key rows, in the tile's
  // order, as many keys at a time as a queue buffer holds rows: the cube puts d[k | k_rope] =
  // dSᵀ [Q | Q_rope] and dv = Pᵀ dO of those keys into the two buffers (rows as wide as the
  // gathered Q and dO rows), and each row goes out with a store atomic.
  __aicore__ inline void AddKeyGrads(const SfaSelectedRows &keys, uint32_t nt) {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t qk = static_cast<uint32_t>(td.qkDim), dv = static_cast<uint32_t>(td.vDim);
    const uint32_t qPitch = static_cast<uint32_t>(ms_ops::SfaGradQPitch(td));
    const uint32_t vPitch = static_cast<uint32_t>(ms_ops::SfaGradVPitch(td));
    const uint64_t pitch = ms_ops::SfaGradPitch(td);
    const uint32_t per = queBytes_ / ((qPitch > vPitch ? qPitch : vPitch) * 4);
    for (uint32_t j0 = 0; j0 < nt; j0 += per) {
      const uint32_t m = nt - j0 < per ? nt - j0 : per;
      LocalTensor<float> dk = gatherQ_.AllocTensor<float>(), dvUb = gatherQ_.AllocTensor<float>();
      TileProduct(m, qPitch, dsGm_[j0], qgGm_, dk);
      TileProduct(m, vPitch, pGm_[j0], doGm_, dvUb);
      // The cube's rows have landed in UB.
      PipeBarrier<PIPE_ALL>();
      SetAtomicAdd<float>();
      for (uint32_t j = 0; j < m; ++j) {
        const GlobalTensor<float> row = partGm_[uint64_t(keys(j0 + j)) * pitch];
        CopyOut(row, dk[j * qPitch], qk);
        CopyOut(row[qk], dvUb[j * vPitch], dv);
      }
      SetAtomicNone();
      // The copies out have read both buffers before the next keys' products overwrite them.
      PipeBarrier<PIPE_ALL>();
      gatherQ_.FreeTensor(dk);
      gatherQ_.FreeTensor(dvUb);
    }
  }

  // C [m x n] in UB (rows n apart) = Aᵀ B: A the columns j0.. of the group's [G, tile pitch] P or
  // dS (`a` starts at column j0), B G rows of n elements.
  __aicore__ inline void TileProduct(uint32_t m, uint32_t n, const GlobalTensor<T> &a, const GlobalTensor<T> &b,
                                     const LocalTensor<float> &c) {
    const uint32_t g = static_cast<uint32_t>(td_->group);
    mmTN.SetOrgShape(tilePitch_, n, g, g);
    mmTN.SetSingleShape(m, n, g);
    mmTN.SetTensorA(a, true);
    mmTN.SetTensorB(b);
    mmTN.IterateAll(c, 0);
    mmTN.End();
  }

  // The block's partial sums set to zero, a queue buffer of zeros at a time.
  __aicore__ inline void ZeroPartial() {
    const uint64_t total = ms_ops::SfaGradKeyRows(*td_) * ms_ops::SfaGradPitch(*td_), per = queBytes_ / 4;
    LocalTensor<float> z = gatherQ_.AllocTensor<float>();
    Duplicate(z, 0.0f, static_cast<int32_t>(per));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    for (uint64_t e0 = 0; e0 < total; e0 += per)
      CopyOut(partGm_[e0], z, static_cast<uint32_t>(total - e0 < per ? total - e0 : per));
    gatherQ_.FreeTensor(z);
  }

  // d key, d key_rope and d value of this block's slice of the key rows: each part of each row
  // summed over the blocks' partials (ReducePart). The slices are disjoint: no block waits for
  // another.
  __aicore__ inline void ReducePartials() {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint64_t rows = ms_ops::SfaGradKeyRows(td), blocks = GetBlockNum();
    const uint64_t slice = (rows + blocks - 1) / blocks, begin = slice * GetBlockIdx();
    const uint64_t end = begin + slice < rows ? begin + slice : rows;
    const uint32_t qk = static_cast<uint32_t>(td.qkDim);
    if (begin >= end) return;
    const uint32_t n = static_cast<uint32_t>(end - begin);
    PipeBarrier<PIPE_ALL>();
    ReducePart(begin, n, 0, static_cast<uint32_t>(td.dim), dkGm_);
    if (td.ropeDim > 0)
      ReducePart(begin, n, static_cast<uint32_t>(td.dim), static_cast<uint32_t>(td.ropeDim), dkRopeGm_);
    ReducePart(begin, n, qk, static_cast<uint32_t>(td.vDim), dvGm_);
  }

  // Rows r0..r0+n-1 of columns [col, col + len) of the partials, summed over the blocks, into
  // rows r0.. of `out` ([key rows, len], as T); up to a queue buffer of rows per pass. The blocks
  // are summed pairwise in place (partial b += partial b + step, steps 1, 2, 4, ...): a fixed tree
  // whose rounding error grows with log2 of the blocks, not with their number.
  __aicore__ inline void ReducePart(uint64_t r0, uint32_t n, uint32_t col, uint32_t len, const GlobalTensor<T> &out) {
    const uint64_t pitch = ms_ops::SfaGradPitch(*td_), blocks = GetBlockNum();
    // UB rows of 16 floats' multiples: 32-byte aligned as fp32 and as T.
    const uint32_t ubPitch = (len + 15) / 16 * 16, per = queBytes_ / (ubPitch * 4);
    const uint32_t padBlocks = (ubPitch * 4 - UbBytes(len, 4)) / kUbAlign;
    const uint32_t tGap = (ubPitch * uint32_t(sizeof(T)) - UbBytes(len, sizeof(T))) / kUbAlign;
    const uint32_t gap = static_cast<uint32_t>((pitch - len) * 4);
    const DataCopyPadExtParams<float> noPad(false, 0, 0, 0);
    // Both queue buffers: a pair's partials, then the T rows out.
    LocalTensor<float> acc = gatherQ_.AllocTensor<float>(), x = gatherQ_.AllocTensor<float>();
    const LocalTensor<T> y = x.template ReinterpretCast<T>();
    for (uint32_t i0 = 0; i0 < n; i0 += per) {
      const uint32_t m = n - i0 < per ? n - i0 : per;
      const uint64_t at = (r0 + i0) * pitch + col;
      const DataCopyExtParams rowsIn(m, len * 4, gap, padBlocks, 0), rowsOut(m, len * 4, padBlocks, gap, 0);
      for (uint64_t step = 1; step < blocks; step *= 2)
        for (uint64_t b = 0; b + step < blocks; b += 2 * step) {
          // The previous pair's vector reads and copy out are done with both buffers.
          OrderPipes<HardEvent::V_MTE2>(&pipe);
          OrderPipes<HardEvent::MTE3_MTE2>(&pipe);
          DataCopyPad(acc, PartOf(b)[at], rowsIn, noPad);
          DataCopyPad(x, PartOf(b + step)[at], rowsIn, noPad);
          OrderPipes<HardEvent::MTE2_V>(&pipe);
          Add(acc, acc, x, static_cast<int32_t>(m * ubPitch));
          OrderPipes<HardEvent::V_MTE3>(&pipe);
          DataCopyPad(PartOf(b)[at], acc, rowsOut);
        }
      OrderPipes<HardEvent::V_MTE2>(&pipe);
      OrderPipes<HardEvent::MTE3_MTE2>(&pipe);
      DataCopyPad(acc, PartOf(0)[at], rowsIn, noPad);
      OrderPipes<HardEvent::MTE2_V>(&pipe);
      SfaNarrow(y, acc, m * ubPitch);
      OrderPipes<HardEvent::V_MTE3>(&pipe);
      DataCopyPad(out[(r0 + i0) * len], y, DataCopyExtParams(m, static_cast<uint32_t>(len * sizeof(T)), tGap, 0, 0));
    }
    gatherQ_.FreeTensor(acc);
    gatherQ_.FreeTensor(x);
  }

  // Block `block`'s partial sums: at partAt_ of every block's workspace.
  __aicore__ inline GlobalTensor<float> PartOf(uint64_t block) const {
    GlobalTensor<float> p;
    p.SetGlobalBuffer(wsBase_ + block * blockFloats_ + partAt_,
                      ms_ops::SfaGradKeyRows(*td_) * ms_ops::SfaGradPitch(*td_));
    return p;
  }

  // S = Q Kᵀ of the group's G gathered query rows against the tile's nt key rows in UB (`k`, laid
  // out by SfaGatherToUb), into the S tile: its main and rope parts as two products, the forward's
  // shapes (sparse_flash_attention.cpp's Scores): the recomputed scores must equal the forward's to
  // the bit, or P drifts from the statistics.
  __aicore__ inline void ScoreRows(const LocalTensor<T> &k, uint32_t nt) {
    const SparseFlashAttentionTilingData &td = *td_;
    const int32_t g = static_cast<int32_t>(td.group), n = static_cast<int32_t>(nt);
    const int32_t qPitch = static_cast<int32_t>(ms_ops::SfaGradQPitch(td)), pitch = static_cast<int32_t>(tilePitch_);
    mmNT.SetOrgShape(g, n, qPitch, static_cast<int32_t>(SfaUbPitch<T>(td.dim)), pitch);
    mmNT.SetSingleShape(g, n, static_cast<int32_t>(td.dim));
    mmNT.SetTensorA(qgGm_);
    mmNT.SetTensorB(k, true);
    mmNT.IterateAll(sGm_, 0);
    if (td.ropeDim > 0) {
      mmNT.SetOrgShape(g, n, qPitch, static_cast<int32_t>(SfaUbPitch<T>(td.ropeDim)), pitch);
      mmNT.SetSingleShape(g, n, static_cast<int32_t>(td.ropeDim));
      mmNT.SetTensorA(qgGm_[td.dim]);
      mmNT.SetTensorB(k[td.nTile * SfaUbPitch<T>(td.dim)], true);
      mmNT.IterateAll(sGm_, 1);
    }
    mmNT.End();
  }

  // dP = dO Vᵀ of the group's G rows (dO rows vDim apart from `dy`) against the tile's nt value
  // rows in UB (the first vDim elements of rows `width` wide: the key rows when value is key), into
  // the dP tile.
  __aicore__ inline void DpRows(const GlobalTensor<T> &dy, const LocalTensor<T> &v, int64_t width, uint32_t nt) {
    const SparseFlashAttentionTilingData &td = *td_;
    const int32_t dv = static_cast<int32_t>(td.vDim), g = static_cast<int32_t>(td.group);
    mmNT.SetOrgShape(g, static_cast<int32_t>(nt), dv, static_cast<int32_t>(SfaUbPitch<T>(width)),
                     static_cast<int32_t>(tilePitch_));
    mmNT.SetSingleShape(g, static_cast<int32_t>(nt), dv);
    mmNT.SetTensorA(dy);
    mmNT.SetTensorB(v, true);
    mmNT.IterateAll(dpGm_, 0);
    mmNT.End();
  }

  // d[q | q_rope] of the group's rows += dS K over the tile (the first tile sets them): the main
  // and rope parts of the key rows in UB as two products into the accumulator's two column ranges.
  __aicore__ inline void QueryGrads(const LocalTensor<T> &k, uint32_t nt, bool started) {
    const SparseFlashAttentionTilingData &td = *td_;
    const int32_t g = static_cast<int32_t>(td.group), n = static_cast<int32_t>(nt), qk = static_cast<int32_t>(td.qkDim);
    const int32_t pitch = static_cast<int32_t>(tilePitch_);
    mmNN.SetOrgShape(g, static_cast<int32_t>(SfaUbPitch<T>(td.dim)), pitch, n, qk);
    mmNN.SetSingleShape(g, static_cast<int32_t>(td.dim), n);
    mmNN.SetTensorA(dsGm_);
    mmNN.SetTensorB(k);
    mmNN.IterateAll(accGm_, started ? 1 : 0);
    if (td.ropeDim > 0) {
      mmNN.SetOrgShape(g, static_cast<int32_t>(SfaUbPitch<T>(td.ropeDim)), pitch, n, qk);
      mmNN.SetSingleShape(g, static_cast<int32_t>(td.ropeDim), n);
      mmNN.SetTensorB(k[td.nTile * SfaUbPitch<T>(td.dim)]);
      mmNN.IterateAll(accGm_[td.dim], started ? 1 : 0);
    }
    mmNN.End();
  }

  // softmax_max and 1 / softmax_sum (0 for a row without visible keys) of the group's rows of
  // (query row t, key head n2) into UB, and D = Σ dO ∘ O per row.
  __aicore__ inline void RowStats(int64_t t, int64_t n2, int64_t statOff) {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t dv = static_cast<uint32_t>(td.vDim);
    LocalTensor<float> red = red_.Get<float>(), dr = dRow_.Get<float>();
    LocalTensor<float> mx = statMax_.Get<float>(), sm = statSum_.Get<float>();
    for (int64_t h = 0; h < td.group; ++h) {
      const uint32_t r = static_cast<uint32_t>(h);
      mx.SetValue(r, maxGm_.GetValue(statOff + h));
      const float sum = sumGm_.GetValue(statOff + h);
      sm.SetValue(r, sum > 0.0f ? 1.0f / sum : 0.0f);
      const int64_t off = (t * td.heads1 + n2 * td.group + h) * td.vDim;
      LocalTensor<T> dy = inQ_.AllocTensor<T>();
      CopyIn(dy, dyGm_[off], dv);
      inQ_.EnQue(dy);
      dy = inQ_.DeQue<T>();
      LocalTensor<T> o = addQ_.AllocTensor<T>();
      CopyIn(o, oGm_[off], dv);
      addQ_.EnQue(o);
      o = addQ_.DeQue<T>();
      LocalTensor<float> a = ToFloat(dy, wideA_, dv), c = ToFloat(o, wideB_, dv);
      Mul(tmp_.Get<float>(), a, c, dv);
      inQ_.FreeTensor(dy);
      addQ_.FreeTensor(o);
      ReduceSum(red, tmp_.Get<float>(), wideA_.Get<float>(), dv);
      OrderPipes<HardEvent::V_S>(&pipe);
      dr.SetValue(r, red.GetValue(0));
      OrderPipes<HardEvent::S_V>(&pipe);
    }
  }

  // P = exp(scale S - max) / sum and dS = scale P ∘ (dP - D) of the group's rows over the tile (its
  // columns past the tile's keys are never read by the cube), into the workspace as T for the cube:
  // chunkRows_ rows at a time (RowsIn), each step one call for all of them, the rows' statistics
  // broadcast by Brcb.
  __aicore__ inline void Rebuild() {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t g = static_cast<uint32_t>(td.group), pitch = tilePitch_;
    const LocalTensor<float> mx = statMax_.Get<float>(), inv = statSum_.Get<float>(), dr = dRow_.Get<float>();
    const LocalTensor<float> brc = tmp_.Get<float>();
    // The statistics' scalar writes are done.
    OrderPipes<HardEvent::S_V>(&pipe);
    for (uint32_t r0 = 0; r0 < g; r0 += chunkRows_) {
      const uint32_t rows = g - r0 < chunkRows_ ? g - r0 : chunkRows_, n = rows * pitch;
      LocalTensor<float> p = inQ_.AllocTensor<float>();
      CopyIn(p, sGm_[uint64_t(r0) * pitch], n);
      inQ_.EnQue(p);
      p = inQ_.DeQue<float>();
      LocalTensor<float> ds = addQ_.AllocTensor<float>();
      CopyIn(ds, dpGm_[uint64_t(r0) * pitch], n);
      addQ_.EnQue(ds);
      ds = addQ_.DeQue<float>();
      Muls(p, p, td.scale, n);
      RowsBy<RowOp::kSub>(p, p, mx[r0], brc, rows, pitch);
      Exp(p, p, n);
      RowsBy<RowOp::kMul>(p, p, inv[r0], brc, rows, pitch);
      Emit(pGm_[uint64_t(r0) * pitch], p, n);
      RowsBy<RowOp::kSub>(ds, ds, dr[r0], brc, rows, pitch);
      Mul(ds, ds, p, n);
      Muls(ds, ds, td.scale, n);
      inQ_.FreeTensor(p);
      Emit(dsGm_[uint64_t(r0) * pitch], ds, n);
      addQ_.FreeTensor(ds);
    }
  }

  // A fp32 UB row into GM as T.
  __aicore__ inline void Emit(const GlobalTensor<T> &dst, const LocalTensor<float> &src, uint32_t len) {
    LocalTensor<T> o = outQ_.AllocTensor<T>();
    SfaNarrow(o, src, len);
    outQ_.EnQue(o);
    o = outQ_.DeQue<T>();
    CopyOut(dst, o, len);
    outQ_.FreeTensor(o);
  }

  // `len` fp32 accumulator elements into GM as T, or zeros when nothing was accumulated.
  __aicore__ inline void WriteRow(const GlobalTensor<T> &dst, const GlobalTensor<float> &acc, int64_t len,
                                  bool started) {
    const uint32_t n = static_cast<uint32_t>(len);
    if (!started) {
      CopyOut(dst, zero_.Get<T>(), n);
      return;
    }
    LocalTensor<float> x = inQ_.AllocTensor<float>();
    CopyIn(x, acc, n);
    inQ_.EnQue(x);
    x = inQ_.DeQue<float>();
    Emit(dst, x, n);
    inQ_.FreeTensor(x);
  }

  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECIN, 1> addQ_;
  TQue<QuePosition::VECOUT, 1> outQ_;
  SfaGatherQue gatherQ_;
  TBuf<TPosition::VECCALC> tmp_, wideA_, wideB_, zero_, red_, idx_, pos_, statMax_, statSum_, dRow_;
  SfaKeyCursor cursor_;
  GlobalTensor<int64_t> cumQ_, cumKv_;
  GlobalTensor<int32_t> idxGm_;
  GlobalTensor<T> qGm_, kGm_, vGm_, qRopeGm_, kRopeGm_, dyGm_, oGm_, dqGm_, dkGm_, dvGm_, dqRopeGm_, dkRopeGm_;
  GlobalTensor<T> pGm_, dsGm_, qgGm_, doGm_;
  uint32_t queBytes_ = 0;   // bytes of a gather queue buffer (SfaQueueBytes)
  uint32_t tilePitch_ = 0;  // columns between the rows of the S, dP, P and dS tiles (SfaGradTilePitch)
  uint32_t chunkRows_ = 0;  // rows of those tiles per vector pass of Rebuild (RowsIn)
  GlobalTensor<float> maxGm_, sumGm_, sGm_, dpGm_, accGm_, partGm_;
  __gm__ float *wsBase_ = nullptr;  // the first block's workspace
  uint64_t blockFloats_ = 0, partAt_ = 0;  // floats of a block's workspace; where its partial sums start
  const SparseFlashAttentionTilingData *td_ = nullptr;
};

template <typename T>
__aicore__ inline void Run(const SfagArgs &a, const SparseFlashAttentionTilingData &td) {
  SparseFlashAttentionGradKernel<T> op;
  // At kernel scope and outside any braces, before any InitBuffer: the vector core's client of
  // the cube core must live until the kernel ends.
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmNT, &td.mmNT, op.mmNN, &td.mmNN, op.mmTN, &td.mmTN);
  op.Init(a, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void sparse_flash_attention_grad(
    GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR sparseIndices, GM_ADDR dOut, GM_ADDR attentionIn,
    GM_ADDR softmaxMax, GM_ADDR softmaxSum, GM_ADDR queryRope, GM_ADDR keyRope, GM_ADDR actualSeqQ,
    GM_ADDR actualSeqKv, GM_ADDR dQuery, GM_ADDR dKey, GM_ADDR dValue, GM_ADDR dQueryRope, GM_ADDR dKeyRope,
    GM_ADDR workspace, GM_ADDR tiling) {
  // Cube and vector work in one kernel: one AIV per AIC, so a block is one core pair.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(SparseFlashAttentionTilingData);
  GET_TILING_DATA(td, tiling);
  const SfagArgs a{query,     key,     value,      sparseIndices, dOut,   attentionIn, softmaxMax,
                   softmaxSum, queryRope, keyRope, actualSeqQ,    actualSeqKv, dQuery, dKey,
                   dValue,    dQueryRope, dKeyRope, workspace};
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(a, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(a, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(a, td);
  }
}
