// Host memory the twin takes from the OS page by page (mmap) and returns when done (munmap).
//
// Why not malloc: after a freed block of a few MiB, glibc raises its mmap threshold to that size,
// and from then on keeps freed blocks below it in the arena of the thread that freed them. A
// launch runs on many threads (one per block in LaunchCooperative), so workspaces and scratch
// freed through malloc would stay resident in every arena for the life of the process. Pages
// cost exactly what is live.
#ifndef MS_OPS_TWIN_MEMORY_H_
#define MS_OPS_TWIN_MEMORY_H_

#include <cstddef>
#include <cstdint>

namespace ms_ops {
namespace twin {

class Pages {
 public:
  Pages() = default;
  ~Pages() { Release(); }
  Pages(Pages &&other) noexcept : data_(other.data_), bytes_(other.bytes_) {
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  Pages &operator=(Pages &&other) noexcept;
  Pages(const Pages &) = delete;
  Pages &operator=(const Pages &) = delete;

  // At least `bytes`, page-aligned; what it held before is not kept. Throws std::bad_alloc.
  // hugePages: transparent huge pages where the kernel can (for memory touched throughout); small
  // pages for memory touched here and there, which a huge page would fill 2 MiB at a time.
  void Reserve(size_t bytes, bool hugePages = true);
  // Returns the pages past the first `bytes` to the OS (they read as zeros when touched again).
  void Trim(size_t bytes);
  void Release();

  uint8_t *data() const { return data_; }
  size_t size() const { return bytes_; }
  template <typename T>
  T *as() const {
    return reinterpret_cast<T *>(data_);
  }

 private:
  uint8_t *data_ = nullptr;
  size_t bytes_ = 0;
};

// A launch's GM workspace: `bytes` filled with 0xFF like stale device memory (NaN for floats,
// -1 for integers), so a kernel reading workspace it never wrote gets visibly wrong results.
// Its pages come from, and go back to, one process-wide spare of at most kSpareWorkspaceBytes:
// mapping and first-touching a fresh 15 MiB (flash attention's) cost about 8 ms of one thread
// before every launch, the refill of mapped pages about 1 ms; with a 32 MiB bound the lightning
// indexer's 41 MiB (24 blocks at 16 heads) was mapped afresh on every launch, 1-3% of its time.
// A launch taking a larger spare returns its pages past `bytes` to the OS, so it holds no more than
// it asked for; larger workspaces (the cross-entropy logits chunks) are returned whole, so no more
// than the spare stays resident between launches. A launch that says kReturn returns its pages
// whatever their size: for a kernel that runs for seconds, whose workspace is the memory a caller
// chose (grad_in_forward's block of logits), refaulting costs nothing, and a spare would hold that
// memory through the rest of the step.
constexpr size_t kSpareWorkspaceBytes = size_t(64) << 20;

class Workspace {
 public:
  enum Spare { kKeep, kReturn };
  explicit Workspace(size_t bytes, Spare keep = kKeep);
  ~Workspace();
  Workspace(const Workspace &) = delete;
  Workspace &operator=(const Workspace &) = delete;

  uint8_t *data() const { return pages_.data(); }

 private:
  Pages pages_;
  Spare keep_;
};

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_MEMORY_H_
