// The rows of one batch for the lightning indexer's kernels (the forward, its gradient and the KL
// losses), from the lengths modes their tilings share: 0 every batch has seq rows, 1 per-batch
// lengths (queries: the rows past the length are padding), 2 cumulative lengths (TND). Kernel
// code only.
#ifndef MS_OPS_DSA_LIGHTNING_INDEXER_SEGMENT_H_
#define MS_OPS_DSA_LIGHTNING_INDEXER_SEGMENT_H_

#include "kernel_utils.h"

namespace ms_ops {
namespace kernel {

// Batch b's query rows [qStart, qStart + rows), of which the first `valid` have queries, and keys
// [kStart, kStart + keys) (paged: through row b of the block table).
struct LiSeg {
  int64_t b, qStart, rows, valid, kStart, keys;
};

__aicore__ inline LiSeg LiSegment(uint32_t qLenMode, uint32_t kLenMode, int64_t seq1, int64_t seq2,
                                  const AscendC::GlobalTensor<int64_t> &qLen,
                                  const AscendC::GlobalTensor<int64_t> &kLen, int64_t b) {
  LiSeg s;
  s.b = b;
  if (qLenMode == 2) {
    s.qStart = b > 0 ? qLen.GetValue(b - 1) : 0;
    s.rows = s.valid = qLen.GetValue(b) - s.qStart;
  } else {
    s.qStart = b * seq1;
    s.rows = seq1;
    s.valid = qLenMode == 1 ? qLen.GetValue(b) : seq1;
  }
  if (kLenMode == 2) {
    s.kStart = b > 0 ? kLen.GetValue(b - 1) : 0;
    s.keys = kLen.GetValue(b) - s.kStart;
  } else {
    s.kStart = b * seq2;
    s.keys = kLenMode == 1 ? kLen.GetValue(b) : seq2;
  }
  return s;
}

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_DSA_LIGHTNING_INDEXER_SEGMENT_H_
