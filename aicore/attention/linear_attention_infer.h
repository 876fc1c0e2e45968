// Shape parsing and inference of the linear attention ops, shared by the CANN InferShape and the
// CPU entries. -1 is an unknown dim and {-2} an unknown rank; inference never fails (the kernel
// entries report bad shapes).
#ifndef MS_OPS_LINEAR_ATTENTION_INFER_H_
#define MS_OPS_LINEAR_ATTENTION_INFER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "linear_attention_tiling.h"

namespace ms_ops {

inline bool LaParseLayout(const std::string &name, LaLayout &out) {
  if (name == "BNSD") out = LaLayout::kBNSD;
  else if (name == "BSND") out = LaLayout::kBSND;
  else return false;
  return true;
}

// B, N, S, D of a 4-D tensor in layout l; -1 where unknown.
inline void LaDims(LaLayout l, const std::vector<int64_t> &shape, int64_t &b, int64_t &n, int64_t &s, int64_t &d) {
  b = n = s = d = -1;
  if (shape.size() != 4) return;
  b = shape[0];
  d = shape[3];
  n = l == LaLayout::kBNSD ? shape[1] : shape[2];
  s = l == LaLayout::kBNSD ? shape[2] : shape[1];
}

// linear_attention's outputs: attention_out (value's shape: Dv per head) and the normalizer
// [B, N, S].
inline std::vector<std::vector<int64_t>> LinearAttentionOutShapes(const std::vector<int64_t> &query,
                                                                  const std::vector<int64_t> &value,
                                                                  const std::string &layout) {
  LaLayout l;
  int64_t b = -1, n = -1, s = -1, d = -1;
  if (LaParseLayout(layout, l)) LaDims(l, query, b, n, s, d);
  return {value, {b, n, s}};
}

}  // namespace ms_ops

#endif  // MS_OPS_LINEAR_ATTENTION_INFER_H_
