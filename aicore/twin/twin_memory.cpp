#include "twin_memory.h"

#include <sys/mman.h>

#include <cstring>
#include <new>

namespace ms_ops {
namespace twin {

Pages &Pages::operator=(Pages &&other) noexcept {
  if (this != &other) {
    Release();
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void Pages::Reserve(size_t bytes) {
  if (bytes <= bytes_) return;
  Release();
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<uint8_t *>(p);
  bytes_ = bytes;
}

void Pages::Release() {
  if (data_ != nullptr) munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

Pages DeviceWorkspace(size_t bytes) {
  Pages ws;
  if (bytes == 0) return ws;
  ws.Reserve(bytes);
  std::memset(ws.data(), 0xFF, bytes);
  return ws;
}

}  // namespace twin
}  // namespace ms_ops
