// The CPU entries' common part: attribute reading and the validation of query, key and value
// against input_layout and head_num, into a FlashAttentionProblem.
#ifndef MS_OPS_FLASH_ATTENTION_HOST_H_
#define MS_OPS_FLASH_ATTENTION_HOST_H_

#include <string>
#include <vector>

#include "flash_attention_infer.h"
#include "host_entry.h"

namespace ms_ops {

inline FlashAttentionProblem FaReadProblem(mindspore::AotExtra *extra, const Arg &q, const Arg &k, const Arg &v) {
  FlashAttentionProblem p;
  const int64_t heads = ReadAttr<int64_t>(extra, "head_num");
  const std::string layout = ReadAttr<std::string>(extra, "input_layout");
  p.scale = ReadAttr<float>(extra, "scale_value");
  p.preTokens = ReadAttr<int64_t>(extra, "pre_tokens");
  p.nextTokens = ReadAttr<int64_t>(extra, "next_tokens");
  p.sparseMode = ReadAttr<int64_t>(extra, "sparse_mode");
  Require(FaParseLayout(layout, p.layout), "input_layout", "must be BSH, SBH, BSND or BNSD, got " + layout);
  Require(heads >= 1, "head_num", "must be >= 1, got " + std::to_string(heads));
  Require(p.sparseMode == 0 || p.sparseMode == 2 || p.sparseMode == 3, "sparse_mode",
          "must be 0, 2 or 3, got " + std::to_string(p.sparseMode));
  RequireFloat(q);
  Require(k.dtype == q.dtype, k.name, std::string("dtype must be query's ") + q.dtypeName + ", got " + k.dtypeName);
  Require(v.dtype == q.dtype, v.name, std::string("dtype must be query's ") + q.dtypeName + ", got " + v.dtypeName);
  const size_t rank = FaRank(p.layout);
  for (const Arg *a : {&q, &k, &v})
    Require(a->shape.size() == rank, a->name,
            "must be " + std::to_string(rank) + "-D for input_layout " + layout + ", got " + ShapeStr(a->shape));
  int64_t b1, s1, n1, d1, b2, s2, n2, d2, b3, s3, n3, d3;
  FaDims(p.layout, q.shape, rank == 3 ? heads : 0, 0, b1, s1, n1, d1);
  Require(n1 == heads, "head_num",
          "is " + std::to_string(heads) + " but query " + ShapeStr(q.shape) + " has " + std::to_string(n1) +
              " heads (or a hidden size not a multiple of it)");
  Require(d1 >= 1 && d1 <= 512, "query", "head dim must be 1..512, got " + std::to_string(d1));
  FaDims(p.layout, k.shape, 0, d1, b2, s2, n2, d2);
  FaDims(p.layout, v.shape, 0, d1, b3, s3, n3, d3);
  Require(d2 == d1 && n2 >= 1, "key",
          "must have head dim " + std::to_string(d1) + " (query's), got shape " + ShapeStr(k.shape));
  Require(b2 == b1, "key", "batch " + std::to_string(b2) + " differs from query's " + std::to_string(b1));
  Require(n1 % n2 == 0, "key",
          "heads " + std::to_string(n2) + " must divide query's " + std::to_string(n1) + " (GQA/MQA)");
  Require(v.shape == k.shape, "value", "must have key's shape " + ShapeStr(k.shape) + ", got " + ShapeStr(v.shape));
  p.batch = b1;
  p.heads1 = n1;
  p.heads2 = n2;
  p.seq1 = s1;
  p.seq2 = s2;
  p.dim = d1;
  p.dataType = q.dtype == DType::kF32 ? FaFloat::kF32 : q.dtype == DType::kF16 ? FaFloat::kF16 : FaFloat::kBF16;
  return p;
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
