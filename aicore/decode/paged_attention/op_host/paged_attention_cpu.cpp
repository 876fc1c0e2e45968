// MindSpore CPU entry of paged_attention: checks shapes, dtypes and attributes, then the values
// the kernel will follow (context lengths within the block table, the blocks read inside the pool,
// query lengths that add up to the query's tokens and fit their contexts), tiles and runs the
// kernel on the twin.
// Inputs: query [T, N, D] or [T, N * D]; key_cache, value_cache [num_blocks, block_size, N_kv, D];
// block_tables [B, max_blocks] int32; context_lens [B] int32; q_seq_lens [B] int32 (a [1]
// placeholder when has_q_seq_lens is off); alibi_slopes [N] float32 (a [1] placeholder when
// has_alibi is off). Output: attention_out, query's shape and dtype.
#include <cstdint>
#include <string>
#include <vector>

#include "host_entry.h"
#include "paged_attention_tiling.h"
#include "platform.h"
#include "twin_runtime.h"

extern "C" void paged_attention(uint8_t *query, uint8_t *keyCache, uint8_t *valueCache, uint8_t *blockTables,
                                uint8_t *contextLens, uint8_t *qSeqLens, uint8_t *alibiSlopes, uint8_t *attentionOut,
                                uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "paged_attention";
const char *const kNames[] = {"query",        "key_cache",  "value_cache",  "block_tables",
                              "context_lens", "q_seq_lens", "alibi_slopes", "attention_out"};

std::string Str(int64_t v) { return std::to_string(v); }

// The values the kernel follows, checked before launch (the project's rule: a bad value is an
// error naming the argument, never a read outside a tensor).
void CheckValues(const PagedAttentionProblem &p, const int32_t *tables, const int32_t *ctx, const int32_t *qLens) {
  int64_t tokens = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t c = ctx[b];
    Require(c >= 0 && c <= p.maxBlocks * p.blockSize, "context_lens",
            "sequence " + Str(b) + " has context length " + Str(c) + "; its block table holds at most " +
                Str(p.maxBlocks) + " blocks of " + Str(p.blockSize) + " = " + Str(p.maxBlocks * p.blockSize) +
                " tokens");
    if (p.hasQSeqLens) {
      const int64_t q = qLens[b];
      Require(q >= 0 && q <= c, "q_seq_lens",
              "sequence " + Str(b) + " has " + Str(q) + " query tokens but context length " + Str(c) +
                  " (its query tokens are the last of its context)");
      tokens += q;
    }
    for (int64_t k = 0; k * p.blockSize < c; ++k) {
      const int64_t block = tables[b * p.maxBlocks + k];
      if (block < 0 || block >= p.numBlocks)
        Reject("block_tables", "entry [" + Str(b) + ", " + Str(k) + "] is block " + Str(block) +
                                   ", outside the pool of " + Str(p.numBlocks) + " blocks (sequence " + Str(b) +
                                   " reads it: context length " + Str(c) + ")");
    }
  }
  if (p.hasQSeqLens)
    Require(tokens == p.numTokens, "q_seq_lens",
            "adds up to " + Str(tokens) + " query tokens, query has " + Str(p.numTokens));
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == kPaNumInputs + 1, "params", "expected 7 inputs and 1 output, got " + Str(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const Arg &q = a[kPaQuery], &kc = a[kPaKeyCache];
  PagedAttentionProblem p;
  p.heads = ReadAttr<int64_t>(extra, "head_num");
  p.kvHeads = ReadAttr<int64_t>(extra, "kv_head_num");
  p.scale = ReadAttr<float>(extra, "scale_value");
  p.hasQSeqLens = ReadAttr<bool>(extra, "has_q_seq_lens");
  p.hasAlibi = ReadAttr<bool>(extra, "has_alibi");
  Require(p.heads >= 1, "head_num", "must be >= 1, got " + Str(p.heads));
  Require(p.kvHeads >= 1 && p.heads % p.kvHeads == 0, "kv_head_num",
          "must divide head_num " + Str(p.heads) + ", got " + Str(p.kvHeads));
  RequireFloat(q);
  for (int i : {kPaKeyCache, kPaValueCache}) RequireDType(a[i], q.dtype, q.dtypeName);
  Require(kc.shape.size() == 4, "key_cache", "must be 4-D [num_blocks, block_size, N_kv, D], got " + ShapeStr(kc.shape));
  RequireShape(a[kPaValueCache], kc.shape, "key_cache's shape");
  p.numBlocks = kc.shape[0];
  p.blockSize = kc.shape[1];
  p.dim = kc.shape[3];
  Require(kc.shape[2] == p.kvHeads, "key_cache", "dimension 2 must be kv_head_num " + Str(p.kvHeads) + ", got " +
                                                     ShapeStr(kc.shape));
  Require(p.dim >= 1 && p.dim <= kPaMaxDim, "key_cache", "head dim must be 1..512, got " + Str(p.dim));
  Require(p.numBlocks >= 1 && p.blockSize >= 1, "key_cache", "needs at least one block of one slot, got " +
                                                                 ShapeStr(kc.shape));
  Require(q.shape.size() == 2 || q.shape.size() == 3, "query", "must be [T, N, D] or [T, N * D], got " + ShapeStr(q.shape));
  p.numTokens = q.shape[0];
  RequireShape(q, q.shape.size() == 3 ? Shape{p.numTokens, p.heads, p.dim} : Shape{p.numTokens, p.heads * p.dim},
               "head_num heads of the caches' head dim");
  const Arg &tables = a[kPaBlockTables], &ctx = a[kPaContextLens];
  for (int i : {kPaBlockTables, kPaContextLens, kPaQSeqLens}) RequireDType(a[i], DType::kI32, "int32");
  Require(tables.shape.size() == 2, "block_tables", "must be [B, max_blocks], got " + ShapeStr(tables.shape));
  p.batch = tables.shape[0];
  p.maxBlocks = tables.shape[1];
  RequireShape(ctx, {p.batch}, "one context length per row of block_tables");
  if (p.hasQSeqLens) {
    RequireShape(a[kPaQSeqLens], {p.batch}, "one query length per sequence");
  } else {
    Require(p.batch == p.numTokens, "block_tables",
            "must have one row per query token (" + Str(p.numTokens) + ") without q_seq_lens, got " +
                ShapeStr(tables.shape));
  }
  if (p.hasAlibi) {
    RequireDType(a[kPaAlibi], DType::kF32, "float32");
    RequireShape(a[kPaAlibi], {p.heads}, "one slope per query head");
  }
  RequireOutput(kNames[kPaNumInputs], kPaNumInputs, ndims, shapes, dtypes, q.shape, q.dtype);
  p.dataType = ToFloatEnum<DecodeFloat>(q.dtype);
  CheckValues(p, reinterpret_cast<const int32_t *>(tables.data), reinterpret_cast<const int32_t *>(ctx.data),
              reinterpret_cast<const int32_t *>(a[kPaQSeqLens].data));
  PagedAttentionTiling t = ComputePagedAttentionTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  auto gm = [&a](int i) { return a[i].data; };
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    paged_attention(gm(0), gm(1), gm(2), gm(3), gm(4), gm(5), gm(6), gm(7), nullptr,
                    reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int PagedAttention(int nparam, void **params, int *ndims,
                                                                    int64_t **shapes, const char **dtypes,
                                                                    void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra,
                              [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<int64_t> PagedAttentionInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra *) {
  return std::vector<int64_t>(shapes[0], shapes[0] + ndims[0]);
}

extern "C" __attribute__((visibility("default"))) mindspore::TypeId PagedAttentionInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *) {
  return types.empty() ? mindspore::kTypeUnknown : types[0];
}
