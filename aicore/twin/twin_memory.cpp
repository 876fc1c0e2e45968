#include "twin_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>

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

void Pages::Reserve(size_t bytes, bool hugePages) {
  if (bytes <= bytes_) return;
  Release();
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  if (hugePages) madvise(p, bytes, MADV_HUGEPAGE);
  data_ = static_cast<uint8_t *>(p);
  bytes_ = bytes;
}

void Pages::Trim(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), keep = (bytes + page - 1) / page * page;
  if (keep < bytes_) madvise(data_ + keep, bytes_ - keep, MADV_DONTNEED);
}

void Pages::Release() {
  if (data_ != nullptr) munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

namespace {

std::mutex spareMutex;

// The 0xFF fill, on every core for a large workspace: filling first touches fresh pages, and the
// kernel's page clearing plus the fill ran at about 2 GiB/s on one thread (200 ms for the 430 MiB
// of sparse_flash_attention_grad's partial sums) while the other cores waited for the launch.
void Fill(uint8_t *p, size_t bytes) {
  constexpr size_t kChunk = size_t(2) << 20;  // one transparent huge page
  const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t at = size_t(c) * kChunk;
    std::memset(p + at, 0xFF, std::min(kChunk, bytes - at));
  }
}
Pages *spare = new Pages();  // never destroyed: a launch may still hold a workspace at exit

}  // namespace

Workspace::Workspace(size_t bytes, Spare keep) : keep_(keep) {
  if (bytes == 0) return;
  {
    const std::lock_guard<std::mutex> lock(spareMutex);
    if (spare->size() >= bytes) pages_ = std::move(*spare);
  }
  pages_.Reserve(bytes);
  pages_.Trim(bytes);
  Fill(pages_.data(), bytes);
}

Workspace::~Workspace() {
  if (pages_.size() == 0 || pages_.size() > kSpareWorkspaceBytes || keep_ == kReturn) return;
  const std::lock_guard<std::mutex> lock(spareMutex);
  // The larger of the two stays: the next launch of the same op then finds its size.
  if (pages_.size() > spare->size()) *spare = std::move(pages_);
}

}  // namespace twin
}  // namespace ms_ops
