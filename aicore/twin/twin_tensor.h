// GlobalTensor (GM) and LocalTensor (UB) of the twin. Both carry their extent so that every access
// is bounds-checked: a GM access past a known buffer size, or a UB access past the end of the
// TQue/TBuf buffer the tensor lies in, corrupts memory on the NPU and is always a violation here.
// (A LocalTensor's GetSize may be smaller than its buffer; touching the rest of the buffer is
// harmless on the NPU, e.g. the 32-byte round-up of DataCopyPad, so the bound is the buffer.)
#ifndef MS_OPS_TWIN_TENSOR_H_
#define MS_OPS_TWIN_TENSOR_H_

#include <cstdint>
#include <type_traits>

#include "twin_profile.h"
#include "twin_races.h"
#include "twin_types.h"

namespace AscendC {
namespace twin_detail {

[[noreturn]] __attribute__((noinline, cold)) inline void GmOutOfBounds(const char *call, uint64_t end, uint64_t size) {
  Fail(call, "out-of-bounds GM access: elements up to " + Str(end) + " of a " + Str(size) + "-element GM buffer");
}

[[noreturn]] __attribute__((noinline, cold)) inline void UbOutOfRange(const char *call, uint64_t end, uint64_t size) {
  Fail(call, "UB access out of range: elements up to " + Str(end) + " of a " + Str(size) + "-element UB buffer");
}

using ::ms_ops::twin::Pipe;
using ::ms_ops::twin::kPipeS;
using ::ms_ops::twin::kPipeV;
using ::ms_ops::twin::kPipeMte2;
using ::ms_ops::twin::kPipeMte3;

inline ::ms_ops::twin::Races &Races() { return *::ms_ops::twin::Current().races; }

// `bytes` of UB from p read / written by `call` on pipe `pipe` (twin_races.h).
inline void UbRead(Pipe pipe, const char *call, const void *p, uint64_t bytes) {
  Races().Read(pipe, call, p, bytes);
  ::ms_ops::twin::ProfileUb(pipe, bytes);
}
inline void UbWrite(Pipe pipe, const char *call, const void *p, uint64_t bytes) {
  Races().Write(pipe, call, p, bytes);
  ::ms_ops::twin::ProfileUb(pipe, bytes);
}

// A tensor of int4b_t: its elements are half bytes, which the twin's tensors do not address.
template <typename T>
inline void Int4Refused(const char *call) {
  if constexpr (std::is_same_v<T, int4b_t>)
    Fail(call, "int4b_t tensors are not modelled by the twin (two elements per byte): run this kernel with "
               "another dtype");
}

inline uint64_t UbOffset(const void *p) {
  return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(::ms_ops::twin::Current().ub);
}

// The local memory a buffer at position pos lives in (twin_local_memory.h).
constexpr ::ms_ops::twin::LocalMem MemoryOf(TPosition pos) {
  switch (pos) {
    case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM: return ::ms_ops::twin::kMemL1;
    case TPosition::A2: return ::ms_ops::twin::kMemL0A;
    case TPosition::B2: return ::ms_ops::twin::kMemL0B;
    case TPosition::CO1: return ::ms_ops::twin::kMemL0C;
    case TPosition::C2: return ::ms_ops::twin::kMemBt;
    default: return ::ms_ops::twin::kMemUb;
  }
}

// The local memory an address lies in (kLocalMems outside the block's arena).
inline ::ms_ops::twin::LocalMem LocalMemOf(const void *p) { return ::ms_ops::twin::LocalMemAt(UbOffset(p)); }

// The address a kernel sees: the byte offset within the tensor's own memory (UB, L1, ...).
inline uint64_t PhyAddr(const void *p) { return UbOffset(p) - ::ms_ops::twin::LocalMemBase(LocalMemOf(p)); }

// A tensor made at an address of its own (LocalTensor(pos, addr, tileSize)), not carved by a
// TPipe: the first in a block starts the block's local memories afresh, stale bytes in the cube
// memories (UB has them from the block's start) and no pipe history, as the carve of a TPipe does.
void StaticTensorStart();

}  // namespace twin_detail

template <typename T>
class GlobalTensor {
 public:
  using PrimType = T;

  void SetGlobalBuffer(__gm__ T *buffer, uint64_t bufferSize) {
    twin_detail::Int4Refused<T>("GlobalTensor::SetGlobalBuffer");
    addr_ = base_ = buffer;
    size_ = bufferSize;
    sized_ = true;
  }
  // Size unknown: accesses through this tensor are not bounds-checked.
  void SetGlobalBuffer(__gm__ T *buffer) {
    twin_detail::Int4Refused<T>("GlobalTensor::SetGlobalBuffer");
    addr_ = base_ = buffer;
    size_ = 0;
    sized_ = false;
  }

  T GetValue(uint64_t offset) const {
    TwinCheck("GlobalTensor::GetValue", offset, 1);
    ::ms_ops::twin::ProfileGmScalar();
    twin_detail::Races().GmRead(twin_detail::kPipeS, "GlobalTensor::GetValue", addr_ + offset, sizeof(T));
    return addr_[offset];
  }
  void SetValue(uint64_t offset, T value) const {
    TwinCheck("GlobalTensor::SetValue", offset, 1);
    ::ms_ops::twin::ProfileGmScalar();
    ::ms_ops::twin::GmWritten("GlobalTensor::SetValue", base_, addr_ + offset, sizeof(T), false);
    addr_[offset] = value;
  }
  T &operator()(uint64_t offset) const {
    TwinCheck("GlobalTensor::operator()", offset, 1);
    ::ms_ops::twin::ProfileGmScalar();
    return addr_[offset];
  }
  GlobalTensor operator[](uint64_t offset) const {
    TwinCheck("GlobalTensor::operator[]", offset, 0);
    GlobalTensor v = *this;
    v.addr_ += offset;
    if (sized_) v.size_ -= offset;
    return v;
  }

  uint64_t GetSize() const { return size_; }
  __gm__ T *GetPhyAddr() const { return addr_; }
  __gm__ T *GetPhyAddr(uint64_t offset) const { return addr_ + offset; }
  void SetL2CacheHint(CacheMode) {}

  // Twin internals: the range [offset, offset + count) must lie inside a sized buffer.
  void TwinCheck(const char *call, uint64_t offset, uint64_t count) const {
    if (__builtin_expect(sized_ && (offset > size_ || count > size_ - offset), 0))
      twin_detail::GmOutOfBounds(call, offset + count, size_);
  }
  T *TwinData() const { return addr_; }
  T *TwinBase() const { return base_; }

 private:
  T *addr_ = nullptr;
  T *base_ = nullptr;  // what SetGlobalBuffer was given: names the buffer in messages
  uint64_t size_ = 0;
  bool sized_ = false;
};

template <typename T>
class LocalTensor {
 public:
  using PrimType = T;

  LocalTensor() = default;
  // tileSize elements at byte address addr of the memory position pos names, without a TPipe.
  LocalTensor(TPosition pos, uint64_t addr, uint32_t tileSize) {
    const ::ms_ops::twin::LocalMem mem = twin_detail::MemoryOf(pos);
    const uint64_t bytes = ::ms_ops::twin::kLocalMemBytes[mem];
    if (addr % 32 != 0 || addr + uint64_t(tileSize) * sizeof(T) > bytes)
      twin_detail::Fail("LocalTensor", "address " + twin_detail::Str(addr) + " with " + twin_detail::Str(tileSize) +
                                           " elements is not a 32-byte aligned range of the " +
                                           twin_detail::Str(bytes) + "-byte " + ::ms_ops::twin::kLocalMemNames[mem]);
    twin_detail::StaticTensorStart();
    addr_ = reinterpret_cast<T *>(::ms_ops::twin::Current().ub + ::ms_ops::twin::LocalMemBase(mem) + addr);
    size_ = tileSize;
    cap_ = static_cast<uint32_t>((bytes - addr) / sizeof(T));
    twin_detail::Int4Refused<T>("LocalTensor");
  }

  T GetValue(uint32_t index) const {
    if (__builtin_expect(index >= cap_, 0)) twin_detail::UbOutOfRange("LocalTensor::GetValue", uint64_t(index) + 1, cap_);
    twin_detail::UbRead(twin_detail::kPipeS, "LocalTensor::GetValue", addr_ + index, sizeof(T));
    return addr_[index];
  }
  template <typename S>
  void SetValue(uint32_t index, S value) const {
    if (__builtin_expect(index >= cap_, 0)) twin_detail::UbOutOfRange("LocalTensor::SetValue", uint64_t(index) + 1, cap_);
    twin_detail::UbWrite(twin_detail::kPipeS, "LocalTensor::SetValue", addr_ + index, sizeof(T));
    addr_[index] = static_cast<T>(value);
  }
  T &operator()(uint32_t index) const {
    if (__builtin_expect(index >= cap_, 0)) twin_detail::UbOutOfRange("LocalTensor::operator()", uint64_t(index) + 1, cap_);
    // A reference the scalar unit may read or write: a write covers both checks.
    twin_detail::UbWrite(twin_detail::kPipeS, "LocalTensor::operator()", addr_ + index, sizeof(T));
    return addr_[index];
  }
  LocalTensor operator[](uint32_t offset) const {
    if (__builtin_expect(offset > cap_, 0)) twin_detail::UbOutOfRange("LocalTensor::operator[]", offset, cap_);
    return LocalTensor(addr_ + offset, size_ > offset ? size_ - offset : 0, cap_ - offset);
  }

  template <typename U>
  LocalTensor<U> ReinterpretCast() const {
    return LocalTensor<U>::TwinMake(reinterpret_cast<U *>(addr_), uint64_t(size_) * sizeof(T) / sizeof(U),
                                    uint64_t(cap_) * sizeof(T) / sizeof(U));
  }

  uint32_t GetSize() const { return size_; }
  // Only within the underlying buffer: a larger size would let later calls run past it.
  void SetSize(uint32_t size) {
    if (size > cap_) twin_detail::UbOutOfRange("LocalTensor::SetSize", size, cap_);
    size_ = size;
  }
  // The address: the byte offset of the tensor in its memory (UB, L1, L0A, ...).
  uint64_t GetPhyAddr() const { return twin_detail::PhyAddr(addr_); }
  uint64_t GetPhyAddr(uint32_t offset) const { return twin_detail::PhyAddr(addr_ + offset); }

  // Twin internals, for TQue/TBuf and the copy and vector calls.
  static LocalTensor TwinMake(T *addr, uint32_t size, uint32_t cap) { return LocalTensor(addr, size, cap); }
  T *TwinData() const { return addr_; }
  uint32_t TwinCap() const { return cap_; }

 private:
  LocalTensor(T *addr, uint32_t size, uint32_t cap) : addr_(addr), size_(size), cap_(cap) {
    twin_detail::Int4Refused<T>("LocalTensor");
  }

  T *addr_ = nullptr;
  uint32_t size_ = 0;  // what GetSize reports
  uint32_t cap_ = 0;   // elements up to the end of the underlying buffer: the access bound
};

}  // namespace AscendC

#endif  // MS_OPS_TWIN_TENSOR_H_
