// Shape inference of sparse_flash_attention, shared by the CPU entry's InferShape and the CANN
// registration: pure C++ on dims, -1 an unknown dim and [-2] an unknown rank.
#ifndef MS_OPS_SPARSE_FLASH_ATTENTION_INFER_H_
#define MS_OPS_SPARSE_FLASH_ATTENTION_INFER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ms_ops {

// attention_out: query's shape with value's head dim; softmax_max / softmax_sum: [B, N2, S1, G]
// or [N2, T1, G]. Paged keys and values (PA_BSND) are 4-D [blocks, block_size, N2, D] with either
// query layout.
inline std::vector<std::vector<int64_t>> SparseFlashAttentionOutShapes(const std::vector<int64_t> &q,
                                                                       const std::vector<int64_t> &k,
                                                                       const std::vector<int64_t> &v,
                                                                       const std::string &layout) {
  const size_t rank = layout == "TND" ? 3 : 4;
  const std::vector<int64_t> unknown{-2};
  if (q.size() != rank || (k.size() != rank && k.size() != 4) || v.size() != k.size())
    return {unknown, unknown, unknown};
  std::vector<int64_t> out = q;
  out[rank - 1] = v.back();
  const int64_t n1 = q[rank - 2], n2 = k[k.size() - 2];
  const int64_t g = n1 >= 0 && n2 > 0 ? n1 / n2 : -1;
  const std::vector<int64_t> stats = rank == 3 ? std::vector<int64_t>{n2, q[0], g} : std::vector<int64_t>{q[0], n2, q[1], g};
  return {out, stats, stats};
}

}  // namespace ms_ops

#endif  // MS_OPS_SPARSE_FLASH_ATTENTION_INFER_H_
