// Argument checks shared by the CPU entries of moe_finalize_routing and its gradient: the
// drop/pad mode, expanded_x's layout and the value checks of the routing index.
#ifndef MS_OPS_MOE_FINALIZE_ROUTING_ENTRY_H_
#define MS_OPS_MOE_FINALIZE_ROUTING_ENTRY_H_

#include <cstdint>
#include <string>
#include <utility>

#include "host_entry.h"
#include "moe_finalize_routing/op_host/moe_finalize_routing_tiling.h"

namespace ms_ops {
namespace moe_entry {

// scales (or its placeholder): the dtype of the data `ref` or float32.
inline void RequireScalesDType(const Arg &scales, const Arg &ref) {
  const std::string want = ref.dtype == DType::kF32 ? "float32" : std::string(ref.dtypeName) + " or float32";
  Require(scales.dtype == ref.dtype || scales.dtype == DType::kF32, scales.name,
          "must be " + want + ", got " + scales.dtypeName);
}

inline int64_t ReadDropPadMode(mindspore::AotExtra *extra) {
  const int64_t mode = ReadAttr<int64_t>(extra, "drop_pad_mode");
  Require(mode >= 0 && mode <= 3, "drop_pad_mode", "must be 0, 1, 2 or 3, got " + std::to_string(mode));
  return mode;
}

// expanded_x is [N, H] in the dropless modes 0/2 and [E, C, H] in the drop/pad modes 1/3.
inline bool IsDropPad(int64_t mode) { return mode == 1 || mode == 3; }

// The mode by name, not number: the gradient's public function numbers its modes as CANN's
// V2Grad does (0/1 for the forward's row-major 2/3), the bprop as the forward does.
inline std::string ModeName(int64_t mode) { return IsDropPad(mode) ? "drop/pad mode" : "dropless mode"; }

// Checks expanded_x's rank for the mode; returns {N (flat rows), H}.
inline std::pair<int64_t, int64_t> ExpandedRowsAndHidden(const Arg &ex, int64_t mode) {
  const bool dropPad = IsDropPad(mode);
  Require(ex.shape.size() == (dropPad ? 3u : 2u), ex.name,
          std::string("must be ") + (dropPad ? "[E, C, H]" : "[N, H]") + " in " + ModeName(mode) + ", got " +
              ShapeStr(ex.shape));
  return {dropPad ? ex.shape[0] * ex.shape[1] : ex.shape[0], ex.shape.back()};
}

// bias [E, H] (E >= 1) and the expert_idx [R, K] that picks its rows; returns E.
inline int64_t CheckBias(const Arg &bias, const Arg &expert, int64_t rows, int64_t topK, int64_t hidden) {
  Require(bias.shape.size() == 2 && bias.shape[0] >= 1 && bias.shape[1] == hidden, bias.name,
          "must be [E, H] with E >= 1 and H = " + std::to_string(hidden) + ", got " + ShapeStr(bias.shape));
  RequireShape(expert, {rows, topK}, "[R, K], needed with bias");
  return bias.shape[0];
}

// "position p (token r, k)" of expanded_row_idx in the layout of the mode.
inline std::string PairAt(int64_t p, int64_t rows, int64_t topK, bool rowMajor) {
  const int64_t r = rowMajor ? p / topK : p % rows, k = rowMajor ? p % topK : p / rows;
  return "position " + std::to_string(p) + " (token " + std::to_string(r) + ", k " + std::to_string(k) + ")";
}

// The index values the kernels rely on: entries in [0, R*K) (dropless) or [-1, E*C) (drop/pad);
// an entry may repeat (several pairs then read, and their gradients sum into, one slot); expert
// ids inside bias when it is given.
inline void CheckRouting(const Arg &idx, const Arg *expert, int64_t rows, int64_t topK, int64_t expandedRows,
                         int64_t biasRows, int64_t mode) {
  const int64_t pairs = rows * topK;
  Require(pairs <= INT32_MAX && expandedRows <= INT32_MAX, idx.name, "more pairs or expanded rows than int32 indexes");
  const bool rowMajor = mode >= 2, dropPad = IsDropPad(mode);
  const int32_t *v = reinterpret_cast<const int32_t *>(idx.data);
  const int64_t lo = dropPad ? -1 : 0, hi = dropPad ? expandedRows : pairs;
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t j = v[p];
    if (j < lo || j >= hi)
      Reject(idx.name, "value " + std::to_string(j) + " at " + PairAt(p, rows, topK, rowMajor) + " is outside [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + ") in " + ModeName(mode));
  }
  if (expert == nullptr) return;
  const int32_t *e = reinterpret_cast<const int32_t *>(expert->data);
  for (int64_t q = 0; q < pairs; ++q)
    if (e[q] < 0 || e[q] >= biasRows)
      Reject(expert->name, "value " + std::to_string(e[q]) + " at [" + std::to_string(q / topK) + ", " +
                               std::to_string(q % topK) + "] is outside [0, " + std::to_string(biasRows) +
                               ") (bias has " + std::to_string(biasRows) + " rows)");
}

}  // namespace moe_entry
}  // namespace ms_ops

#endif  // MS_OPS_MOE_FINALIZE_ROUTING_ENTRY_H_
