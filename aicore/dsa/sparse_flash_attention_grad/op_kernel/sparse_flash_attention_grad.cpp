// sparse_flash_attention_grad: d query, d key, d value, d query_rope, d key_rope of
// sparse_flash_attention, with P rebuilt from the forward's statistics over each query row's
// visible selected keys (sparse_flash_attention.cpp), D = rowsum(dO ∘ O), dS = scale·P∘(dO Vᵀ - D):
//   d[q | q_rope] = dS [K | K_rope],  dV_j = Σ P_j dO,  d[k | k_rope]_j = Σ dS_j [q | q_rope].
// Deterministic, without atomics, in two phases that meet at a SyncAll:
// - a query item (query row, key head) gathers its G query rows and, nTile visible keys at a
//   time, the selected key and value rows, recomputes S and dP with the cube and P, dS in UB in
//   fp32, accumulates d[q | q_rope] of its rows in order, and stores P and dS (as T) for the key
//   items: per query head row, one entry per visible selected key in the order the walk meets
//   them (its ordinal; -1 entries and invisible keys take none), in a store shared by all blocks;
// - a key item (key head, tile of keyTile keys of a sequence) owns the gradients of its keys: it
//   walks the sequence's query rows in order, and for each one whose list selects a visible key of
//   the tile records the row and builds its dense [G, keyTile] P and dS rows from the store (the
//   list walk gives each kept key's ordinal, a vector Gather picks the entries, zeros elsewhere);
//   for tokChunk such rows at a time, dV += Pᵀ dO, d[K | K_rope] += dSᵀ [Q | Q_rope] with the
//   cube, reading query, query_rope and dO in place when the rows are consecutive tokens with one
//   key head (the MLA case), else from rows gathered into the workspace.
// The key items thus take no S or dP products and no exp: the query items' recompute serves both.
// Rows are gathered into the workspace through a double-buffered UB queue, gatherRows rows per
// pass, each selected key row once for the group's G query heads. The key items' products span
// the whole key tile for every recorded row: with lists much sparser than a tile (k selected
// among S2 keys), that is about S2/k times the cube work of the selected pairs alone, the price of
// gathering the key gradients instead of scattering them.
#include "../../sparse_flash_attention/sparse_flash_attention_kernel.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// Source rows of a key-pass chunk: row j is head n2 * G + j % G of recorded query token j / G.
struct SfagChunkRows {
  LocalTensor<int32_t> tokens;
  int64_t heads1, head0, group;
  __aicore__ inline int64_t operator()(uint32_t j) const {
    return int64_t(tokens.GetValue(j / uint32_t(group))) * heads1 + head0 + int64_t(j) % group;
  }
};

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
  using Acc = MatmulType<TPosition::GM, CubeFormat::ND, float>;

 public:
  __aicore__ inline SparseFlashAttentionGradKernel() {}

  // Registered by Run with REGIST_MATMUL_OBJ before Init's InitBuffer calls.
  TPipe pipe;
  Matmul<ND, NDTrans, Acc> mmNT;  // S = Q Kᵀ, dP = dO Vᵀ
  Matmul<ND, ND, Acc> mmNN;       // dQ += dS K
  Matmul<NDTrans, ND, Acc> mmTN;  // dV += Pᵀ dO, dK += dSᵀ Q

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
    // The shared store of P and dS after all blocks' workspaces (SfaGradStoreFloats), then the
    // block's workspace, in SfaWorkspaceFloats' order.
    __gm__ float *user = (__gm__ float *)GetUserWorkspace(a.workspace);
    const uint64_t perBlock = ms_ops::SfaWorkspaceFloats(td, true), slots = ms_ops::SfaGradSlots(td);
    const uint64_t stored = uint64_t(td.qRows) * td.heads1 * slots;
    __gm__ T *store = (__gm__ T *)(user + GetBlockNum() * perBlock);
    pStoreGm_.SetGlobalBuffer(store, stored);
    // dS starts where P's part, rounded up to 32 bytes, ends.
    dsStoreGm_.SetGlobalBuffer(store + ms_ops::AlignUp(stored * sizeof(T), kUbAlign) / sizeof(T), stored);
    const uint64_t g = uint64_t(td.group), nTile = uint64_t(td.nTile);
    const uint64_t m = uint64_t(td.tokChunk) * td.group, k = uint64_t(td.keyTile > td.nTile ? td.keyTile : td.nTile);
    const uint64_t qk = uint64_t(td.qkDim), dv = uint64_t(td.vDim), wide = qk > dv ? qk : dv, rows = m > k ? m : k;
    __gm__ float *ws = user + GetBlockIdx() * perBlock;
    sGm_.SetGlobalBuffer(ws, g * nTile);
    dpGm_.SetGlobalBuffer(ws + g * nTile, g * nTile);
    ws += 2 * g * nTile;
    pGm_.SetGlobalBuffer((__gm__ T *)ws, m * k);
    dsGm_.SetGlobalBuffer((__gm__ T *)(ws + m * k), m * k);
    ws += 2 * m * k;
    accAGm_.SetGlobalBuffer(ws, rows * wide);
    accBGm_.SetGlobalBuffer(ws + rows * wide, rows * wide);
    ws += 2 * rows * wide;
    qgGm_.SetGlobalBuffer((__gm__ T *)ws, m * qk);
    kgGm_.SetGlobalBuffer((__gm__ T *)(ws + m * qk), k * qk);
    vgGm_.SetGlobalBuffer((__gm__ T *)(ws + m * qk + k * qk), k * dv);
    vTile_ = td.valueIsKey ? kgGm_ : vgGm_;
    vStride_ = static_cast<int32_t>(td.valueIsKey ? td.qkDim : td.vDim);
    dogGm_.SetGlobalBuffer((__gm__ T *)(ws + m * qk + k * qk + k * dv), m * dv);

    const int64_t len = int64_t(wide > k ? wide : k);
    const uint32_t row = UbBytes(len, 4);
    pipe.InitBuffer(inQ_, 2, row);
    pipe.InitBuffer(addQ_, 1, row);
    pipe.InitBuffer(outQ_, 1, row);
    pipe.InitBuffer(tmp_, row);
    pipe.InitBuffer(wideA_, row);
    pipe.InitBuffer(wideB_, row);
    const int64_t mainDim = td.dim > td.vDim ? td.dim : td.vDim;
    pipe.InitBuffer(gatherQ_, 2, static_cast<uint32_t>(ms_ops::SfaGatherBytes(td.gatherRows, mainDim, td.ropeDim, sizeof(T))));
    pipe.InitBuffer(zero_, UbBytes(int64_t(wide), sizeof(T)));
    pipe.InitBuffer(red_, kUbAlign);
    pipe.InitBuffer(idx_, UbBytes(td.idxChunk, 4));
    pipe.InitBuffer(pos_, UbBytes(td.nTile, 4));
    pipe.InitBuffer(slot_, UbBytes(td.keyTile, 4));
    pipe.InitBuffer(offs_, UbBytes(td.keyTile, 4));
    pipe.InitBuffer(tokens_, UbBytes(td.tokChunk, 4));
    pipe.InitBuffer(statMax_, UbBytes(td.group, 4));
    pipe.InitBuffer(statSum_, UbBytes(td.group, 4));
    pipe.InitBuffer(dRow_, UbBytes(td.group, 4));
    // The window a stored row is gathered from: a zero block (what unkept keys pick), a key tile's
    // previous values (what keys outside a later window keep), then the window's ordinals.
    prevAt_ = kUbAlign / sizeof(T);
    segAt_ = prevAt_ + UbBytes(td.keyTile, sizeof(T)) / sizeof(T);
    pipe.InitBuffer(window_, segAt_ * sizeof(T) + UbBytes(ms_ops::SfaGradWindow(td), sizeof(T)));
    cursor_.Init(&pipe, idx_, td);
    // All-zero bytes are 0 in every float type.
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(UbBytes(int64_t(wide), sizeof(T)) / 4));
    Duplicate(window_.Get<float>(), 0.0f, static_cast<int32_t>(kUbAlign / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
  }

  __aicore__ inline void Process() {
    const SparseFlashAttentionTilingData &td = *td_;
    // Without rope parts d query_rope / d key_rope are the [1] placeholders' zeros.
    if (td.ropeDim == 0 && GetBlockIdx() == 0) {
      CopyOut(dqRopeGm_, zero_.Get<T>(), 1);
      CopyOut(dkRopeGm_, zero_.Get<T>(), 1);
    }
    const int64_t qItems = td.qRows * td.heads2, kItems = td.kTiles * td.heads2;
    for (int64_t it = GetBlockIdx(); it < qItems; it += GetBlockNum()) QueryItem(it / td.heads2, it % td.heads2);
    // Every block's stored P and dS have landed before any key item reads them.
    PipeBarrier<PIPE_ALL>();
    SyncAll();
    // A sequence's earlier key tiles are seen by more query rows: dealt from the first down.
    for (int64_t round = 0, it; (it = DealtItem(round)) < kItems; ++round) KeyItem(it / td.heads2, it % td.heads2);
    mmNT.End();
    mmNN.End();
    mmTN.End();
  }

 private:
  // ---- query items: d[q | q_rope] of the group's rows of query row t ----
  __aicore__ inline void QueryItem(int64_t t, int64_t n2) {
    const SparseFlashAttentionTilingData &td = *td_;
    const SfaSeq sq = SfaSequenceOfRow(td, cumQ_, cumKv_, t);
    const uint32_t g = static_cast<uint32_t>(td.group), qk = static_cast<uint32_t>(td.qkDim);
    const int64_t head0 = t * td.heads1 + n2 * td.group;
    // The previous item's reads of the workspace and UB rows are done.
    PipeBarrier<PIPE_ALL>();
    const uint32_t batch = static_cast<uint32_t>(td.gatherRows);
    SfaGatherRows(gatherQ_, batch, qgGm_, qGm_, qRopeGm_, td.dim, td.ropeDim, g, SfaLinearRows{head0, 1});
    RowStats(t, n2, SfaStatBase(td, sq, t, n2));
    cursor_.Start(idxGm_[(t * td.heads2 + n2) * td.topK], SfaVisible(td, sq, t - sq.qStart));
    const LocalTensor<int32_t> pos = pos_.Get<int32_t>();
    const GlobalTensor<int32_t> noTable;
    const SfaSelectedRows keys{&td, &noTable, &sq, pos, n2};
    bool started = false;
    for (uint64_t ordinal = 0;; ordinal += uint64_t(td.nTile)) {
      const uint32_t nt = cursor_.Next(pos, static_cast<uint32_t>(td.nTile));
      if (nt == 0) break;
      PipeBarrier<PIPE_ALL>();
      SfaGatherRows(gatherQ_, batch, kgGm_, kGm_, kRopeGm_, td.dim, td.ropeDim, nt, keys);
      if (!td.valueIsKey) SfaGatherRows(gatherQ_, batch, vgGm_, vGm_, vGm_, td.vDim, 0, nt, keys);
      // The cube reads the gathered rows from GM: the copies out must have landed.
      PipeBarrier<PIPE_ALL>();
      ScoreRows(dyGm_[head0 * td.vDim], nt);
      Rebuild(head0, ordinal, nt);
      PipeBarrier<PIPE_ALL>();
      mmNN.SetOrgShape(g, qk, nt, nt);
      mmNN.SetSingleShape(g, qk, nt);
      mmNN.SetTensorA(dsGm_);
      mmNN.SetTensorB(kgGm_);
      mmNN.IterateAll(accAGm_, started ? 1 : 0, true);
      mmNN.End();
      started = true;
      if (nt < td.nTile) break;
    }
    PipeBarrier<PIPE_ALL>();
    for (uint32_t h = 0; h < g; ++h) {
      const int64_t r = head0 + h;
      WriteRow(dqGm_[r * td.dim], accAGm_[uint64_t(h) * qk], td.dim, started);
      if (td.ropeDim > 0) WriteRow(dqRopeGm_[r * td.ropeDim], accAGm_[uint64_t(h) * qk + td.dim], td.ropeDim, started);
    }
  }

  // ---- key items: dK, dK_rope, dV of keys [k0, k0 + nk) of key head n2 ----
  __aicore__ inline void KeyItem(int64_t tile, int64_t n2) {
    const SparseFlashAttentionTilingData &td = *td_;
    SfaSeq sq;
    int64_t k0;
    LocateKeyTile(tile, sq, k0);
    // BSND tiles span the padded S2 (the tiling cannot see the lengths on the device): keys past
    // the sequence's length are never visible and get zero gradients.
    const int64_t nk = Min64(td.keyTile, (td.packed ? sq.s2 : td.seq2) - k0);
    // Query i sees keys up to i + S2 - S1 + SfaAhead: earlier rows see none of the tile.
    int64_t first = k0 - (sq.s2 - sq.s1) - SfaAhead(td);
    if (first < 0) first = 0;
    const LocalTensor<int32_t> slot = slot_.Get<int32_t>();
    const LocalTensor<int32_t> tokens = tokens_.Get<int32_t>();
    bool started = false;
    uint32_t count = 0;
    // The previous item's reads of the workspace and UB rows are done.
    PipeBarrier<PIPE_ALL>();
    for (int64_t i = first; i < sq.s1; ++i) {
      const int64_t t = sq.qStart + i;
      // The previous row's ordinals have been read before they are cleared.
      OrderPipes<HardEvent::S_V>(&pipe);
      Duplicate(slot, int32_t(-1), static_cast<int32_t>(nk));
      OrderPipes<HardEvent::V_S>(&pipe);
      cursor_.Start(idxGm_[(t * td.heads2 + n2) * td.topK], SfaVisible(td, sq, i));
      const SfaRange kept = cursor_.Slots(slot, k0, nk);
      if (kept.first > kept.last) continue;
      const int64_t row = t * td.heads1 + n2 * td.group, at = int64_t(count) * td.group * nk;
      DenseRows(pGm_[at], pStoreGm_, row, kept, static_cast<uint32_t>(nk));
      DenseRows(dsGm_[at], dsStoreGm_, row, kept, static_cast<uint32_t>(nk));
      tokens.SetValue(count++, static_cast<int32_t>(t));
      if (count == td.tokChunk) {
        Chunk(n2, count, static_cast<uint32_t>(nk), started);
        started = true;
        count = 0;
      }
    }
    if (count > 0) {
      Chunk(n2, count, static_cast<uint32_t>(nk), started);
      started = true;
    }
    PipeBarrier<PIPE_ALL>();
    const uint64_t qk = uint64_t(td.qkDim);
    for (int64_t j = 0; j < nk; ++j) {
      const int64_t r = (sq.kStart + k0 + j) * td.heads2 + n2;
      WriteRow(dkGm_[r * td.dim], accBGm_[uint64_t(j) * qk], td.dim, started);
      if (td.ropeDim > 0) WriteRow(dkRopeGm_[r * td.ropeDim], accBGm_[uint64_t(j) * qk + td.dim], td.ropeDim, started);
      WriteRow(dvGm_[r * td.vDim], accAGm_[uint64_t(j) * td.vDim], td.vDim, started);
    }
  }

  // The G dense rows [nk] (from `dst`, nk apart) of stored rows row.. of `store` over the key
  // tile: key j takes the entry of its ordinal slot_[j] (within `kept`), or 0 when the row did not
  // keep it (-1). The ordinals are read kSfaSlotWindow at a time; each window's Gather picks a
  // kept key's entry from the window, else the value the previous windows gave it (0 at first).
  __aicore__ inline void DenseRows(const GlobalTensor<T> &dst, const GlobalTensor<T> &store, int64_t row,
                                   const SfaRange &kept, uint32_t nk) {
    const SparseFlashAttentionTilingData &td = *td_;
    const LocalTensor<int32_t> slot = slot_.Get<int32_t>();
    const LocalTensor<uint32_t> offs = offs_.Get<uint32_t>();
    const LocalTensor<T> win = window_.Get<T>();
    const int64_t slots = int64_t(ms_ops::SfaGradSlots(td)), width = ms_ops::SfaGradWindow(td);
    for (int64_t w0 = kept.first; w0 <= kept.last; w0 += width) {
      const int64_t len = Min64(width, kept.last - w0 + 1);
      const bool later = w0 > kept.first;
      // The previous Gathers have read the offsets, and the previous window's rows have left.
      OrderPipes<HardEvent::V_S>(&pipe);
      if (later) OrderPipes<HardEvent::MTE3_MTE2>(&pipe);
      for (uint32_t j = 0; j < nk; ++j) {
        const int64_t o = slot.GetValue(j);
        const uint32_t e = o >= w0 && o < w0 + len ? static_cast<uint32_t>(segAt_ + (o - w0))
                           : later                 ? prevAt_ + j
                                                   : 0u;
        offs.SetValue(j, e * static_cast<uint32_t>(sizeof(T)));
      }
      OrderPipes<HardEvent::S_V>(&pipe);
      for (int64_t h = 0; h < td.group; ++h) {
        const GlobalTensor<T> out = dst[uint64_t(h) * nk];
        // The previous Gather is done with the window before it is refilled.
        OrderPipes<HardEvent::V_MTE2>(&pipe);
        CopyIn(win[segAt_], store[uint64_t(row + h) * slots + w0], static_cast<uint32_t>(len));
        if (later) CopyIn(win[prevAt_], out, nk);
        OrderPipes<HardEvent::MTE2_V>(&pipe);
        LocalTensor<T> o = outQ_.AllocTensor<T>();
        Gather(o, win, offs, 0u, nk);
        outQ_.EnQue(o);
        o = outQ_.DeQue<T>();
        CopyOut(out, o, nk);
        outQ_.FreeTensor(o);
      }
    }
  }

  // Sequence and first key of key tile `tile`, counting the tiles of all sequences in order.
  __aicore__ inline void LocateKeyTile(int64_t tile, SfaSeq &sq, int64_t &k0) {
    const SparseFlashAttentionTilingData &td = *td_;
    if (!td.packed) {
      const int64_t per = (td.seq2 + td.keyTile - 1) / td.keyTile;
      sq = SfaSequence(td, cumQ_, cumKv_, tile / per);
      k0 = (tile % per) * td.keyTile;
      return;
    }
    for (int64_t b = 0; b < td.batch; ++b) {
      sq = SfaSequence(td, cumQ_, cumKv_, b);
      const int64_t n = (sq.s2 + td.keyTile - 1) / td.keyTile;
      if (tile < n) {
        k0 = tile * td.keyTile;
        return;
      }
      tile -= n;
    }
    k0 = 0;
  }

  // The `count` recorded query rows against the key tile, their dense P and dS rows built:
  // accumulate dV and d[K | K_rope] from their query and dO rows. Consecutive tokens with one key
  // head (G = N1) have their rows one block of query, query_rope and dO each: the products read
  // them in place, d K and d K_rope into their columns of the accumulator; otherwise the rows are
  // gathered into the workspace first.
  __aicore__ inline void Chunk(int64_t n2, uint32_t count, uint32_t nk, bool started) {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t rows = count * static_cast<uint32_t>(td.group), qk = static_cast<uint32_t>(td.qkDim);
    const uint32_t dv = static_cast<uint32_t>(td.vDim);
    const LocalTensor<int32_t> tokens = tokens_.Get<int32_t>();
    // The dense rows have landed and the previous chunk's matmuls are done with the gathered rows.
    PipeBarrier<PIPE_ALL>();
    const uint8_t add = started ? 1 : 0;
    const int64_t t0 = tokens.GetValue(0);
    if (td.group == td.heads1 && int64_t(tokens.GetValue(count - 1)) - t0 == int64_t(count) - 1) {
      const int64_t r0 = t0 * td.heads1;
      AddRows(nk, dv, rows, pGm_, dyGm_[r0 * td.vDim], accAGm_, dv, add);
      AddRows(nk, static_cast<uint32_t>(td.dim), rows, dsGm_, qGm_[r0 * td.dim], accBGm_, qk, add);
      if (td.ropeDim > 0)
        AddRows(nk, static_cast<uint32_t>(td.ropeDim), rows, dsGm_, qRopeGm_[r0 * td.ropeDim], accBGm_[td.dim], qk,
                add);
    } else {
      const uint32_t batch = static_cast<uint32_t>(td.gatherRows);
      const SfagChunkRows chunkRows{tokens, td.heads1, n2 * td.group, td.group};
      SfaGatherRows(gatherQ_, batch, qgGm_, qGm_, qRopeGm_, td.dim, td.ropeDim, rows, chunkRows);
      SfaGatherRows(gatherQ_, batch, dogGm_, dyGm_, dyGm_, td.vDim, 0, rows, chunkRows);
      // The cube reads the gathered rows from GM: the copies out must have landed.
      PipeBarrier<PIPE_ALL>();
      AddRows(nk, dv, rows, pGm_, dogGm_, accAGm_, dv, add);
      AddRows(nk, qk, rows, dsGm_, qgGm_, accBGm_, qk, add);
    }
    // The next rows' dense tiles overwrite what the products read.
    PipeBarrier<PIPE_ALL>();
  }

  // C [nk x n] (rows ldc apart) = or, with add, += Aᵀ B: A the dense [rows, nk] tile, B `rows`
  // rows of n elements, compact.
  __aicore__ inline void AddRows(uint32_t nk, uint32_t n, uint32_t rows, const GlobalTensor<T> &a,
                                 const GlobalTensor<T> &b, const GlobalTensor<float> &c, uint32_t ldc, uint8_t add) {
    mmTN.SetOrgShape(nk, n, rows, rows, ldc);
    mmTN.SetSingleShape(nk, n, rows);
    mmTN.SetTensorA(a, true);
    mmTN.SetTensorB(b);
    mmTN.IterateAll(c, add);
    mmTN.End();
  }

  // S = Q Kᵀ and dP = dO Vᵀ of the group's G gathered query rows (dO rows vDim apart from `dy`)
  // against the nt gathered keys and values, into the S and dP tiles. G rows at a time, the
  // forward's shape: the recomputed scores must equal the forward's to the bit, or P drifts from
  // the statistics.
  __aicore__ inline void ScoreRows(const GlobalTensor<T> &dy, uint32_t nt) {
    const int32_t qk = static_cast<int32_t>(td_->qkDim), dv = static_cast<int32_t>(td_->vDim);
    const int32_t g = static_cast<int32_t>(td_->group);
    mmNT.SetOrgShape(g, nt, qk, qk);
    mmNT.SetSingleShape(g, nt, qk);
    mmNT.SetTensorA(qgGm_);
    mmNT.SetTensorB(kgGm_, true);
    mmNT.IterateAll(sGm_, 0, true);
    mmNT.End();
    mmNT.SetOrgShape(g, nt, dv, vStride_);
    mmNT.SetSingleShape(g, nt, dv);
    mmNT.SetTensorA(dy);
    mmNT.SetTensorB(vTile_, true);
    mmNT.IterateAll(dpGm_, 0, true);
    mmNT.End();
  }

  // softmax_max / softmax_sum of the group's rows of (query row t, key head n2) into UB, and
  // D = Σ dO ∘ O per row.
  __aicore__ inline void RowStats(int64_t t, int64_t n2, int64_t statOff) {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t dv = static_cast<uint32_t>(td.vDim);
    LocalTensor<float> red = red_.Get<float>(), dr = dRow_.Get<float>();
    LocalTensor<float> mx = statMax_.Get<float>(), sm = statSum_.Get<float>();
    for (int64_t h = 0; h < td.group; ++h) {
      const uint32_t r = static_cast<uint32_t>(h);
      mx.SetValue(r, maxGm_.GetValue(statOff + h));
      sm.SetValue(r, sumGm_.GetValue(statOff + h));
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

  // P = exp(scale S - max) / sum and dS = scale P ∘ (dP - D) of the group's rows (head rows
  // head0..) over the tile of nt keys whose first is the walk's `ordinal`-th: dS into the
  // workspace for dQ, both into the store for the key items, as T.
  __aicore__ inline void Rebuild(int64_t head0, uint64_t ordinal, uint32_t nt) {
    const SparseFlashAttentionTilingData &td = *td_;
    const LocalTensor<float> mx = statMax_.Get<float>(), sm = statSum_.Get<float>(), dr = dRow_.Get<float>();
    const uint64_t slots = ms_ops::SfaGradSlots(td);
    // The statistics' scalar writes are done.
    OrderPipes<HardEvent::S_V>(&pipe);
    for (uint32_t r = 0; r < static_cast<uint32_t>(td.group); ++r) {
      OrderPipes<HardEvent::V_S>(&pipe);
      const float sum = sm.GetValue(r), inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      const float rowMax = mx.GetValue(r), di = dr.GetValue(r);
      const uint64_t stored = uint64_t(head0 + r) * slots + ordinal;
      LocalTensor<float> p = inQ_.AllocTensor<float>();
      CopyIn(p, sGm_[uint64_t(r) * nt], nt);
      inQ_.EnQue(p);
      p = inQ_.DeQue<float>();
      LocalTensor<float> ds = addQ_.AllocTensor<float>();
      CopyIn(ds, dpGm_[uint64_t(r) * nt], nt);
      addQ_.EnQue(ds);
      ds = addQ_.DeQue<float>();
      Muls(p, p, td.scale, nt);
      Adds(p, p, -rowMax, nt);
      Exp(p, p, nt);
      Muls(p, p, inv, nt);
      Emit(pStoreGm_[stored], p, nt);
      Adds(ds, ds, -di, nt);
      Mul(ds, ds, p, nt);
      Muls(ds, ds, td.scale, nt);
      inQ_.FreeTensor(p);
      Emit(dsGm_[uint64_t(r) * nt], ds, nt);
      Emit(dsStoreGm_[stored], ds, nt);
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
  TBuf<TPosition::VECCALC> tmp_, wideA_, wideB_, zero_, red_, idx_, pos_, slot_, offs_, tokens_, statMax_,
      statSum_, dRow_, window_;
  SfaKeyCursor cursor_;
  GlobalTensor<int64_t> cumQ_, cumKv_;
  GlobalTensor<int32_t> idxGm_;
  GlobalTensor<T> qGm_, kGm_, vGm_, qRopeGm_, kRopeGm_, dyGm_, oGm_, dqGm_, dkGm_, dvGm_, dqRopeGm_, dkRopeGm_;
  GlobalTensor<T> pGm_, dsGm_, qgGm_, kgGm_, vgGm_, dogGm_;
  GlobalTensor<T> pStoreGm_, dsStoreGm_;  // [qRows * heads1, SfaGradSlots], shared by all blocks
  GlobalTensor<T> vTile_;  // the gathered value rows, vStride_ apart (vgGm_, or kgGm_ when value is key)
  int32_t vStride_ = 0;
  uint32_t prevAt_ = 0, segAt_ = 0;  // elements of window_ where the tile's values and the ordinals start
  GlobalTensor<float> maxGm_, sumGm_, sGm_, dpGm_, accAGm_, accBGm_;
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
