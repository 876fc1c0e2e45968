// The copy loop of the paged KV cache's write kernels (reshape_and_cache, copy_blocks): a run of
// contiguous elements from one GM place to another through UB, in chunks, with a double-buffered
// VECIN -> VECOUT queue so that the next chunk's load overlaps the previous chunk's store. Kernel
// code only. The element type only fixes the width: the bits are moved, never computed on, so
// bfloat16 travels as half.
#ifndef MS_OPS_DECODE_DECODE_COPY_H_
#define MS_OPS_DECODE_DECODE_COPY_H_

#include "../common/kernel_utils.h"

namespace ms_ops {
namespace kernel {

constexpr uint32_t kDecodeCopyDepth = 2;

template <typename T>
class GmRunCopier {
 public:
  __aicore__ inline void Init(AscendC::TPipe *pipe, uint32_t chunkElems) {
    chunk_ = chunkElems;
    pipe->InitBuffer(que_, kDecodeCopyDepth, UbBytes(chunkElems, sizeof(T)));
  }

  // dst[0, count) = src[0, count).
  __aicore__ inline void Copy(const AscendC::GlobalTensor<T> &dst, const AscendC::GlobalTensor<T> &src,
                              int64_t count) {
    for (int64_t at = 0; at < count; at += chunk_) {
      const uint32_t len = static_cast<uint32_t>(Min64(count - at, chunk_));
      AscendC::LocalTensor<T> buf = que_.template AllocTensor<T>();
      CopyIn(buf, src[at], len);
      que_.EnQue(buf);
      buf = que_.template DeQue<T>();
      CopyOut(dst[at], buf, len);
      que_.FreeTensor(buf);
    }
  }

 private:
  AscendC::TQueBind<AscendC::TPosition::VECIN, AscendC::TPosition::VECOUT, kDecodeCopyDepth> que_;
  uint32_t chunk_ = 0;
};

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_DECODE_DECODE_COPY_H_
