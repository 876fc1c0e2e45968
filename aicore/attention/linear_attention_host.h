// The CPU entries' common part: attributes and the validation of query, key and value against
// input_layout, into a LinearAttentionProblem.
#ifndef MS_OPS_LINEAR_ATTENTION_HOST_H_
#define MS_OPS_LINEAR_ATTENTION_HOST_H_

#include <string>
#include <vector>

#include "host_entry.h"
#include "linear_attention_infer.h"

namespace ms_ops {

inline LinearAttentionProblem LaReadProblem(mindspore::AotExtra *extra, const Arg &q, const Arg &k, const Arg &v) {
  LinearAttentionProblem p;
  const std::string layout = ReadAttr<std::string>(extra, "input_layout");
  p.causal = ReadAttr<bool>(extra, "causal");
  p.eps = ReadAttr<float>(extra, "eps");
  Require(LaParseLayout(layout, p.layout), "input_layout", "must be BNSD or BSND, got " + layout);
  Require(p.eps > 0.0f, "eps", "must be > 0, got " + std::to_string(p.eps));
  RequireFloat(q);
  Require(k.dtype == q.dtype, k.name, std::string("dtype must be query's ") + q.dtypeName + ", got " + k.dtypeName);
  Require(v.dtype == q.dtype, v.name, std::string("dtype must be query's ") + q.dtypeName + ", got " + v.dtypeName);
  for (const Arg *a : {&q, &k, &v})
    Require(a->shape.size() == 4, a->name, "must be 4-D for input_layout " + layout + ", got " + ShapeStr(a->shape));
  int64_t b, n, s, d, bv, nv, sv, dv;
  LaDims(p.layout, q.shape, b, n, s, d);
  LaDims(p.layout, v.shape, bv, nv, sv, dv);
  Require(k.shape == q.shape, "key", "must have query's shape " + ShapeStr(q.shape) + ", got " + ShapeStr(k.shape));
  Require(d >= 1 && d <= kLaMaxDim, "query", "head dim must be 1..512, got " + std::to_string(d));
  Require(bv == b && nv == n && sv == s, "value",
          "must match query's batch, heads and sequence, got " + ShapeStr(v.shape) + " for query " + ShapeStr(q.shape));
  Require(dv >= 1 && dv <= kLaMaxDim, "value", "head dim must be 1..512, got " + std::to_string(dv));
  p.batch = b;
  p.heads = n;
  p.seq = s;
  p.dim = d;
  p.vdim = dv;
  p.dataType = q.dtype == DType::kF32 ? LaFloat::kF32 : q.dtype == DType::kF16 ? LaFloat::kF16 : LaFloat::kBF16;
  return p;
}

// input_layout for an infer hook, which never throws: "" when unknown.
inline std::string LaInferLayout(mindspore::AotExtra *extra) {
  try {
    if (extra != nullptr && extra->HasAttr("input_layout")) return extra->Attr<std::string>("input_layout");
  } catch (...) {
  }
  return "";
}

}  // namespace ms_ops

#endif  // MS_OPS_LINEAR_ATTENTION_HOST_H_
