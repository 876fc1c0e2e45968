// The lightning indexer entries' common part: query, key and weights against the layouts, and the
// sequence lengths (per-batch for BSND, cumulative for TND), read on the host before a launch.
#ifndef MS_OPS_DSA_DSA_HOST_H_
#define MS_OPS_DSA_DSA_HOST_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "host_entry.h"
#include "lightning_indexer_grad_tiling.h"

namespace ms_ops {

struct DsaIndexerShape {
  bool packed = false;  // TND
  int64_t batch = 0, seq1 = 0, seq2 = 0, tokens1 = 0, tokens2 = 0;
  int64_t n1 = 0, n2 = 0, dim = 0;
  uint32_t qLenMode = 0, kLenMode = 0;  // 0 none, 1 per batch, 2 cumulative
  int64_t blockSize = 0, maxBlocks = 0;  // paged keys (PA_BSND)
};

// The indexer's output shape: query's leading dims, then [N2, k]. -1 where unknown.
inline Shape DsaIndexerOutShape(const Shape &query, const Shape &key, int64_t k) {
  if (query.size() < 3 || key.size() < 3) return kDynRank;
  Shape out(query.begin(), query.end() - 2);
  out.push_back(key[key.size() - 2]);
  out.push_back(k);
  return out;
}

// Checks one lengths input: `count` entries, per-batch in [0, limit] or cumulative ending at limit.
inline void DsaCheckLengths(const Arg &a, int64_t count, int64_t limit, bool cumulative) {
  RequireDType(a, DType::kI64, "int64");
  Require(a.shape.size() == 1 && a.shape[0] == count, a.name,
          "must hold " + std::to_string(count) + " lengths, got shape " + ShapeStr(a.shape));
  const auto *v = reinterpret_cast<const int64_t *>(a.data);
  int64_t prev = 0;
  for (int64_t b = 0; b < count; ++b) {
    if (cumulative) {
      if (v[b] < prev)
        Reject(a.name, "must be non-decreasing cumulative lengths, entry " + std::to_string(b) + " is " +
                           std::to_string(v[b]) + " after " + std::to_string(prev));
      prev = v[b];
    } else if (v[b] < 0 || v[b] > limit) {
      Reject(a.name, "entry " + std::to_string(b) + " is " + std::to_string(v[b]) + ", outside [0, " +
                         std::to_string(limit) + "]");
    }
  }
  if (cumulative)
    Require(prev == limit, a.name, "must end at the packed length " + std::to_string(limit) + ", got " +
                                       std::to_string(prev));
}

// Paged keys [blocks, blockSize, N2, D] through block_table [B, maxBlocks] (int32) with per-batch
// key lengths: every used table entry names a block, and the table covers every length.
inline void DsaCheckPaged(DsaIndexerShape &s, const Arg &k, const Arg &kLen, const Arg &table) {
  Require(k.shape.size() == 4, k.name, "must be 4-D [blocks, block_size, N2, D] for PA_BSND, got " + ShapeStr(k.shape));
  RequireDType(table, DType::kI32, "int32");
  Require(table.shape.size() == 2 && table.shape[0] == s.batch, table.name,
          "must be [batch, max_blocks] with batch " + std::to_string(s.batch) + ", got " + ShapeStr(table.shape));
  s.blockSize = k.shape[1];
  s.maxBlocks = table.shape[1];
  Require(s.blockSize >= 1, k.name, "block size must be >= 1, got " + ShapeStr(k.shape));
  DsaCheckLengths(kLen, s.batch, std::numeric_limits<int64_t>::max(), false);
  const auto *len = reinterpret_cast<const int64_t *>(kLen.data);
  const auto *t = reinterpret_cast<const int32_t *>(table.data);
  for (int64_t b = 0; b < s.batch; ++b) {
    Require(len[b] <= s.maxBlocks * s.blockSize, table.name,
            "is too short: " + std::to_string(s.maxBlocks) + " blocks of " + std::to_string(s.blockSize) +
                " keys cannot hold batch " + std::to_string(b) + "'s " + std::to_string(len[b]) + " keys");
    for (int64_t j = 0; j * s.blockSize < len[b]; ++j) {
      const int32_t v = t[b * s.maxBlocks + j];
      if (v < 0 || v >= k.shape[0])
        Reject(table.name, "entry [" + std::to_string(b) + ", " + std::to_string(j) + "] is " + std::to_string(v) +
                               ", outside [0, " + std::to_string(k.shape[0]) + ")");
    }
  }
}

// `table` is the block_table of a paged key (PA_BSND), null for the ops without paged keys.
inline DsaIndexerShape DsaReadIndexer(mindspore::AotExtra *extra, const Arg &q, const Arg &k, const Arg &w,
                                      const Arg &qLen, const Arg &kLen, const Arg *table = nullptr) {
  const std::string lq = ReadAttr<std::string>(extra, "layout_query");
  const std::string lk = ReadAttr<std::string>(extra, "layout_key");
  Require(lq == "BSND" || lq == "TND", "layout_query", "must be BSND or TND, got " + lq);
  const bool paged = table != nullptr && lk == "PA_BSND";
  Require(lk == lq || paged, "layout_key",
          "must equal layout_query (" + lq + ")" + (table ? " or be PA_BSND" : " (paged keys have no gradient)") +
              ", got " + lk);
  RequireFloat(q);
  Require(k.dtype == q.dtype, k.name, std::string("dtype must be query's ") + q.dtypeName + ", got " + k.dtypeName);
  Require(w.dtype == q.dtype, w.name, std::string("dtype must be query's ") + q.dtypeName + ", got " + w.dtypeName);
  DsaIndexerShape s;
  s.packed = lq == "TND";
  const size_t rank = s.packed ? 3 : 4;
  Require(q.shape.size() == rank, q.name, "must be " + std::to_string(rank) + "-D for layout " + lq + ", got " +
                                              ShapeStr(q.shape));
  const size_t krank = paged ? 4 : rank;
  Require(k.shape.size() == krank, k.name, "must be " + std::to_string(krank) + "-D for layout " + lk + ", got " +
                                               ShapeStr(k.shape));
  s.n1 = q.shape[rank - 2];
  s.dim = q.shape[rank - 1];
  s.n2 = k.shape[krank - 2];
  Require(k.shape[krank - 1] == s.dim, "key", "head dim must be query's " + std::to_string(s.dim) + ", got " +
                                                 ShapeStr(k.shape));
  Require(s.n2 >= 1 && s.n1 % s.n2 == 0, "key", "heads (" + std::to_string(s.n2) +
                                                    ") must divide query's heads (" + std::to_string(s.n1) + ")");
  Shape wantW(q.shape.begin(), q.shape.end() - 1);
  RequireShape(w, wantW, "query's leading dims");
  const bool hasQ = ReadAttr<bool>(extra, "has_lengths_query"), hasK = ReadAttr<bool>(extra, "has_lengths_key");
  if (s.packed) {
    Require(hasQ, qLen.name, "is required with layout TND (cumulative lengths)");
    s.batch = qLen.shape.empty() ? 0 : qLen.shape[0];
    s.tokens1 = q.shape[0];
    DsaCheckLengths(qLen, s.batch, s.tokens1, true);
    s.qLenMode = 2;
  } else {
    s.batch = q.shape[0];
    s.seq1 = q.shape[1];
    s.tokens1 = s.batch * s.seq1;
    if (hasQ) DsaCheckLengths(qLen, s.batch, s.seq1, false);
    s.qLenMode = hasQ ? 1 : 0;
  }
  if (paged) {
    Require(hasK, kLen.name, "is required with layout_key PA_BSND (per-batch key lengths)");
    DsaCheckPaged(s, k, kLen, *table);
    s.tokens2 = k.shape[0] * k.shape[1];
    s.kLenMode = 1;
  } else if (s.packed) {
    Require(hasK, kLen.name, "is required with layout TND (cumulative lengths)");
    s.tokens2 = k.shape[0];
    DsaCheckLengths(kLen, s.batch, s.tokens2, true);
    s.kLenMode = 2;
  } else {
    s.seq2 = k.shape[1];
    Require(k.shape[0] == s.batch, "key", "batch must be query's " + std::to_string(s.batch) + ", got " +
                                              ShapeStr(k.shape));
    s.tokens2 = s.batch * s.seq2;
    if (hasK) DsaCheckLengths(kLen, s.batch, s.seq2, false);
    s.kLenMode = hasK ? 1 : 0;
  }
  return s;
}

// The indexer problem every DSA entry tiles from: the shape read above and the dtype of `q`
// (top-k, sparse mode and paged keys are each entry's own).
inline LightningIndexerProblem DsaIndexerProblem(const DsaIndexerShape &s, const Arg &q) {
  LightningIndexerProblem p;
  p.batch = s.batch;
  p.seq1 = s.packed ? 0 : s.seq1;
  p.seq2 = s.packed ? 0 : s.seq2;
  p.tokens1 = s.tokens1;
  p.qLenMode = s.qLenMode;
  p.kLenMode = s.kLenMode;
  p.n1 = s.n1;
  p.n2 = s.n2;
  p.dim = s.dim;
  p.dataType = ToFloatEnum<LiFloat>(q.dtype);
  return p;
}

// Per batch (first query row, rows, keys), as the kernels walk them.
struct DsaBatch {
  int64_t qStart, rows, keys;
};

inline std::vector<DsaBatch> DsaBatches(const DsaIndexerShape &s, const Arg &qLen, const Arg &kLen) {
  std::vector<DsaBatch> out;
  const auto *ql = reinterpret_cast<const int64_t *>(qLen.data);
  const auto *kl = reinterpret_cast<const int64_t *>(kLen.data);
  for (int64_t b = 0; b < s.batch; ++b) {
    if (s.packed) {
      const int64_t q0 = b > 0 ? ql[b - 1] : 0, k0 = b > 0 ? kl[b - 1] : 0;
      out.push_back({q0, ql[b] - q0, kl[b] - k0});
    } else {
      out.push_back({b * s.seq1, s.seq1, s.kLenMode == 1 ? kl[b] : s.seq2});
    }
  }
  return out;
}

// sparse_indices [rows, N2, k]: each entry -1 or a key of its batch, no key twice in a row.
inline void DsaCheckIndices(const Arg &idx, const DsaIndexerShape &s, const Arg &qLen, const Arg &kLen, int64_t k) {
  RequireDType(idx, DType::kI32, "int32");
  const auto *v = reinterpret_cast<const int32_t *>(idx.data);
  std::vector<int64_t> seen;
  int64_t stamp = 0;
  for (const DsaBatch &b : DsaBatches(s, qLen, kLen)) {
    if (int64_t(seen.size()) < b.keys) seen.assign(b.keys, -1);
    for (int64_t r = b.qStart; r < b.qStart + b.rows; ++r)
      for (int64_t n = 0; n < s.n2; ++n, ++stamp) {
        for (int64_t j = 0; j < k; ++j) {
          const int64_t x = v[(r * s.n2 + n) * k + j];
          if (x == -1) continue;
          if (x < 0 || x >= b.keys)
            Reject(idx.name, "entry " + std::to_string(x) + " at token " + std::to_string(r) + " is outside [-1, " +
                                 std::to_string(b.keys) + ")");
          if (seen[x] == stamp)
            Reject(idx.name, "key " + std::to_string(x) + " is selected twice at token " + std::to_string(r));
          seen[x] = stamp;
        }
      }
  }
}

// The KL-loss kernels' main attention: query/key (and rope) and the statistics against the
// indexer's problem, from the arguments in sparse_lightning_indexer_grad_kl_loss's order (query,
// key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum, query_rope,
// key_rope, ...).
inline DsaMainAttention DsaReadMain(mindspore::AotExtra *extra, const std::vector<Arg> &a, const DsaIndexerShape &s) {
  const Arg &q = a[0], &k = a[1], &qi = a[2], &ki = a[3];
  const size_t rank = qi.shape.size();
  for (const Arg *t : {&q, &k}) {
    Require(t->dtype == qi.dtype, t->name, std::string("dtype must be query_index's ") + qi.dtypeName);
    Require(t->shape.size() == rank, t->name, "must have query_index's rank " + std::to_string(rank) + ", got " +
                                                  ShapeStr(t->shape));
  }
  Require(Shape(q.shape.begin(), q.shape.end() - 2) == Shape(qi.shape.begin(), qi.shape.end() - 2), "query",
          "leading dims must be query_index's, got " + ShapeStr(q.shape));
  Require(Shape(k.shape.begin(), k.shape.end() - 2) == Shape(ki.shape.begin(), ki.shape.end() - 2), "key",
          "leading dims must be key_index's, got " + ShapeStr(k.shape));
  DsaMainAttention m;
  m.n1 = q.shape[rank - 2];
  m.dim = q.shape[rank - 1];
  m.n2 = k.shape[rank - 2];
  Require(k.shape[rank - 1] == m.dim, "key", "head dim must be query's " + std::to_string(m.dim));
  Require(m.n2 == s.n2, "key", "heads (" + std::to_string(m.n2) + ") must equal key_index's (" +
                                   std::to_string(s.n2) + "): sparse_indices select per key head");
  Require(m.n1 % m.n2 == 0, "query", "heads (" + std::to_string(m.n1) + ") must be a multiple of key's (" +
                                         std::to_string(m.n2) + ")");
  if (ReadAttr<bool>(extra, "has_rope")) {
    const Arg &qr = a[8], &kr = a[9];
    for (const Arg *t : {&qr, &kr})
      Require(t->dtype == qi.dtype && t->shape.size() == rank, t->name,
              "must have query_index's dtype and rank, got " + std::string(t->dtypeName) + " " + ShapeStr(t->shape));
    m.ropeDim = qr.shape[rank - 1];
    Shape wantQ(q.shape.begin(), q.shape.end() - 1), wantK(k.shape.begin(), k.shape.end() - 1);
    wantQ.push_back(m.ropeDim);
    wantK.push_back(m.ropeDim);
    RequireShape(qr, wantQ, "query's dims with the rope dim");
    RequireShape(kr, wantK, "key's dims with the rope dim");
  }
  m.scale = ReadAttr<float>(extra, "scale_value");
  const int64_t g = m.n1 / m.n2;
  const Shape stats = s.packed ? Shape{m.n2, s.tokens1, g} : Shape{s.batch, m.n2, s.seq1, g};
  for (const Arg *t : {&a[6], &a[7]}) {
    RequireDType(*t, DType::kF32, "float32");
    RequireShape(*t, stats, s.packed ? "(N2, T1, G)" : "(B, N2, S1, G)");
  }
  return m;
}

}  // namespace ms_ops

#endif  // MS_OPS_DSA_DSA_HOST_H_
