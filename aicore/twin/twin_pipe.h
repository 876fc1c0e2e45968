// TPipe, TQue and TBuf: the local memory allocator of a block. TPipe carves buffers in 32-byte
// units, as the hardware allocator does, out of the memory a queue's or TBuf's position names (UB
// for the vector positions, L1 / L0A / L0B / L0C / BT for the cube's, twin_local_memory.h), and
// refuses requests beyond that memory's size; an access to UB's reserved top (above
// kAtlasA2.ubSize) is refused when it happens.
// Queues track each buffer's state so that the discipline the NPU relies on (alloc, enque, deque,
// free, within the buffer count and the queue depth) is checked on every call.
#ifndef MS_OPS_TWIN_PIPE_H_
#define MS_OPS_TWIN_PIPE_H_

#include <cstdint>
#include <cstring>

#include "twin_tensor.h"

namespace AscendC {
namespace twin_detail {

// The pipe that fills a buffer at position pos, and the pipe that takes it from there: a queue
// from src to dst hands its tensors from Producer(src) to Consumer(dst) on EnQue/DeQue, and back
// on FreeTensor/AllocTensor (VECIN: MTE2 -> V, VECOUT: V -> MTE3, VECCALC: V -> V, no order).
constexpr Pipe Producer(TPosition pos) {
  switch (pos) {
    case TPosition::VECIN: case TPosition::A1: case TPosition::B1: case TPosition::C1: return kPipeMte2;
    case TPosition::A2: case TPosition::B2: case TPosition::C2: return ::ms_ops::twin::kPipeMte1;
    case TPosition::CO1: return ::ms_ops::twin::kPipeM;
    case TPosition::CO2: return ::ms_ops::twin::kPipeFix;
    default: return kPipeV;
  }
}
constexpr Pipe Consumer(TPosition pos) {
  switch (pos) {
    case TPosition::VECOUT: case TPosition::CO2: return kPipeMte3;
    case TPosition::A1: case TPosition::B1: case TPosition::C1: return ::ms_ops::twin::kPipeMte1;
    case TPosition::A2: case TPosition::B2: case TPosition::C2: return ::ms_ops::twin::kPipeM;
    case TPosition::CO1: return ::ms_ops::twin::kPipeFix;
    default: return kPipeV;
  }
}

// The pipes of EnQue<srcUserPos, dstUserPos, T> / DeQue<...>: data coming from GM was written by
// MTE2, data going to GM is read by MTE3, UB positions are the vector unit's.
constexpr Pipe UserWriter(TPosition pos) { return pos == TPosition::GM ? kPipeMte2 : kPipeV; }
constexpr Pipe UserReader(TPosition pos) { return pos == TPosition::GM ? kPipeMte3 : kPipeV; }

}  // namespace twin_detail

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
  static_assert(depth >= 1, "the twin supports queue depths >= 1");
  static constexpr twin_detail::Pipe kProducer = twin_detail::Producer(src), kConsumer = twin_detail::Consumer(dst);
  static constexpr bool kHandsOver = kProducer != kConsumer;

 public:
  // Where TPipe carves its buffers.
  static constexpr ::ms_ops::twin::LocalMem kTwinMem = twin_detail::MemoryOf(src);

  // How the race messages name the queue's buffers.
  static constexpr const char *TwinWhat() {
    if (src == TPosition::VECIN && dst == TPosition::VECIN) return "TQue<VECIN>";
    if (src == TPosition::VECOUT && dst == TPosition::VECOUT) return "TQue<VECOUT>";
    if (src == TPosition::VECCALC && dst == TPosition::VECCALC) return "TQue<VECCALC>";
    if (src == TPosition::VECIN && dst == TPosition::VECOUT) return "TQueBind<VECIN, VECOUT>";
    return "TQue";
  }

  template <typename T>
  LocalTensor<T> AllocTensor() {
    if (num_ == 0) twin_detail::Fail("AllocTensor", "queue has no buffers (TPipe::InitBuffer not called)");
    for (uint32_t k = 0; k < num_; ++k) {
      uint32_t i = (next_ + k) % num_;
      if (state_[i] == kFree) {
        state_[i] = kHeld;
        next_ = (i + 1) % num_;
        ::ms_ops::twin::Block &blk = ::ms_ops::twin::Current();
        ++blk.liveTensors;
        blk.races->MarkFreed(base_ + uint64_t(i) * len_, len_, false);
        if (kHandsOver) blk.races->Take(kProducer, 1, base_ + uint64_t(i) * len_);
        return Tensor<T>(i);
      }
    }
    twin_detail::Fail("AllocTensor", "all " + twin_detail::Str(num_) +
                                         " buffers of the queue are allocated (AllocTensor beyond the buffer count "
                                         "without FreeTensor)");
  }
  template <typename T>
  void AllocTensor(LocalTensor<T> &t) { t = AllocTensor<T>(); }

  template <typename T>
  bool EnQue(const LocalTensor<T> &t) {
    return Push(t.TwinData(), kHandsOver, kProducer);
  }
  // The hand-over named by the user positions of its two sides (a TQueBind passing data on).
  template <TPosition srcUserPos, TPosition dstUserPos, typename T>
  bool EnQue(const LocalTensor<T> &t) {
    constexpr twin_detail::Pipe from = twin_detail::UserWriter(srcUserPos), to = twin_detail::UserReader(dstUserPos);
    return Push(t.TwinData(), from != to, from);
  }

  template <typename T>
  LocalTensor<T> DeQue() {
    return Tensor<T>(Pop(kHandsOver, kConsumer));
  }
  template <TPosition srcUserPos, TPosition dstUserPos, typename T>
  LocalTensor<T> DeQue() {
    constexpr twin_detail::Pipe from = twin_detail::UserWriter(srcUserPos), to = twin_detail::UserReader(dstUserPos);
    return Tensor<T>(Pop(from != to, to));
  }
  template <typename T>
  void DeQue(LocalTensor<T> &t) { t = DeQue<T>(); }

  template <typename T>
  void FreeTensor(LocalTensor<T> &t) {
    uint32_t i = IndexOf("FreeTensor", t.TwinData());
    if (state_[i] == kFree) twin_detail::Fail("FreeTensor", "buffer is not allocated (double FreeTensor)");
    if (state_[i] == kQueued) twin_detail::Fail("FreeTensor", "tensor is still enqueued");
    state_[i] = kFree;
    ::ms_ops::twin::Block &blk = ::ms_ops::twin::Current();
    --blk.liveTensors;
    blk.races->MarkFreed(t.TwinData(), len_, true);
    if (kHandsOver) blk.races->Post(kConsumer, 1, t.TwinData());
  }

  bool HasTensorInQue() const { return count_ > 0; }
  int32_t GetTensorCountInQue() const { return static_cast<int32_t>(count_); }
  bool VacantInQue() const { return count_ < static_cast<uint32_t>(depth); }

  // Called by TPipe::InitBuffer with the carved region.
  void TwinInit(uint8_t *base, uint32_t num, uint32_t len) {
    base_ = base;
    num_ = num;
    len_ = len;
    head_ = count_ = next_ = 0;
    for (uint32_t i = 0; i < num; ++i) state_[i] = kFree;
  }

 private:
  static constexpr uint32_t kMaxBuffers = 256;  // InitBuffer's num is a uint8_t
  enum State : uint8_t { kFree, kHeld, kQueued };

  bool Push(const void *p, bool handsOver, twin_detail::Pipe from) {
    uint32_t i = IndexOf("EnQue", p);
    if (state_[i] != kHeld) twin_detail::Fail("EnQue", "tensor is not allocated (or already enqueued)");
    if (count_ == static_cast<uint32_t>(depth))
      twin_detail::Fail("EnQue", "queue of depth " + twin_detail::Str(depth) + " is full");
    state_[i] = kQueued;
    if (handsOver) twin_detail::Races().Post(from, 0, p);
    fifo_[(head_ + count_++) % kMaxBuffers] = static_cast<uint8_t>(i);
    return true;
  }
  uint32_t Pop(bool handsOver, twin_detail::Pipe to) {
    if (count_ == 0) twin_detail::Fail("DeQue", "queue is empty (DeQue without a matching EnQue)");
    uint32_t i = fifo_[head_];
    head_ = (head_ + 1) % kMaxBuffers;
    --count_;
    state_[i] = kHeld;
    if (handsOver) twin_detail::Races().Take(to, 0, base_ + uint64_t(i) * len_);
    return i;
  }

  template <typename T>
  LocalTensor<T> Tensor(uint32_t i) const {
    return LocalTensor<T>::TwinMake(reinterpret_cast<T *>(base_ + uint64_t(i) * len_), len_ / sizeof(T),
                                    len_ / sizeof(T));
  }
  uint32_t IndexOf(const char *call, const void *p) const {
    const uint8_t *b = static_cast<const uint8_t *>(p);
    if (num_ == 0 || b < base_ || b >= base_ + uint64_t(num_) * len_ || (b - base_) % len_ != 0)
      twin_detail::Fail(call, "tensor is not a buffer of this queue");
    return static_cast<uint32_t>((b - base_) / len_);
  }

  uint8_t *base_ = nullptr;
  uint32_t num_ = 0, len_ = 0;
  uint32_t head_ = 0, count_ = 0, next_ = 0;
  State state_[kMaxBuffers];
  uint8_t fifo_[kMaxBuffers];
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<pos, pos, depth, mask> {};

template <TPosition pos = TPosition::LCM>
class TBuf {
 public:
  static constexpr ::ms_ops::twin::LocalMem kTwinMem = twin_detail::MemoryOf(pos);

  template <typename T>
  LocalTensor<T> Get() {
    return Get<T>(len_ / sizeof(T));
  }
  template <typename T>
  LocalTensor<T> Get(uint32_t len) {
    return GetWithOffset<T>(len, 0);
  }
  // The whole buffer as a tensor, as Get: a TBuf has no queue state to hand out or take back.
  template <typename T>
  LocalTensor<T> AllocTensor() {
    return Get<T>();
  }
  template <typename T>
  void FreeTensor(LocalTensor<T> &) {}

  // bufOffset in bytes from the start of the buffer. A size reaching past the buffer is accepted,
  // as on the NPU (real kernels take scratch tensors larger than what they touch); the tensor's
  // access bound stays the end of the buffer, so touching past it is the error.
  template <typename T>
  LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) {
    if (base_ == nullptr) twin_detail::Fail("TBuf::Get", "buffer not initialised by TPipe::InitBuffer");
    if (bufOffset >= len_)
      twin_detail::Fail("TBuf::Get", "offset " + twin_detail::Str(bufOffset) + " is not inside the " +
                                         twin_detail::Str(len_) + "-byte buffer");
    return LocalTensor<T>::TwinMake(reinterpret_cast<T *>(base_ + bufOffset), size, (len_ - bufOffset) / sizeof(T));
  }

  void TwinInit(uint8_t *base, uint32_t len) {
    base_ = base;
    len_ = len;
  }

 private:
  uint8_t *base_ = nullptr;
  uint32_t len_ = 0;
};

// A pool of UB carved once from TPipe (InitBufPool) and handed out again to queues, TBufs and
// nested pools; Reset gives the whole pool back, so later stages of a kernel reuse its memory.
// InitBufPool(pool, len, shareBuf) lays a pool over the memory of shareBuf instead.
template <TPosition pos, uint32_t bufIDSize = 4>
class TBufPool {
 public:
  static constexpr TPosition poolPos = pos;

  template <class Q>
  bool InitBuffer(Q &que, uint8_t num, uint32_t len) {
    const uint32_t l = static_cast<uint32_t>(::ms_ops::AlignUp(len, ::ms_ops::kBlockBytes));
    que.TwinInit(Carve("TBufPool::InitBuffer", uint64_t(num) * l, num, len, Q::TwinWhat(), l), num, l);
    return true;
  }
  template <TPosition bufPos>
  bool InitBuffer(TBuf<bufPos> &buf, uint32_t len) {
    const uint32_t l = static_cast<uint32_t>(::ms_ops::AlignUp(len, ::ms_ops::kBlockBytes));
    buf.TwinInit(Carve("TBufPool::InitBuffer", l, 1, len, "TBuf", l), l);
    return true;
  }
  template <class T>
  bool InitBufPool(T &pool, uint32_t len) {
    const uint32_t l = static_cast<uint32_t>(::ms_ops::AlignUp(len, ::ms_ops::kBlockBytes));
    pool.TwinInit(Carve("TBufPool::InitBufPool", l, 1, len, "TBufPool", l), l);
    return true;
  }
  template <class T, class U>
  bool InitBufPool(T &pool, uint32_t len, U &shareBuf) {
    if (len > shareBuf.TwinLen())
      twin_detail::Fail("TBufPool::InitBufPool", twin_detail::Str(len) + " bytes exceed the " +
                                                     twin_detail::Str(shareBuf.TwinLen()) + "-byte pool it shares");
    pool.TwinInit(shareBuf.TwinBase(), static_cast<uint32_t>(::ms_ops::AlignUp(len, ::ms_ops::kBlockBytes)));
    return true;
  }
  void Reset() { used_ = 0; }

  // Twin internals: set up by TPipe::InitBufPool or an enclosing pool.
  void TwinInit(uint8_t *base, uint32_t len) {
    base_ = base;
    len_ = len;
    used_ = 0;
  }
  uint8_t *TwinBase() const { return base_; }
  uint32_t TwinLen() const { return len_; }

 private:
  uint8_t *Carve(const char *call, uint64_t bytes, uint32_t num, uint32_t len, const char *what, uint32_t stride) {
    if (base_ == nullptr) twin_detail::Fail(call, "pool not initialised by InitBufPool");
    if (used_ + bytes > len_)
      twin_detail::Fail(call, "request of " + twin_detail::Str(num) + " x " + twin_detail::Str(len) + " bytes (" +
                                  twin_detail::Str(bytes) + " bytes, " + twin_detail::Str(used_) +
                                  " already in use) exceeds the " + twin_detail::Str(len_) + "-byte pool");
    uint8_t *p = base_ + used_;
    twin_detail::Races().Carve(twin_detail::UbOffset(p), bytes, what, num, stride);
    used_ += bytes;
    return p;
  }

  uint8_t *base_ = nullptr;
  uint32_t len_ = 0;
  uint64_t used_ = 0;
};

class TPipe {
 public:
  TPipe() : block_(&::ms_ops::twin::Current()) {
    if (block_->pipe != nullptr) twin_detail::Fail("TPipe", "a second TPipe while another is alive in this block");
    block_->pipe = this;
    ClearUsed();
  }
  ~TPipe() { Destroy(); }
  TPipe(const TPipe &) = delete;
  TPipe &operator=(const TPipe &) = delete;

  template <class Q>
  bool InitBuffer(Q &que, uint8_t num, uint32_t len) {
    const uint32_t l = static_cast<uint32_t>(::ms_ops::AlignUp(len, ::ms_ops::kBlockBytes));
    que.TwinInit(Carve("InitBuffer", Q::kTwinMem, uint64_t(num) * l, num, len, Q::TwinWhat(), l), num, l);
    return true;
  }
  template <TPosition pos>
  bool InitBuffer(TBuf<pos> &buf, uint32_t len) {
    const uint32_t l = static_cast<uint32_t>(::ms_ops::AlignUp(len, ::ms_ops::kBlockBytes));
    buf.TwinInit(Carve("InitBuffer", TBuf<pos>::kTwinMem, l, 1, len, "TBuf", l), l);
    return true;
  }

  template <class T>
  bool InitBufPool(T &pool, uint32_t len) {
    const uint32_t l = static_cast<uint32_t>(::ms_ops::AlignUp(len, ::ms_ops::kBlockBytes));
    pool.TwinInit(Carve("InitBufPool", twin_detail::MemoryOf(T::poolPos), l, 1, len, "TBufPool", l), l);
    return true;
  }
  // A pool over the memory of the pool shareBuf (two stages that never live at once).
  template <class T, class U>
  bool InitBufPool(T &pool, uint32_t len, U &shareBuf) {
    if (len > shareBuf.TwinLen())
      twin_detail::Fail("InitBufPool", twin_detail::Str(len) + " bytes exceed the " +
                                           twin_detail::Str(shareBuf.TwinLen()) + "-byte pool it shares");
    pool.TwinInit(shareBuf.TwinBase(), static_cast<uint32_t>(::ms_ops::AlignUp(len, ::ms_ops::kBlockBytes)));
    return true;
  }

  // Frees every buffer: later InitBuffer calls start again at the bottom of each memory.
  void Reset() {
    if (owns_) ClearUsed();
  }
  void Destroy() {
    if (!owns_) return;
    ClearUsed();
    block_->pipe = nullptr;
    owns_ = false;
  }

  // Event ids only order pipes on the NPU; one core of the twin runs everything in program order.
  TEventID FetchEventID(HardEvent) { return 0; }
  template <HardEvent evt>
  TEventID FetchEventID() { return 0; }
  template <HardEvent evt>
  TEventID AllocEventID() { return 0; }
  template <HardEvent evt>
  void ReleaseEventID(TEventID) {}

 private:
  void ClearUsed() {
    block_->ubUsed = 0;
    for (uint32_t &u : block_->cubeUsed) u = 0;
  }

  // The next `bytes` of memory `mem`. A cube memory's (L1, L0A, L0B, L0C, BT) are filled with stale
  // bytes here, as UB is at the block's start.
  uint8_t *Carve(const char *call, ::ms_ops::twin::LocalMem mem, uint64_t bytes, uint32_t num, uint32_t len,
                 const char *what, uint32_t stride) {
    if (!owns_) twin_detail::Fail(call, "TPipe already destroyed");
    const bool ub = mem == ::ms_ops::twin::kMemUb;
    uint32_t &used = ub ? block_->ubUsed : block_->cubeUsed[mem];
    const uint64_t budget = ::ms_ops::twin::kLocalMemBytes[mem];
    if (used + bytes > budget)
      twin_detail::Fail(call, "request of " + twin_detail::Str(num) + " x " + twin_detail::Str(len) + " bytes (" +
                                  twin_detail::Str(bytes) + " bytes, " + twin_detail::Str(used) +
                                  " already in use) exceeds the " + twin_detail::Str(budget) + "-byte " +
                                  ::ms_ops::twin::kLocalMemNames[mem]);
    const uint64_t off = ::ms_ops::twin::LocalMemBase(mem) + used;
    uint8_t *p = block_->ub + off;
    if (!ub) std::memset(p, 0xFF, bytes);
    block_->races->Carve(off, bytes, what, num, stride);
    used += static_cast<uint32_t>(bytes);
    return p;
  }

  ::ms_ops::twin::Block *block_;
  bool owns_ = true;
};

// The memories of LocalMemAllocator (CANN's newer way to lay out local tensors without a TPipe).
enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

namespace twin_detail {

// The position a tensor of memory `hard` takes when Alloc names none, and its alignment there.
constexpr TPosition DefaultPosition(Hardware hard) {
  switch (hard) {
    case Hardware::L1: return TPosition::A1;
    case Hardware::L0A: return TPosition::A2;
    case Hardware::L0B: return TPosition::B2;
    case Hardware::L0C: return TPosition::CO1;
    case Hardware::BIAS: return TPosition::C2;
    default: return TPosition::VECCALC;
  }
}
constexpr uint32_t AllocAlign(Hardware hard) {
  return hard == Hardware::L0A || hard == Hardware::L0B ? 512 : hard == Hardware::L0C || hard == Hardware::BIAS ? 64 : 32;
}

}  // namespace twin_detail

// Tensors one after another from address 0 of a memory, each at the memory's alignment
// (LocalTensor(pos, addr, size): no TPipe).
template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
  static_assert(hard != Hardware::GM && hard != Hardware::FIXBUF && hard != Hardware::MAX,
                "LocalMemAllocator: UB, L1, L0A, L0B, L0C or BIAS");
  static constexpr TPosition kPos = twin_detail::DefaultPosition(hard);

 public:
  uint32_t GetCurAddr() const { return head_; }
  template <TPosition pos, class T, uint32_t tileSize>
  LocalTensor<T> Alloc() {
    return Take<T>(pos, tileSize);
  }
  template <TPosition pos, class T>
  LocalTensor<T> Alloc(uint32_t tileSize) {
    return Take<T>(pos, tileSize);
  }
  template <class T, uint32_t tileSize>
  LocalTensor<T> Alloc() {
    return Take<T>(kPos, tileSize);
  }
  template <class T>
  LocalTensor<T> Alloc(uint32_t tileSize) {
    return Take<T>(kPos, tileSize);
  }
  // The rest of the memory.
  template <class T>
  LocalTensor<T> Alloc() {
    const uint32_t bytes = ::ms_ops::twin::kLocalMemBytes[twin_detail::MemoryOf(kPos)];
    return Take<T>(kPos, head_ < bytes ? (bytes - head_) / sizeof(T) : 0);
  }

 private:
  template <class T>
  LocalTensor<T> Take(TPosition pos, uint32_t tileSize) {
    if (twin_detail::MemoryOf(pos) != twin_detail::MemoryOf(kPos))
      twin_detail::Fail("LocalMemAllocator::Alloc", "the position's memory is not the allocator's");
    LocalTensor<T> t(pos, head_, tileSize);
    const uint64_t end = head_ + uint64_t(tileSize) * sizeof(T), align = twin_detail::AllocAlign(hard);
    head_ = static_cast<uint32_t>((end + align - 1) / align * align);
    return t;
  }

  uint32_t head_ = 0;
};

// The core's SoC state at a kernel's start (atomics off, full vector mask), which a twin block has.
inline void InitSocState() {}

}  // namespace AscendC

// The running block's live TPipe. At global scope, as CANN declares it: kernels call it unqualified
// from their own namespaces.
inline AscendC::TPipe *GetTPipePtr() { return static_cast<AscendC::TPipe *>(::ms_ops::twin::Current().pipe); }

namespace AscendC {
using ::GetTPipePtr;
}  // namespace AscendC

#endif  // MS_OPS_TWIN_PIPE_H_
