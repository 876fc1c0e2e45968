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

// The layout named by input_layout; false for an unknown name.
inline bool FaParseLayout(const std::string &name, FaLayout &out) {
  if (name == "BSH") out = FaLayout::kBSH;
  else if (name == "TND") out = FaLayout::kTND;
  else if (name == "SBH") out = FaLayout::kSBH;
  else if (name == "BSND") out = FaLayout::kBSND;
  else if (name == "BNSD") out = FaLayout::kBNSD;
  else return false;
  return true;
}

inline size_t FaRank(FaLayout l) {
  return l == FaLayout::kBSH || l == FaLayout::kSBH || l == FaLayout::kTND ? 3 : 4;
}

// B, S, N, D of a [.., S, N, D] tensor in layout l (TND: B is 1 and S is T); N comes from `heads` for the 3-D layouts
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
    case FaLayout::kTND: b = 1; s = shape[0]; n = shape[1]; d = shape[2]; break;
  }
}

// The longest of the sequences whose cumulative lengths are `cum`.
inline int64_t FaLongest(const std::vector<int64_t> &cum) {
  int64_t longest = 0;
  for (size_t b = 0; b < cum.size(); ++b) {
    const int64_t len = cum[b] - (b ? cum[b - 1] : 0);
    longest = len > longest ? len : longest;
  }
  return longest;
}

// A full attn_mask of shape `s` read by the kernel (modes 0, 1, 5): [B, N1, S1, S2], [B, 1, S1, S2],
// and, not in mode 5, [1, 1, S1, S2] and [S1, S2], as CANN lists them. False when `s` fits none.
// With TND (ms_ops' choice; CANN gives no full form) p.seq1 / p.seq2 are the longest sequence's
// lengths: sequence b's query i and key j read element (b, n1, i, j) of the padded mask.
inline bool FaSetMask(FlashAttentionProblem &p, const std::vector<int64_t> &s) {
  const int64_t b = p.batch, n = p.heads1, s1 = p.seq1, s2 = p.seq2;
  const bool ok2 = p.sparseMode != 5 && s == std::vector<int64_t>{s1, s2};
  const bool ok4 = s.size() == 4 && s[2] == s1 && s[3] == s2 &&
                   ((s[0] == b && (s[1] == n || s[1] == 1)) || (p.sparseMode != 5 && s[0] == 1 && s[1] == 1));
  if (!ok2 && !ok4) return false;
  p.hasMask = true;
  p.maskRow = s2;
  p.maskStrideN = ok4 && s[1] == n ? s1 * s2 : 0;
  p.maskStrideB = ok4 && s[0] == b ? s[1] * s1 * s2 : 0;
  p.maskElems = 1;
  for (int64_t x : s) p.maskElems *= x;
  return true;
}

// real_shift of shape `s` for pse_type 0..3 (placeholder [1]: none). Types 0 and 1: [B, N1, S1, S2]
// (the only form with a gradient), [B, N1, 1, S2], [1, N1, S1, S2], and the ALiBi-compressed
// [B or 1, N1, 1024, S2] when S1 == S2 > 1024 and the keys are causal (modes 2 and 3, or 0 with
// next_tokens <= 0). Types 2 and 3: slopes [N1] or [B, N1] with S1 == S2. With TND, types 0 and 1
// only, per sequence padded to the longest as attn_mask (FaSetMask), never compressed, and without
// a gradient. Empty string: fits; otherwise what is wrong.
inline std::string FaSetPse(FlashAttentionProblem &p, const std::vector<int64_t> &s, int64_t pseType) {
  if (s.size() == 1 && pseType <= 1) return "";
  const int64_t b = p.batch, n = p.heads1, s1 = p.seq1, s2 = p.seq2;
  const bool packed = p.layout == FaLayout::kTND;
  if (packed && pseType >= 2) return "slopes (pse_type 2, 3) are not supported with input_layout TND";
  if (pseType >= 2) {
    if (s1 != s2) return "slopes (pse_type 2, 3) need S1 == S2";
    if (!(s == std::vector<int64_t>{n} || s == std::vector<int64_t>{b, n})) return "slopes must be [N1] or [B, N1]";
    p.pseKind = static_cast<uint32_t>(pseType);
    p.pseStrideB = s.size() == 2 ? n : 0;
    p.pseElems = s.size() == 2 ? b * n : n;
    return "";
  }
  if (s.size() != 4 || s[1] != n || s[3] != s2 || (s[0] != b && s[0] != 1)) return "does not fit [B, N1, S1, S2]";
  const bool causal = p.sparseMode == 2 || p.sparseMode == 3 || (p.sparseMode == 0 && p.nextTokens <= 0);
  const bool compressed = s[2] == 1024 && s1 > 1024 && s1 == s2 && causal && !packed;
  if (s[2] != s1 && s[2] != 1 && !compressed) return "rows must be S1, 1 or (ALiBi-compressed, causal, S1 == S2 > 1024) 1024";
  p.pseKind = 1;
  p.pseAddFirst = pseType == 1 ? 1 : 0;
  p.pseRow = s[2] == 1 && s1 != 1 ? 0 : s2;
  p.pseStrideN = s[2] * s2;
  p.pseStrideB = s[0] == b && b > 1 ? n * s[2] * s2 : 0;
  p.pseElems = s[0] * n * s[2] * s2;
  p.pseBase = compressed ? s1 - 1024 : -1;
  p.pseGrad = s[0] == b && s[2] == s1 && !compressed && !packed ? 1 : 0;
  return "";
}

// The value head dim p.dimV (<= D) into the tiling data: the strides of value and of
// attention_out (and its gradient), whose rows have dimV elements.
inline void FaSetValueDim(FlashAttentionTilingData &d, const FlashAttentionProblem &p) {
  d.dimV = p.dimV;
  FaStrides(p.layout, p.batch, p.seq2, p.heads2, p.dimV, d.vStrideB, d.vStrideN, d.vRow);
  FaStrides(p.layout, p.batch, p.seq1, p.heads1, p.dimV, d.oStrideB, d.oStrideN, d.oRow);
}

// Dropout with keep_prob into the tiling data (flash_attention_dropout.h): none at keep_prob 1; the
// bits of a drop_mask of shape `s` ([B, N1, S1, S2 / 8] uint8, S2 a multiple of 8; TND, ms_ops'
// choice as no TND form is defined: S1 / S2 the longest sequence's lengths, the positions the
// generator draws at); or, when `s` is the [1] placeholder, the bits drawn from dropout_seed.
// Empty string: fits; otherwise what is wrong.
inline std::string FaSetDropout(FlashAttentionTilingData &d, const FlashAttentionProblem &p, float keepProb,
                                const std::vector<int64_t> &s) {
  d.dropKind = 0;
  d.dropScale = 1.0f;
  d.dropThreshold = uint64_t(1) << 32;
  d.dropElems = 0;
  if (!(keepProb > 0.0f && keepProb <= 1.0f)) return "keep_prob must be in (0, 1]";
  if (keepProb == 1.0f) return "";
  d.dropScale = 1.0f / keepProb;
  d.dropThreshold = static_cast<uint64_t>(double(keepProb) * 4294967296.0);
  if (s.size() == 1) {
    d.dropKind = 2;
    return "";
  }
  const bool packed = p.layout == FaLayout::kTND;
  const int64_t s1 = packed ? FaLongest(p.cumQ) : p.seq1, s2 = packed ? FaLongest(p.cumKv) : p.seq2;
  if (s2 % 8 != 0) return packed ? "drop_mask needs the longest key sequence a multiple of 8" : "drop_mask needs S2 a multiple of 8";
  if (s != std::vector<int64_t>{p.batch, p.heads1, s1, s2 / 8})
    return packed ? "drop_mask must be [B, N1, S1, S2 / 8], S1 / S2 the longest sequence's lengths"
                  : "drop_mask must be [B, N1, S1, S2 / 8]";
  d.dropKind = 1;
  d.dropElems = p.batch * p.heads1 * s1 * (s2 / 8);
  return "";
}

// attention_out's shape: query's with value's head dim (the last dim -1 where unknown). In BSH
// and SBH the hidden sizes are N * D: value has key's N2 = Hk / D heads of Hv / N2 elements.
inline std::vector<int64_t> FaOutShape(const std::vector<int64_t> &q, const std::vector<int64_t> &k,
                                       const std::vector<int64_t> &v, FaLayout l, int64_t heads) {
  std::vector<int64_t> out = q;
  if (q.size() != FaRank(l) || v.size() != q.size() || k.size() != q.size()) return out;
  if (FaRank(l) == 4 || l == FaLayout::kTND) {
    out.back() = v.back();
    return out;
  }
  const int64_t hq = q.back(), hk = k.back(), hv = v.back(), d = heads > 0 && hq > 0 && hq % heads == 0 ? hq / heads : -1;
  const int64_t n2 = d > 0 && hk > 0 && hk % d == 0 ? hk / d : -1;
  out.back() = n2 > 0 && hv >= 0 && hv % n2 == 0 ? heads * (hv / n2) : -1;
  return out;
}

// flash_attention_score's outputs: softmax_max, softmax_sum [B, N1, S1, 8] (TND: [T1, N1, 8]),
// attention_out (query's shape with value's head dim).
inline std::vector<std::vector<int64_t>> FlashAttentionScoreOutShapes(const std::vector<int64_t> &query,
                                                                      const std::vector<int64_t> &key,
                                                                      const std::vector<int64_t> &value,
                                                                      const std::string &layout, int64_t heads) {
  FaLayout l;
  const bool known = FaParseLayout(layout, l);
  const bool packed = known && l == FaLayout::kTND;
  if (query.size() == 1 && query[0] == -2) {
    const std::vector<int64_t> unknown = packed ? std::vector<int64_t>{-1, -1, 8} : std::vector<int64_t>{-1, -1, -1, 8};
    return {unknown, unknown, query};
  }
  int64_t b = -1, s = -1, n = -1, d = -1;
  if (known) FaDims(l, query, heads, 0, b, s, n, d);
  const std::vector<int64_t> out = known ? FaOutShape(query, key, value, l, heads) : query;
  if (packed) {
    const std::vector<int64_t> stats{s, heads > 0 ? heads : n, 8};
    return {stats, stats, out};
  }
  const std::vector<int64_t> stats{b, heads > 0 ? heads : n, s, 8};
  return {stats, stats, out};
}

}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_INFER_H_
