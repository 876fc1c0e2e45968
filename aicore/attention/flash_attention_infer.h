// Shape parsing and inference of the flash attention ops, shared by the CANN InferShape and the
// CPU entries. Shapes are dim vectors; -1 is an unknown dim and {-2} an unknown rank; inference
// never fails (what it cannot know stays -1; the kernel entries report bad shapes).
#ifndef MS_OPS_FLASH_ATTENTION_INFER_H_
#define MS_OPS_FLASH_ATTENTION_INFER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "flash_attention_tiling.h"

namespace ms_ops {

// The layout named by input_layout; false for the ones this slice does not support.
inline bool FaParseLayout(const std::string &name, FaLayout &out) {
  if (name == "BSH") out = FaLayout::kBSH;
  else if (name == "SBH") out = FaLayout::kSBH;
  else if (name == "BSND") out = FaLayout::kBSND;
  else if (name == "BNSD") out = FaLayout::kBNSD;
  else return false;
  return true;
}

inline size_t FaRank(FaLayout l) { return l == FaLayout::kBSH || l == FaLayout::kSBH ? 3 : 4; }

// B, S, N, D of a [.., S, N, D] tensor in layout l; N comes from `heads` for the 3-D layouts
// (heads == 0: derive it from the hidden size and `dim`). -1 where unknown.
inline void FaDims(FaLayout l, const std::vector<int64_t> &shape, int64_t heads, int64_t dim, int64_t &b, int64_t &s,
                   int64_t &n, int64_t &d) {
  b = s = n = d = -1;
  if (shape.size() != FaRank(l)) return;
  switch (l) {
    case FaLayout::kBSH:
    case FaLayout::kSBH: {
      b = shape[l == FaLayout::kBSH ? 0 : 1];
      s = shape[l == FaLayout::kBSH ? 1 : 0];
      const int64_t h = shape[2];
      if (heads > 0) {
        n = heads;
        d = h >= 0 && h % heads == 0 ? h / heads : -1;
      } else if (dim > 0 && h >= 0 && h % dim == 0) {
        n = h / dim;
        d = dim;
      }
      break;
    }
    case FaLayout::kBSND: b = shape[0]; s = shape[1]; n = shape[2]; d = shape[3]; break;
    case FaLayout::kBNSD: b = shape[0]; n = shape[1]; s = shape[2]; d = shape[3]; break;
  }
}

// flash_attention_score's outputs: softmax_max, softmax_sum [B, N1, S1, 8], attention_out (query's
// shape).
inline std::vector<std::vector<int64_t>> FlashAttentionScoreOutShapes(const std::vector<int64_t> &query,
                                                                      const std::string &layout, int64_t heads) {
  FaLayout l;
  if (query.size() == 1 && query[0] == -2) return {{-1, -1, -1, 8}, {-1, -1, -1, 8}, query};
  int64_t b = -1, s = -1, n = -1, d = -1;
  if (FaParseLayout(layout, l)) FaDims(l, query, heads, 0, b, s, n, d);
  const std::vector<int64_t> stats{b, heads > 0 ? heads : n, s, 8};
  return {stats, stats, query};
}

}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_INFER_H_
