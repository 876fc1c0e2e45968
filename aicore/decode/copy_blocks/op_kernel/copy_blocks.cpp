// copy_blocks: for every row (src, dst) of block_mapping [n, 2], key_cache[dst] = key_cache[src]
// and value_cache[dst] = value_cache[src], in place: the copy-on-write copies of a paged KV cache
// (ms_ops.kv_cache.BlockManager.append). The op's one output, copied_blocks [1] int32, is n.
//
// Pairs are spread over the blocks in even runs. The host rejects block ids outside the pool and
// mappings whose copies depend on each other's order (a dst written twice, or a dst that another
// pair reads), so every pair is independent; the kernel also skips ids outside the pool rather
// than touch memory beyond the caches.
#include "../../decode_copy.h"
#include "copy_blocks_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

template <typename T>
class CopyBlocksKernel {
 public:
  __aicore__ inline void Init(GM_ADDR keyCache, GM_ADDR valueCache, GM_ADDR mapping, GM_ADDR copied,
                              const CopyBlocksTilingData &td) {
    td_ = td;
    const uint64_t cache = uint64_t(td.numBlocks) * td.blockElems;
    keyCacheGm_.SetGlobalBuffer((__gm__ T *)keyCache, cache);
    valueCacheGm_.SetGlobalBuffer((__gm__ T *)valueCache, cache);
    mappingGm_.SetGlobalBuffer((__gm__ int32_t *)mapping, uint64_t(td.pairs) * 2);
    copiedGm_.SetGlobalBuffer((__gm__ int32_t *)copied, 1);
    copier_.Init(&pipe_, td.chunkElems);
    pipe_.InitBuffer(countBuf_, kUbAlign);
  }

  __aicore__ inline void Process() {
    const int64_t per = (td_.pairs + GetBlockNum() - 1) / GetBlockNum();
    const int64_t i0 = per * GetBlockIdx(), i1 = Min64(i0 + per, td_.pairs);
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t src = mappingGm_.GetValue(2 * i), dst = mappingGm_.GetValue(2 * i + 1);
      if (src < 0 || src >= td_.numBlocks || dst < 0 || dst >= td_.numBlocks || src == dst) continue;
      copier_.Copy(keyCacheGm_[dst * td_.blockElems], keyCacheGm_[src * td_.blockElems], td_.blockElems);
      copier_.Copy(valueCacheGm_[dst * td_.blockElems], valueCacheGm_[src * td_.blockElems], td_.blockElems);
    }
    if (GetBlockIdx() == 0) {
      LocalTensor<int32_t> c = countBuf_.Get<int32_t>();
      c.SetValue(0, static_cast<int32_t>(td_.pairs));
      OrderPipes<HardEvent::S_MTE3>(&pipe_);
      CopyOut(copiedGm_, c, 1);
    }
  }

 private:
  TPipe pipe_;
  GmRunCopier<T> copier_;
  TBuf<TPosition::VECCALC> countBuf_;
  GlobalTensor<T> keyCacheGm_, valueCacheGm_;
  GlobalTensor<int32_t> mappingGm_, copiedGm_;
  CopyBlocksTilingData td_{};
};

template <typename T>
__aicore__ inline void Run(GM_ADDR keyCache, GM_ADDR valueCache, GM_ADDR mapping, GM_ADDR copied,
                           const CopyBlocksTilingData &td) {
  CopyBlocksKernel<T> op;
  op.Init(keyCache, valueCache, mapping, copied, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void copy_blocks(GM_ADDR keyCache, GM_ADDR valueCache, GM_ADDR blockMapping,
                                                  GM_ADDR copied, GM_ADDR workspace, GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(CopyBlocksTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (kDecodeCopyKey*): the element width; the bits are copied, not converted.
  if (TILING_KEY_IS(1)) {
    Run<float>(keyCache, valueCache, blockMapping, copied, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(keyCache, valueCache, blockMapping, copied, td);
  }
}
