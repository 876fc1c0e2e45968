// The CPU entries' common part for sparse_flash_attention and its gradient: attribute reading, the
// checks of query/key/value/rope against the layout, of the lengths (cumulative with TND,
// per-batch with BSND), of the block table of paged keys (forward only) and of every
// sparse_indices value (range per sequence, no repeats in a list), and shape inference.
#ifndef MS_OPS_SPARSE_FLASH_ATTENTION_HOST_H_
#define MS_OPS_SPARSE_FLASH_ATTENTION_HOST_H_

#include <limits>
#include <string>
#include <vector>

#include "host_entry.h"
#include "sparse_flash_attention_infer.h"
#include "sparse_flash_attention_tiling.h"

namespace ms_ops {

// The tensors both entries read, by role; rope, lengths and the block table are [1] placeholders
// when absent; `table` is null for the gradient (MindSpore's takes no block table).
struct SfaInputs {
  const Arg *q, *k, *v, *idx, *qRope, *kRope, *cumQ, *cumKv, *table;
};

// BSND per-batch lengths: `batch` int64 entries in [0, limit].
inline std::vector<int64_t> SfaPerBatch(const Arg &a, int64_t batch, int64_t limit) {
  Require(a.dtype == DType::kI64 && a.shape.size() == 1 && a.shape[0] == batch, a.name,
          "must be 1-D int64 with one length per batch (" + std::to_string(batch) + "), got " +
              std::string(a.dtypeName) + " " + ShapeStr(a.shape));
  const int64_t *v = reinterpret_cast<const int64_t *>(a.data);
  std::vector<int64_t> out(v, v + batch);
  for (int64_t b = 0; b < batch; ++b)
    Require(out[b] >= 0 && out[b] <= limit, a.name,
            "entry " + std::to_string(b) + " is " + std::to_string(out[b]) + ", outside [0, " +
                std::to_string(limit) + "]");
  return out;
}

// block_table [B, max_blocks] int32: every block a sequence's keys use names a block of key.
inline void SfaCheckTable(const SparseFlashAttentionProblem &p, const Arg &table, int64_t blocks) {
  RequireDType(table, DType::kI32, "int32");
  Require(table.shape.size() == 2 && table.shape[0] == p.batch && table.shape[1] >= 1, "block_table",
          "must be [batch, max_blocks] with batch " + std::to_string(p.batch) + ", got " + ShapeStr(table.shape));
  const int32_t *t = reinterpret_cast<const int32_t *>(table.data);
  for (int64_t b = 0; b < p.batch; ++b) {
    Require(p.lenKv[b] <= p.seq2, "block_table",
            "is too short: " + std::to_string(p.maxPages) + " blocks of " + std::to_string(p.pageSize) +
                " keys cannot hold batch " + std::to_string(b) + "'s " + std::to_string(p.lenKv[b]) + " keys");
    for (int64_t j = 0; j * p.pageSize < p.lenKv[b]; ++j) {
      const int32_t v = t[b * p.maxPages + j];
      Require(v >= 0 && v < blocks, "block_table",
              "entry [" + std::to_string(b) + ", " + std::to_string(j) + "] is " + std::to_string(v) +
                  ", outside [0, " + std::to_string(blocks) + ") (key's blocks)");
    }
  }
}

// Every list entry is -1 or a block of its sequence's keys (< ceil(S2 / sparse_block_size)), and
// no block appears twice in one list. With BSND query lengths, the padding rows past a batch's
// length are never read (the kernels skip them, as CANN's do), so their lists may hold anything.
inline void SfaCheckIndices(const SparseFlashAttentionProblem &p, const Arg &idx) {
  const int32_t *v = reinterpret_cast<const int32_t *>(idx.data);
  const int64_t rows = p.packed ? p.seq1 : p.batch * p.seq1;
  int64_t maxBlocks = 0;
  std::vector<int64_t> blocksOf(size_t(p.batch > 0 ? p.batch : 0));
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t s2 = p.paged || (!p.packed && p.lengthsKv) ? p.lenKv[b]
                       : p.packed ? p.cumKv[b] - (b ? p.cumKv[b - 1] : 0) : p.seq2;
    blocksOf[b] = (s2 + p.blockSize - 1) / p.blockSize;
    maxBlocks = blocksOf[b] > maxBlocks ? blocksOf[b] : maxBlocks;
  }
  std::vector<int64_t> seen(size_t(maxBlocks), -1);
  int64_t b = 0;
  for (int64_t t = 0; t < rows; ++t) {
    if (p.packed) {
      while (p.cumQ[b] <= t) ++b;
    } else {
      b = t / p.seq1;
      if (p.lengthsQ && t % p.seq1 >= p.lenQ[b]) continue;
    }
    for (int64_t n = 0; n < p.heads2; ++n) {
      const int64_t list = t * p.heads2 + n;
      for (int64_t e = 0; e < p.topK; ++e) {
        const int64_t x = v[list * p.topK + e];
        if (x == -1) continue;
        const bool inRange = x >= 0 && x < blocksOf[b], repeated = inRange && seen[x] == list;
        if (inRange && !repeated) {
          seen[x] = list;
          continue;
        }
        const std::string row = p.packed ? std::to_string(t) : std::to_string(t / p.seq1) + ", " + std::to_string(t % p.seq1);
        const std::string at = "value " + std::to_string(x) + " at [" + row + ", " + std::to_string(n) + ", " +
                               std::to_string(e) + "]";
        Require(inRange, "sparse_indices",
                at + " is outside [-1, " + std::to_string(blocksOf[b]) + ") (sequence " + std::to_string(b) +
                    "'s key blocks of " + std::to_string(p.blockSize) + ")");
        Reject("sparse_indices", at + " repeats an earlier entry of the same list");
      }
    }
  }
}

inline SparseFlashAttentionProblem SfaReadProblem(mindspore::AotExtra *extra, const SfaInputs &in) {
  SparseFlashAttentionProblem p;
  const std::string layout = ReadAttr<std::string>(extra, "layout");
  const std::string layoutKv = ReadAttr<std::string>(extra, "layout_kv");
  p.preTokens = ReadAttr<int64_t>(extra, "pre_tokens");
  p.nextTokens = ReadAttr<int64_t>(extra, "next_tokens");
  p.lengthsQ = ReadAttr<bool>(extra, "has_lengths_query");
  p.lengthsKv = ReadAttr<bool>(extra, "has_lengths_kv");
  p.scale = ReadAttr<float>(extra, "scale_value");
  p.blockSize = ReadAttr<int64_t>(extra, "sparse_block_size");
  p.sparseMode = ReadAttr<int64_t>(extra, "sparse_mode");
  Require(layout == "BSND" || layout == "TND", "layout", "must be BSND or TND, got " + layout);
  Require(p.blockSize >= 1, "sparse_block_size", "must be >= 1, got " + std::to_string(p.blockSize));
  Require(p.sparseMode == 0 || p.sparseMode == 3, "sparse_mode", "must be 0 or 3, got " + std::to_string(p.sparseMode));
  p.packed = layout == "TND";
  p.paged = layoutKv == "PA_BSND";
  Require(layoutKv == layout || (p.paged && in.table != nullptr), "layout_kv",
          "must equal layout_query (" + layout + ")" +
              (in.table != nullptr ? std::string(" or be PA_BSND") : std::string(" (paged keys have no gradient)")) +
              ", got " + layoutKv);
  Require(!p.paged || p.lengthsKv, "actual_seq_lengths_kv", "is required with layout_kv PA_BSND (per-batch lengths)");
  const Arg &q = *in.q, &k = *in.k, &v = *in.v, &idx = *in.idx;
  RequireFloat(q);
  for (const Arg *a : {in.k, in.v})
    Require(a->dtype == q.dtype, a->name, std::string("dtype must be query's ") + q.dtypeName + ", got " + a->dtypeName);
  RequireDType(idx, DType::kI32, "int32");
  // Query and sparse_indices in the query layout; key and value in layout_kv: paged keys are 4-D
  // [blocks, block_size, N2, D] whatever the query layout.
  const size_t rank = p.packed ? 3 : 4, krank = p.paged ? 4 : rank;
  for (const Arg *a : {in.q, in.idx})
    Require(a->shape.size() == rank, a->name,
            "must be " + std::to_string(rank) + "-D for layout " + layout + ", got " + ShapeStr(a->shape));
  for (const Arg *a : {in.k, in.v})
    Require(a->shape.size() == krank, a->name,
            "must be " + std::to_string(krank) + "-D for layout_kv " + layoutKv + ", got " + ShapeStr(a->shape));
  const size_t n = rank - 2, d = rank - 1, kn = krank - 2, kd = krank - 1;
  p.heads1 = q.shape[n];
  p.heads2 = k.shape[kn];
  p.dim = q.shape[d];
  p.vDim = v.shape[kd];
  p.topK = idx.shape[d];
  p.seq1 = q.shape[rank - 3];
  p.seq2 = k.shape[krank - 3];
  p.batch = p.packed ? 0 : q.shape[0];
  Require(p.heads2 >= 1 && p.heads1 % p.heads2 == 0, "key",
          "heads " + std::to_string(p.heads2) + " must divide query's " + std::to_string(p.heads1) + " (GQA/MQA)");
  Require(p.dim >= 1 && k.shape[kd] == p.dim, "key",
          "head dim must be query's " + std::to_string(p.dim) + ", got shape " + ShapeStr(k.shape));
  Require(p.packed || p.paged || k.shape[0] == p.batch, "key", "batch differs from query's " + std::to_string(p.batch));
  Shape vWant = k.shape;
  vWant[kd] = p.vDim;
  Require(p.vDim >= 1 && v.shape == vWant, "value", "must have key's shape but the head dim, got " + ShapeStr(v.shape));
  Shape iWant = q.shape;
  iWant[n] = p.heads2;
  iWant[d] = p.topK;
  Require(p.topK >= 1 && idx.shape == iWant, "sparse_indices",
          "must be " + ShapeStr(iWant) + " (query's rows, key heads, sparse count >= 1), got " + ShapeStr(idx.shape));
  const bool qr = in.qRope->shape.size() > 1, kr = in.kRope->shape.size() > 1;
  Require(qr == kr, qr ? "key_rope" : "query_rope", "must be given together with the other rope part");
  if (qr) {
    for (const Arg *a : {in.qRope, in.kRope})
      Require(a->dtype == q.dtype, a->name, std::string("dtype must be query's ") + q.dtypeName + ", got " + a->dtypeName);
    p.ropeDim = in.qRope->shape.back();
    Shape qWant = q.shape, kWant = k.shape;
    qWant[d] = kWant[kd] = p.ropeDim;
    Require(p.ropeDim >= 1 && in.qRope->shape == qWant, "query_rope",
            "must be query's shape but the head dim, got " + ShapeStr(in.qRope->shape));
    Require(in.kRope->shape == kWant, "key_rope",
            "must be " + ShapeStr(kWant) + " (key's shape with query_rope's head dim), got " + ShapeStr(in.kRope->shape));
  }
  p.dataType = q.dtype == DType::kF32 ? SfaFloat::kF32 : q.dtype == DType::kF16 ? SfaFloat::kF16 : SfaFloat::kBF16;
  if (p.paged) {
    p.pageSize = k.shape[1];
    p.maxPages = in.table->shape.size() == 2 ? in.table->shape[1] : 0;
    p.seq2 = p.pageSize * p.maxPages;
    p.keyRows = k.shape[0] * k.shape[1];
  }
  if (p.packed) {
    p.cumQ = RequireCumulative(*in.cumQ, -1, p.seq1);
    p.batch = int64_t(p.cumQ.size());
    if (!p.paged) p.cumKv = RequireCumulative(*in.cumKv, p.batch, p.seq2);
  } else if (p.lengthsQ) {
    p.lenQ = SfaPerBatch(*in.cumQ, p.batch, p.seq1);
  }
  // Paged keys: per-sequence lengths, which the block table bounds (SfaCheckTable names it when too
  // short).
  if (p.paged) {
    p.lenKv = SfaPerBatch(*in.cumKv, p.batch, std::numeric_limits<int64_t>::max());
    SfaCheckTable(p, *in.table, k.shape[0]);
  } else if (!p.packed && p.lengthsKv) {
    p.lenKv = SfaPerBatch(*in.cumKv, p.batch, p.seq2);
  }
  SfaCheckIndices(p, idx);
  return p;
}

}  // namespace ms_ops

#endif  // MS_OPS_SPARSE_FLASH_ATTENTION_HOST_H_
