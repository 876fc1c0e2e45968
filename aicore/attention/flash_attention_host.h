// The CPU entries' common part: attribute reading and the validation of query, key and value
// against input_layout and head_num, of the packed sequence lengths (TND), attn_mask and prefix
// against sparse_mode, into a FlashAttentionProblem.
#ifndef MS_OPS_FLASH_ATTENTION_HOST_H_
#define MS_OPS_FLASH_ATTENTION_HOST_H_

#include <string>
#include <vector>

#include "flash_attention_infer.h"
#include "host_entry.h"

namespace ms_ops {

// The optional inputs of both kernels; an absent one is a [1] placeholder (dropout_seed is
// always int64 [2]: seed, offset).
struct FaOptional {
  const Arg *pse, *mask, *prefix, *cumQ, *cumKv, *drop, *seed;
};

// attn_mask: read per element in modes 0, 1 and 5 (full shapes; TND: per sequence, padded to the
// longest, p.seq1 / p.seq2 being its lengths here), only checked in the compressed
// modes (2, 3, 4, 7, 8: [2048, 2048]; 6: [3072, 2048]), whose contents the kernel does not need.
inline void FaReadMask(FlashAttentionProblem &p, const Arg &m) {
  if (m.shape.size() == 1) return;  // the placeholder: no mask
  Require(m.dtype == DType::kU8 || m.dtype == DType::kBool, "attn_mask", std::string("must be bool or uint8, got ") + m.dtypeName);
  const int64_t mode = p.sparseMode;
  if (mode != 0 && mode != 1 && mode != 5) {
    const Shape want = mode == 6 ? Shape{3072, 2048} : Shape{2048, 2048};
    RequireShape(m, want, "the compressed mask of sparse_mode " + std::to_string(mode));
    return;
  }
  Require(FaSetMask(p, m.shape), "attn_mask",
          "shape " + ShapeStr(m.shape) + " does not fit sparse_mode " + std::to_string(mode) + " (B=" +
              std::to_string(p.batch) + ", N1=" + std::to_string(p.heads1) + ", S1=" + std::to_string(p.seq1) +
              ", S2=" + std::to_string(p.seq2) + ")");
}

inline FlashAttentionProblem FaReadProblem(mindspore::AotExtra *extra, const Arg &q, const Arg &k, const Arg &v,
                                           const FaOptional &opt) {
  FlashAttentionProblem p;
  const int64_t heads = ReadAttr<int64_t>(extra, "head_num");
  const std::string layout = ReadAttr<std::string>(extra, "input_layout");
  p.scale = ReadAttr<float>(extra, "scale_value");
  p.preTokens = ReadAttr<int64_t>(extra, "pre_tokens");
  p.nextTokens = ReadAttr<int64_t>(extra, "next_tokens");
  p.sparseMode = ReadAttr<int64_t>(extra, "sparse_mode");
  const int64_t pseType = ReadAttr<int64_t>(extra, "pse_type");
  Require(pseType >= 0 && pseType <= 3, "pse_type", "must be 0, 1, 2 or 3, got " + std::to_string(pseType));
  Require(FaParseLayout(layout, p.layout), "input_layout", "must be BSH, SBH, BSND, BNSD or TND, got " + layout);
  Require(heads >= 1, "head_num", "must be >= 1, got " + std::to_string(heads));
  Require(p.sparseMode >= 0 && p.sparseMode <= 8, "sparse_mode", "must be in 0..8, got " + std::to_string(p.sparseMode));
  const bool packed = p.layout == FaLayout::kTND;
  Require(packed || (p.sparseMode != 7 && p.sparseMode != 8), "sparse_mode",
          std::to_string(p.sparseMode) + " needs input_layout TND");
  Require(!packed || p.sparseMode != 5, "sparse_mode", "5 is not defined for input_layout TND (use 6)");
  RequireFloat(q);
  Require(k.dtype == q.dtype, k.name, std::string("dtype must be query's ") + q.dtypeName + ", got " + k.dtypeName);
  Require(v.dtype == q.dtype, v.name, std::string("dtype must be query's ") + q.dtypeName + ", got " + v.dtypeName);
  const size_t rank = FaRank(p.layout);
  for (const Arg *a : {&q, &k, &v})
    Require(a->shape.size() == rank, a->name,
            "must be " + std::to_string(rank) + "-D for input_layout " + layout + ", got " + ShapeStr(a->shape));
  int64_t b1, s1, n1, d1, b2, s2, n2, d2, b3, s3, n3, d3;
  FaDims(p.layout, q.shape, rank == 3 && !packed ? heads : 0, 0, b1, s1, n1, d1);
  Require(n1 == heads, "head_num",
          "is " + std::to_string(heads) + " but query " + ShapeStr(q.shape) + " has " + std::to_string(n1) +
              " heads (or a hidden size not a multiple of it)");
  Require(d1 >= 1 && d1 <= 512, "query", "head dim must be 1..512, got " + std::to_string(d1));
  FaDims(p.layout, k.shape, 0, d1, b2, s2, n2, d2);
  Require(d2 == d1 && n2 >= 1, "key",
          "must have head dim " + std::to_string(d1) + " (query's), got shape " + ShapeStr(k.shape));
  Require(b2 == b1, "key", "batch " + std::to_string(b2) + " differs from query's " + std::to_string(b1));
  Require(n1 % n2 == 0, "key",
          "heads " + std::to_string(n2) + " must divide query's " + std::to_string(n1) + " (GQA/MQA)");
  FaDims(p.layout, v.shape, rank == 3 && !packed ? n2 : 0, 0, b3, s3, n3, d3);
  Require(b3 == b2 && s3 == s2 && n3 == n2 && d3 >= 1 && d3 <= d1, "value",
          "must have key's batch, length and heads and a head dim 1.." + std::to_string(d1) + " (key " +
              ShapeStr(k.shape) + "), got " + ShapeStr(v.shape));
  p.dimV = d3;
  p.batch = b1;
  p.heads1 = n1;
  p.heads2 = n2;
  p.seq1 = s1;
  p.seq2 = s2;
  p.dim = d1;
  p.dataType = q.dtype == DType::kF32 ? FaFloat::kF32 : q.dtype == DType::kF16 ? FaFloat::kF16 : FaFloat::kBF16;
  if (packed) {
    p.cumQ = RequireCumulative(*opt.cumQ, -1, s1);
    p.cumKv = RequireCumulative(*opt.cumKv, int64_t(p.cumQ.size()), s2);
    p.batch = int64_t(p.cumQ.size());
  }
  if (p.sparseMode == 5 || p.sparseMode == 6) {
    const Arg &pre = *opt.prefix;
    Require(pre.dtype == DType::kI64 && pre.shape == Shape{p.batch}, "prefix",
            "must be int64 with one entry per batch (" + std::to_string(p.batch) + "), got " + pre.dtypeName + " " +
                ShapeStr(pre.shape));
    const int64_t *v = reinterpret_cast<const int64_t *>(pre.data);
    for (int64_t i = 0; i < p.batch; ++i) Require(v[i] >= 0, "prefix", "entries must be >= 0");
    p.hasPrefix = true;
  }
  // TND: attn_mask and real_shift are per sequence, padded to the longest one.
  if (packed) {
    p.seq1 = FaLongest(p.cumQ);
    p.seq2 = FaLongest(p.cumKv);
  }
  FaReadMask(p, *opt.mask);
  const Arg &pse = *opt.pse;
  const std::string pseError = FaSetPse(p, pse.shape, pseType);
  Require(pseError.empty(), "real_shift", ShapeStr(pse.shape) + " " + pseError);
  p.seq1 = s1;
  p.seq2 = s2;
  if (p.pseKind == 1) Require(pse.dtype == q.dtype, "real_shift", std::string("must have query's dtype ") + q.dtypeName);
  if (p.pseKind >= 2) Require(pse.dtype == DType::kF32, "real_shift", "slopes must be float32");
  return p;
}

// Dropout (keep_prob, drop_mask, dropout_seed) into the tiling data of problem p.
inline void FaReadDropout(FlashAttentionTiling &t, const FlashAttentionProblem &p, mindspore::AotExtra *extra,
                          const FaOptional &opt) {
  const float keepProb = ReadAttr<float>(extra, "keep_prob");
  const Arg &drop = *opt.drop, &seed = *opt.seed;
  Require(seed.dtype == DType::kI64 && seed.shape == Shape{2}, "dropout_seed",
          "must be int64 [2] (seed, offset), got " + std::string(seed.dtypeName) + " " + ShapeStr(seed.shape));
  if (drop.shape.size() != 1) Require(drop.dtype == DType::kU8, "drop_mask", std::string("must be uint8, got ") + drop.dtypeName);
  const std::string error = FaSetDropout(t.data, p, keepProb, drop.shape);
  Require(error.empty(), keepProb > 0.0f && keepProb <= 1.0f ? "drop_mask" : "keep_prob",
          error + (drop.shape.size() == 1 ? "" : ", got " + ShapeStr(drop.shape)));
}

// head_num and input_layout for an infer hook, which never throws: unknown values give 0 / "".
inline void FaInferAttrs(mindspore::AotExtra *extra, int64_t &heads, std::string &layout) {
  heads = 0;
  layout.clear();
  try {
    if (extra != nullptr && extra->HasAttr("head_num")) heads = extra->Attr<int64_t>("head_num");
    if (extra != nullptr && extra->HasAttr("input_layout")) layout = extra->Attr<std::string>("input_layout");
  } catch (...) {
    heads = 0;
  }
}

}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_HOST_H_
