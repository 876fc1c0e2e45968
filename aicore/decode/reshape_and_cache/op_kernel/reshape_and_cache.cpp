// reshape_and_cache: key_cache[slot] = key[t] and value_cache[slot] = value[t] for every token t,
// slot = slot_mapping[t] a flat slot of the caches [num_blocks * block_size, N_kv * D]; a negative
// slot (padding) is skipped. The caches are updated in place: they are inputs, and the kernel
// writes into them (the op's one output, written_tokens [1] int32, counts the tokens written and
// lets a graph order later readers after the writes).
//
// The tokens are spread over the blocks in even runs. Two tokens with one slot would race; the
// host rejects that before launch, as well as slots beyond the caches, which the kernel skips as
// well rather than write outside the caches.
#include "../../decode_copy.h"
#include "reshape_and_cache_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

template <typename T>
class ReshapeAndCacheKernel {
 public:
  __aicore__ inline void Init(GM_ADDR key, GM_ADDR value, GM_ADDR keyCache, GM_ADDR valueCache, GM_ADDR slotMapping,
                              GM_ADDR written, const ReshapeAndCacheTilingData &td) {
    td_ = td;
    const uint64_t rows = uint64_t(td.tokens) * td.rowElems, cache = uint64_t(td.slots) * td.rowElems;
    keyGm_.SetGlobalBuffer((__gm__ T *)key, rows);
    valueGm_.SetGlobalBuffer((__gm__ T *)value, rows);
    keyCacheGm_.SetGlobalBuffer((__gm__ T *)keyCache, cache);
    valueCacheGm_.SetGlobalBuffer((__gm__ T *)valueCache, cache);
    slotGm_.SetGlobalBuffer((__gm__ int32_t *)slotMapping, td.tokens);
    writtenGm_.SetGlobalBuffer((__gm__ int32_t *)written, 1);
    copier_.Init(&pipe_, td.chunkElems);
    pipe_.InitBuffer(countBuf_, kUbAlign);
  }

  __aicore__ inline void Process() {
    const int64_t per = (td_.tokens + GetBlockNum() - 1) / GetBlockNum();
    const int64_t t0 = per * GetBlockIdx(), t1 = Min64(t0 + per, td_.tokens);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t slot = slotGm_.GetValue(t);
      if (slot < 0 || slot >= td_.slots) continue;
      copier_.Copy(keyCacheGm_[slot * td_.rowElems], keyGm_[t * td_.rowElems], td_.rowElems);
      copier_.Copy(valueCacheGm_[slot * td_.rowElems], valueGm_[t * td_.rowElems], td_.rowElems);
    }
    if (GetBlockIdx() == 0) WriteCount();
  }

 private:
  // Block 0 counts the slots in range; the count is what the caller sees of the write.
  __aicore__ inline void WriteCount() {
    int32_t n = 0;
    for (int64_t t = 0; t < td_.tokens; ++t) {
      const int64_t slot = slotGm_.GetValue(t);
      n += (slot >= 0 && slot < td_.slots) ? 1 : 0;
    }
    LocalTensor<int32_t> c = countBuf_.Get<int32_t>();
    c.SetValue(0, n);
    OrderPipes<HardEvent::S_MTE3>(&pipe_);
    CopyOut(writtenGm_, c, 1);
  }

  TPipe pipe_;
  GmRunCopier<T> copier_;
  TBuf<TPosition::VECCALC> countBuf_;
  GlobalTensor<T> keyGm_, valueGm_, keyCacheGm_, valueCacheGm_;
  GlobalTensor<int32_t> slotGm_, writtenGm_;
  ReshapeAndCacheTilingData td_{};
};

template <typename T>
__aicore__ inline void Run(GM_ADDR key, GM_ADDR value, GM_ADDR keyCache, GM_ADDR valueCache, GM_ADDR slotMapping,
                           GM_ADDR written, const ReshapeAndCacheTilingData &td) {
  ReshapeAndCacheKernel<T> op;
  op.Init(key, value, keyCache, valueCache, slotMapping, written, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void reshape_and_cache(GM_ADDR key, GM_ADDR value, GM_ADDR keyCache,
                                                        GM_ADDR valueCache, GM_ADDR slotMapping, GM_ADDR written,
                                                        GM_ADDR workspace, GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(ReshapeAndCacheTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (kDecodeCopyKey*): the element width; the bits are copied, not converted.
  if (TILING_KEY_IS(1)) {
    Run<float>(key, value, keyCache, valueCache, slotMapping, written, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(key, value, keyCache, valueCache, slotMapping, written, td);
  }
}
