#include "twin_runtime.h"

#include <omp.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "platform.h"
#include "twin_gm_writes.h"
#include "twin_intrin.h"
#include "twin_memory.h"
#include "twin_profile.h"
#include "twin_races.h"

namespace ms_ops {
namespace twin {

__thread Block *tlsBlock = nullptr;

// twin_crosscore.cpp
CrossCore *NewCrossCore(uint32_t groups);
void DeleteCrossCore(CrossCore *c);
void CrossCoreAbort(CrossCore *c);

void OutsideLaunch() { throw Violation("twin", "AscendC API called outside ms_ops::twin::Launch"); }

void Fail(const char *call, const std::string &what) { throw Violation(call, what); }

std::string BlockName(bool aic, int64_t idx) { return (aic ? "AIC " : "block ") + std::to_string(idx); }

namespace {

// A warning once per kernel and call, ending in `consequence` and `mode`.
void Warn(const char *call, const std::string &what, const char *consequence, const char *mode) {
  const Block &b = Current();
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(std::string(b.kernel) + '\0' + call).second) return;
  std::fprintf(stderr, "ms_ops %s: %s: %s: warning: %s; %s (%s)\n", b.kernel,
               BlockName(b.coreType == kAic, b.idx).c_str(), call, what.c_str(), consequence, mode);
  std::fflush(stderr);
}

// In strict mode an error; else a warning once per kernel and call.
void WarnOnce(const char *call, const std::string &what, const char *consequence) {
  if (Current().strict) Fail(call, what + " (strict mode)");
  Warn(call, what, consequence, "MS_OPS_TWIN_STRICT=1 makes this an error");
}

}  // namespace

void Tolerated(const char *call, const std::string &what) {
  WarnOnce(call, what, "the NPU rounds down silently");
}

void Hazard(const char *call, const std::string &what) {
  WarnOnce(call, what, "on the NPU the result depends on the pipes' timing");
}

bool Strict() {
  const char *v = std::getenv("MS_OPS_TWIN_STRICT");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

bool TrackRaces(bool strict) {
  if (strict) return true;
  const char *v = std::getenv("MS_OPS_TWIN_RACES");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// The blocks of a cooperative launch run as fibers, a few OS threads taking turns at them (one per
// core): every block is live at once, as SyncAll needs, but a core switches blocks only where one
// waits at SyncAll, instead of the OS time-slicing one thread per block. With a thread per block
// the 24 blocks of Atlas A2 took turns on two cores with their UB and tiles evicting each other's
// from the caches: the flash-attention gradient ran 10% slower than with only two blocks.
// A fiber stays on the thread that started it: code compiled for threads may keep the address of
// a thread-local variable across the switch.
namespace {
struct Grid;
}  // namespace

struct Fiber {
  ucontext_t ctx;
  Pages stack;
  Pages arena;  // the block's UB
  Pages races;
  std::vector<GmWrite> gmLog;
  GmClock gmClock;
  Grid *grid = nullptr;
  uint32_t worker = 0;
  int64_t block = 0;
  bool done = false;
  // The block's thread-locals while it is switched out.
  Block *savedBlock = nullptr;
  Counters *savedProfile = nullptr;
};

// The fibers' scheduler: per thread, a queue of its fibers that may run.
class Fibers {
 public:
  explicit Fibers(uint32_t workers) : ready_(workers), left_(workers, 0), home_(workers) {}
  // Where thread w's fibers return when they end (their uc_link).
  ucontext_t *Home(uint32_t w) { return &home_[w]; }
  void Add(Fiber *f) {
    ready_[f->worker].push_back(f);
    ++left_[f->worker];
  }
  // Fiber f may run again (its SyncAll was released); the caller holds no scheduler lock.
  void Wake(Fiber *f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_[f->worker].push_back(f);
    }
    cv_.notify_all();
  }
  // Thread w's loop: runs its fibers until every one has ended.
  void Work(uint32_t w);
  // The running fiber gives its thread back until Wake (from SyncAll's barrier).
  static void Yield();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::deque<Fiber *>> ready_;
  std::vector<uint32_t> left_;
  std::vector<ucontext_t> home_;
};

thread_local Fiber *tlsFiber = nullptr;
thread_local ucontext_t *tlsWorker = nullptr;

void Fibers::Work(uint32_t w) {
  ucontext_t &self = home_[w];
  tlsWorker = &self;
  for (;;) {
    Fiber *f;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return left_[w] == 0 || !ready_[w].empty(); });
      if (ready_[w].empty()) break;
      f = ready_[w].front();
      ready_[w].pop_front();
    }
    tlsFiber = f;
    tlsBlock = f->savedBlock;
    tlsProfile = f->savedProfile;
    swapcontext(&self, &f->ctx);
    f->savedBlock = tlsBlock;
    f->savedProfile = tlsProfile;
    tlsFiber = nullptr;
    tlsBlock = nullptr;
    tlsProfile = nullptr;
    if (f->done) {
      std::lock_guard<std::mutex> lock(mu_);
      --left_[w];
    }
  }
  tlsWorker = nullptr;
}

void Fibers::Yield() { swapcontext(&tlsFiber->ctx, tlsWorker); }

// SyncAll's generation barrier over the live blocks of a cooperative launch. A block that ends
// (returns or fails) leaves it, so the others never wait for it; after a failure every wait
// throws, so the remaining blocks stop at their next SyncAll. While GM writes are tracked, each
// block's clock is released on arrival and acquires the join of every arrival's. A fiber waits by
// giving its thread to the other fibers; a thread (a mixed launch's blocks) on a condition.
class Barrier {
 public:
  explicit Barrier(int64_t live, Fibers *fibers = nullptr) : live_(live), fibers_(fibers) {}

  void Wait(GmClock *clock) {
    std::vector<uint32_t> published;
    if (clock != nullptr) published = clock->Release();
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t gen = generation_;
    GmClock::Join(joined_, published);
    if (!failed_ && ++arrived_ == live_) {
      Release(lock);
    } else if (failed_) {
      throw Violation("SyncAll", "another block failed");
    } else if (tlsFiber != nullptr) {
      waiting_.push_back(tlsFiber);
      lock.unlock();
      Fibers::Yield();
      lock.lock();
      if (generation_ == gen) throw Violation("SyncAll", "another block failed");
    } else {
      cv_.wait(lock, [&] { return generation_ != gen || failed_; });
      if (generation_ == gen) throw Violation("SyncAll", "another block failed");
    }
    // Read before this block can arrive again, so before the next generation replaces it.
    if (clock != nullptr) clock->Acquire(released_);
  }

  void Leave(bool failed) {
    std::unique_lock<std::mutex> lock(mu_);
    --live_;
    failed_ = failed_ || failed;
    if (failed_) WakeAll(lock);
    else if (arrived_ != 0 && arrived_ == live_) Release(lock);
  }

 private:
  void Release(std::unique_lock<std::mutex> &lock) {
    arrived_ = 0;
    ++generation_;
    released_.swap(joined_);
    joined_.clear();
    WakeAll(lock);
  }
  // Unlocks: a woken fiber may run on another thread at once, and takes the lock first.
  void WakeAll(std::unique_lock<std::mutex> &lock) {
    std::vector<Fiber *> woken;
    woken.swap(waiting_);
    cv_.notify_all();
    lock.unlock();
    for (Fiber *f : woken) fibers_->Wake(f);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t live_, arrived_ = 0;
  uint64_t generation_ = 0;
  bool failed_ = false;
  std::vector<uint32_t> joined_, released_;  // the clocks of this generation's arrivals, of the last one's
  Fibers *fibers_;
  std::vector<Fiber *> waiting_;
};

namespace {

// One local memory arena per thread (UB and the cube memories, twin_local_memory.h), reused by
// every block that thread runs, unmapped when the thread ends (page-aligned, so every address the
// kernel is given keeps its 32-byte alignment).
uint8_t *ThreadArena() {
  static thread_local Pages arena;
  arena.Reserve(kArenaBytes);
  return arena.data();
}

// The race tracking of the blocks this thread runs (a few MiB: a cell per 32 bytes of every local
// memory), touched only while tracking, and then only where the kernel works: small pages, or
// the one field a launch sets when not tracking would bring in a huge page.
Races *ThreadRaces() {
  static thread_local Pages pages;
  pages.Reserve(sizeof(Races), false);
  return pages.as<Races>();
}

// The GM write log and clock of the block this thread runs (twin_gm_writes.h).
std::vector<GmWrite> &ThreadGmLog() {
  static thread_local std::vector<GmWrite> log;
  return log;
}
GmClock &ThreadGmClock() {
  static thread_local GmClock clock;
  return clock;
}

thread_local std::string tlsLastFailure;

void Fence() {
#if defined(__SSE2__)
  // Streaming stores of DataCopy to GM (twin_copy.h) become visible to other threads here.
  _mm_sfence();
#endif
}

bool ValidBlockDim(const char *kernel, const char *launcher, uint32_t blockDim) {
  if (blockDim != 0) return true;
  tlsLastFailure = std::string(kernel) + ": " + launcher + ": blockDim is 0";
  return false;
}

// What the blocks of one launch share.
struct Grid {
  const char *kernel;
  uint32_t blockDim;
  uint64_t tilingKey;
  bool strict;
  Barrier *barrier;
  const std::function<void()> &body;
  Barrier *aivBarrier = nullptr;
  CrossCore *cross = nullptr;
  ProfileLaunch *profile = nullptr;
  GmWrites *gm = nullptr;  // while tracking races
  std::atomic<bool> failed{false};
  std::string firstError{};  // written once, by the block whose exchange set `failed`

  void Record(const Block &b, const char *call, const char *what) {
    if (failed.exchange(true)) return;
    firstError = std::string(kernel) + ": " + BlockName(b.coreType == kAic, b.idx) + ": " + call + ": " + what;
  }
  // The launching thread, after every block has ended.
  int Result() {
    std::string what;
    const GmWrite *w = !failed.load() && gm != nullptr ? gm->Conflict(what) : nullptr;
    if (w != nullptr) {
      failed = true;
      firstError = std::string(kernel) + ": " + BlockName(w->aic, w->block) + ": " + w->call + ": " + what;
    }
    if (!failed.load()) return 0;
    tlsLastFailure = firstError;
    return 1;
  }
};

// Block b of the launch on this thread: its UB and Block while the body runs, the launch's first
// error recorded (before the barrier learns of it, so no "another block failed" comes first).
// In a mixed launch, thread t of a group of three is its AIC (t % 3 == 0) or AIV t % 3 - 1.
// A fiber's block keeps its UB, race tracking and GM log in the fiber (its thread runs others).
void RunBlock(Grid &g, int64_t b, bool mixed = false, Fiber *fiber = nullptr) {
  bool ok = false;
  Block blk{g.kernel, b, g.blockDim, g.tilingKey, g.strict, nullptr, 0, nullptr, g.barrier, nullptr, 0};
  if (mixed) {
    blk.group = b / 3;
    blk.coreType = b % 3 == 0 ? kAic : kAiv;
    blk.subIdx = blk.coreType == kAic ? 0 : b % 3 - 1;
    blk.idx = blk.coreType == kAic ? blk.group : 2 * blk.group + blk.subIdx;
    blk.ratio = 2;
    blk.cross = g.cross;
    blk.aivBarrier = g.aivBarrier;
  }
  ProfileBlock profiled(g.profile, b, blk);
  if (!g.failed.load(std::memory_order_relaxed)) {
    Block *outer = tlsBlock;
    try {
      if (fiber != nullptr) {
        fiber->arena.Reserve(kArenaBytes);
        blk.ub = fiber->arena.data();
        fiber->races.Reserve(sizeof(Races), false);
        blk.races = fiber->races.as<Races>();
      } else {
        blk.ub = ThreadArena();
        blk.races = ThreadRaces();
      }
      blk.races->Reset(blk.ub, TrackRaces(g.strict));
      if (g.gm != nullptr) {
        blk.gmMine = fiber != nullptr ? &fiber->gmLog : &ThreadGmLog();
        blk.gmMine->clear();
        blk.gmAll = g.gm;
        blk.gmClock = fiber != nullptr ? &fiber->gmClock : &ThreadGmClock();
        blk.gmWho = static_cast<uint32_t>(b);
        blk.gmClock->Reset(blk.gmWho, mixed ? 3 * g.blockDim : g.blockDim);
      }
      // Stale UB contents on the NPU: 0xFF bytes read as NaN / -1, so a kernel that reads UB
      // it never wrote gets visibly wrong results instead of lucky zeros. The cube memories get
      // the same bytes where TPipe carves a buffer from them (most kernels use none).
      std::memset(blk.ub, 0xFF, kUbBytes);
      tlsBlock = &blk;
      g.body();
      // A tensor allocated and never freed leaves no event set on the NPU (FreeTensor is what sets
      // the one the next AllocTensor waits for), so a kernel may end holding one, as shipped
      // kernels do: worth a note, in strict mode too. Holding more than a queue has is the error,
      // at the AllocTensor that asks.
      if (blk.liveTensors != 0)
        Warn("kernel end", std::to_string(blk.liveTensors) + " tensor(s) still allocated (AllocTensor without FreeTensor)",
             "harmless at a kernel's end on the NPU", "a note, not an error, in strict mode too");
      blk.races->AtEnd();
      if (blk.gmAll != nullptr) blk.gmAll->Take(*blk.gmMine, *blk.gmClock);
      ok = true;
    } catch (const AicServed &) {
      // The AIC served its AIVs' Matmuls to the kernel's end: what it wrote before still counts.
      if (blk.gmAll != nullptr) blk.gmAll->Take(*blk.gmMine, *blk.gmClock);
      ok = true;
    } catch (const Violation &v) {
      g.Record(blk, v.call.c_str(), v.what());
    } catch (const std::exception &e) {
      g.Record(blk, "exception", e.what());
    } catch (...) {
      g.Record(blk, "exception", "unknown exception");
    }
    tlsBlock = outer;
    Fence();
  }
  if (g.barrier != nullptr) g.barrier->Leave(!ok);
  if (g.aivBarrier != nullptr && blk.coreType == kAiv) g.aivBarrier->Leave(!ok);
  if (!ok) CrossCoreAbort(g.cross);
}

}  // namespace

int Launch(const char *kernel, uint32_t blockDim, uint64_t tilingKey, const std::function<void()> &body) {
  if (!ValidBlockDim(kernel, "Launch", blockDim)) return 1;
  Grid g{kernel, blockDim, tilingKey, Strict(), nullptr, body};
  ProfileLaunch profile(kernel, blockDim, std::min(blockDim, kAtlasA2.aivCoreNum));
  g.profile = profile.Active();
  GmWrites gm;
  if (TrackRaces(g.strict)) g.gm = &gm;
  const int threads = static_cast<int>(std::min<int64_t>(blockDim, omp_get_max_threads()));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t b = 0; b < static_cast<int64_t>(blockDim); ++b) RunBlock(g, b);
  return g.Result();
}

namespace {

// A fiber's entry (makecontext passes ints: the Fiber's address in two halves).
void FiberMain(unsigned lo, unsigned hi) {
  Fiber *f = reinterpret_cast<Fiber *>(uintptr_t(hi) << 32 | lo);
  RunBlock(*f->grid, f->block, false, f);
  f->done = true;
}

// A fiber's stack: what a thread gets by default, mapped lazily in small pages (a transparent huge
// page would make the few KiB a block uses 2 MiB: 48 blocks of cross_entropy_grad_scale held 4-8
// MiB of stacks that way), below it a page that faults (an overflow stops there instead of writing
// over another mapping).
constexpr size_t kFiberStackBytes = size_t(8) << 20, kFiberGuardBytes = 4096;

// f's context: FiberMain(f) on f's stack, returning to `home`. Apart from the launch loop:
// getcontext returns twice as far as the compiler knows, which would make it keep the loop's
// variables in memory.
__attribute__((noinline)) void StartFiber(Fiber *f, ucontext_t *home) {
  mprotect(f->stack.data(), kFiberGuardBytes, PROT_NONE);
  getcontext(&f->ctx);
  f->ctx.uc_stack.ss_sp = f->stack.data() + kFiberGuardBytes;
  f->ctx.uc_stack.ss_size = kFiberStackBytes;
  f->ctx.uc_link = home;
  const uintptr_t at = reinterpret_cast<uintptr_t>(f);
  makecontext(&f->ctx, reinterpret_cast<void (*)()>(FiberMain), 2, unsigned(at & 0xFFFFFFFFu), unsigned(at >> 32));
}

}  // namespace

int LaunchCooperative(const char *kernel, uint32_t blockDim, uint64_t tilingKey, const std::function<void()> &body) {
  if (!ValidBlockDim(kernel, "LaunchCooperative", blockDim)) return 1;
  const uint32_t workers = static_cast<uint32_t>(std::min<int64_t>(blockDim, std::max(1, omp_get_max_threads())));
  Fibers fibers(workers);
  Barrier barrier(blockDim, &fibers);
  Grid g{kernel, blockDim, tilingKey, Strict(), &barrier, body};
  ProfileLaunch profile(kernel, blockDim, std::min(blockDim, kAtlasA2.aivCoreNum));
  g.profile = profile.Active();
  GmWrites gm;
  if (TrackRaces(g.strict)) g.gm = &gm;
  std::vector<std::unique_ptr<Fiber>> all(blockDim);
  for (uint32_t b = 0; b < blockDim; ++b) {
    Fiber *f = (all[b] = std::make_unique<Fiber>()).get();
    f->grid = &g;
    f->block = b;
    f->worker = b % workers;
    try {
      f->stack.Reserve(kFiberGuardBytes + kFiberStackBytes, false);
    } catch (const std::bad_alloc &) {
      Block blk{kernel, b, blockDim, tilingKey, g.strict, nullptr, 0, nullptr, nullptr, nullptr, 0};
      g.Record(blk, "LaunchCooperative", "no memory for the stack of a block");
      return g.Result();
    }
    StartFiber(f, fibers.Home(f->worker));
    fibers.Add(f);
  }
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (uint32_t w = 0; w < workers; ++w) {
    try {
      threads.emplace_back([&fibers, w] { fibers.Work(w); });
    } catch (const std::system_error &e) {
      // The blocks of the threads never started leave the barrier, so the started ones do not
      // wait for them.
      Block blk{kernel, w, blockDim, tilingKey, g.strict, nullptr, 0, nullptr, nullptr, nullptr, 0};
      g.Record(blk, "LaunchCooperative", e.what());
      for (uint32_t b = 0; b < blockDim; ++b)
        if (all[b]->worker >= w) barrier.Leave(true);
      break;
    }
  }
  for (std::thread &t : threads) t.join();
  return g.Result();
}

int LaunchMixed(const char *kernel, uint32_t blockDim, uint64_t tilingKey, const std::function<void()> &body) {
  if (!ValidBlockDim(kernel, "LaunchMixed", blockDim)) return 1;
  const uint32_t threads = 3 * blockDim;
  Barrier barrier(threads), aivBarrier(2 * blockDim);
  std::unique_ptr<CrossCore, void (*)(CrossCore *)> cross(NewCrossCore(blockDim), DeleteCrossCore);
  Grid g{kernel, blockDim, tilingKey, Strict(), &barrier, body, &aivBarrier, cross.get()};
  ProfileLaunch profile(kernel, threads, std::min(2 * blockDim, kAtlasA2.aivCoreNum));
  g.profile = profile.Active();
  GmWrites gm;
  if (TrackRaces(g.strict)) g.gm = &gm;
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    try {
      pool.emplace_back([&g, t] { RunBlock(g, t, true); });
    } catch (const std::system_error &e) {
      Block b{kernel, t, blockDim, tilingKey, g.strict, nullptr, 0, nullptr, nullptr, nullptr, 0};
      g.Record(b, "LaunchMixed", e.what());
      for (uint32_t r = t; r < threads; ++r) {
        barrier.Leave(true);
        if (r % 3 != 0) aivBarrier.Leave(true);
      }
      CrossCoreAbort(cross.get());
      break;
    }
  }
  for (std::thread &th : pool) th.join();
  return g.Result();
}

const std::string &LastFailure() { return tlsLastFailure; }

void RunAsAic() {
  Block &b = Current();
  if (b.cross == nullptr) b.coreType = kAic;
}

void GmWritten(const char *call, const void *base, const void *gm, uint64_t bytes, bool atomic) {
  Block &b = Current();
  if (b.gmMine == nullptr) return;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(gm);
  GmWrites::Log(*b.gmMine, GmWrite{lo, lo + bytes, reinterpret_cast<uintptr_t>(base), call, b.gmWho,
                                   b.gmClock->Segment(), b.idx, b.coreType == kAic, atomic});
}

bool SpansOverlap(const GmSpan &a, const GmSpan &b) {
  if (a.rows == 0 || a.bytes == 0 || b.rows == 0 || b.bytes == 0) return false;
  // Each run of the span with fewer runs against the one run of the other that could meet it:
  // the first whose end lies past the run's start.
  const GmSpan &s = a.rows <= b.rows ? a : b, &l = a.rows <= b.rows ? b : a;
  const int64_t lAt = static_cast<int64_t>(l.at), lBytes = static_cast<int64_t>(l.bytes);
  const int64_t lPitch = static_cast<int64_t>(l.pitch), lRows = static_cast<int64_t>(l.rows);
  for (uint64_t i = 0; i < s.rows; ++i) {
    const int64_t lo = static_cast<int64_t>(s.at + i * s.pitch), hi = lo + static_cast<int64_t>(s.bytes);
    const int64_t before = lo - lBytes - lAt;  // run j ends past lo iff j * pitch > before
    const int64_t j = before < 0 || lPitch == 0 ? 0 : before / lPitch + 1;
    if (j >= lRows) continue;
    const int64_t start = lAt + j * lPitch;
    if (start < hi && start + lBytes > lo) return true;
  }
  return false;
}

namespace {

// The spans held now. Small spans (at most kSmallBuckets buckets of 4 KiB) are listed in buckets of
// GM addresses (modulo kBuckets): in the list of every bucket their extent meets, so that small
// spans that share a byte share a bucket; a one-row span is not listed but holds its buckets' locks
// while it combines. Large spans (a Matmul's enAtomic C) are listed once, in their own list, which
// small spans consult whenever one is held. A bucket's lock is held for a few list operations or one
// row's combine (never while waiting), and blocks combining into far-apart bytes take different
// locks: with one list behind one mutex and condition variable, the two threads' millions of row
// adds per launch (the sparse attention gradient's partial sums) spent 10-15% of that kernel's time
// passing the lock's cache line and in futex wake-ups; with large spans listed in every bucket as
// well, each of their overlap checks ran once per bucket (the cross-entropy gradient-in-forward
// 25% slower).
constexpr unsigned kBucketShift = 12;
constexpr uint32_t kBuckets = 1024, kSmallBuckets = 16;

struct SpinLock {
  std::atomic<bool> busy{false};

  void Lock() {
    for (int spins = 0; busy.exchange(true, std::memory_order_acquire); ++spins) {
      // The holder may be a thread the OS has parked: after a while, give the core away.
      if (spins >= 64) std::this_thread::yield();
      while (busy.load(std::memory_order_relaxed)) Pause();
    }
  }
  void Unlock() { busy.store(false, std::memory_order_release); }

 private:
  static void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
};

struct alignas(64) Bucket {
  SpinLock lock;
  std::vector<GmSpan> held;
};

struct LargeSpans {
  SpinLock lock;
  std::vector<GmSpan> held;
  std::atomic<uint32_t> count{0};  // held.size(), read without the lock
};

Bucket *AllBuckets() {
  static Bucket *buckets = new Bucket[kBuckets];  // never destroyed: blocks may still run at exit
  return buckets;
}

LargeSpans &AllLargeSpans() {
  static LargeSpans *large = new LargeSpans();  // never destroyed, as the buckets
  return *large;
}

// The buckets a span's extent meets (kBuckets when it meets them all).
uint64_t BucketCount(const GmSpan &s) {
  if (s.rows == 0 || s.bytes == 0) return 0;
  const uint64_t lo = s.at >> kBucketShift, hi = (s.at + (s.rows - 1) * s.pitch + s.bytes - 1) >> kBucketShift;
  return std::min<uint64_t>(hi - lo + 1, kBuckets);
}

// f(i) for the buckets a span's extent meets, in increasing i (the order every holder locks them
// in, so that two spans locking overlapping sets cannot deadlock).
template <class F>
void ForEachBucket(const GmSpan &s, F f) {
  const uint64_t count = BucketCount(s);
  if (count == kBuckets) {
    for (uint32_t i = 0; i < kBuckets; ++i) f(i);
    return;
  }
  if (count == 0) return;
  const uint32_t first = static_cast<uint32_t>((s.at >> kBucketShift) % kBuckets);
  const uint32_t end = first + static_cast<uint32_t>(count);
  for (uint32_t i = 0; end > kBuckets && i < end - kBuckets; ++i) f(i);
  for (uint32_t i = first; i < end && i < kBuckets; ++i) f(i);
}

bool OverlapsAny(const std::vector<GmSpan> &held, const GmSpan &span) {
  return std::any_of(held.begin(), held.end(), [&](const GmSpan &o) { return SpansOverlap(o, span); });
}

void Erase(std::vector<GmSpan> &held, const GmSpan &span) {
  held.erase(std::find_if(held.begin(), held.end(), [&](const GmSpan &o) {
    return o.at == span.at && o.rows == span.rows && o.bytes == span.bytes && o.pitch == span.pitch;
  }));
}

}  // namespace

AtomicSpan::AtomicSpan(const GmSpan &span) : span_(span), large_(BucketCount(span) > kSmallBuckets) {
  Bucket *b = AllBuckets();
  LargeSpans &large = AllLargeSpans();
  for (;;) {
    if (large_) {
      large.lock.Lock();
      const bool clear = !OverlapsAny(large.held, span_);
      if (clear) {
        large.held.push_back(span_);
        large.count.fetch_add(1, std::memory_order_seq_cst);
      }
      large.lock.Unlock();
      if (clear) {
        // Small spans that begin from now on find this one in the list; those already held over
        // these bytes are waited for (a one-row span holds its bucket's lock until it is done).
        bool small = false;
        ForEachBucket(span_, [&](uint32_t i) {
          b[i].lock.Lock();
          small = small || OverlapsAny(b[i].held, span_);
          b[i].lock.Unlock();
        });
        if (!small) return;
        large.lock.Lock();
        Erase(large.held, span_);
        large.count.fetch_sub(1, std::memory_order_seq_cst);
        large.lock.Unlock();
      }
    } else {
      ForEachBucket(span_, [&](uint32_t i) { b[i].lock.Lock(); });
      bool clear = true;
      ForEachBucket(span_, [&](uint32_t i) { clear = clear && !OverlapsAny(b[i].held, span_); });
      if (clear && large.count.load(std::memory_order_seq_cst) > 0) {
        large.lock.Lock();
        clear = !OverlapsAny(large.held, span_);
        large.lock.Unlock();
      }
      if (clear && span_.rows == 1) {
        // One run (a store atomic's row): combined under the buckets' locks, held until the
        // destructor, with no list entry.
        locked_ = true;
        return;
      }
      if (clear) ForEachBucket(span_, [&](uint32_t i) { b[i].held.push_back(span_); });
      ForEachBucket(span_, [&](uint32_t i) { b[i].lock.Unlock(); });
      if (clear) return;
    }
    // A block on another thread combines into some of these bytes, for one store or one product.
    std::this_thread::yield();
  }
}

AtomicSpan::~AtomicSpan() {
  Bucket *b = AllBuckets();
  if (locked_) {
    ForEachBucket(span_, [&](uint32_t i) { b[i].lock.Unlock(); });
  } else if (large_) {
    LargeSpans &large = AllLargeSpans();
    large.lock.Lock();
    Erase(large.held, span_);
    large.count.fetch_sub(1, std::memory_order_seq_cst);
    large.lock.Unlock();
  } else {
    ForEachBucket(span_, [&](uint32_t i) {
      b[i].lock.Lock();
      Erase(b[i].held, span_);
      b[i].lock.Unlock();
    });
  }
}

void SyncAllBlocks(bool aivOnly) {
  Block &b = Current();
  // SyncAll begins with PipeBarrier<PIPE_ALL> on the NPU; writes before it and after it never race.
  b.races->BarrierAll();
  if (b.cross != nullptr) {
    // A mixed launch: SyncAll<true> joins its AIVs, SyncAll<false> every core.
    if (aivOnly && b.coreType == kAic) Fail("SyncAll", "SyncAll<true> (AIV only) called on the AIC");
    Fence();
    (aivOnly ? b.aivBarrier : b.barrier)->Wait(b.gmClock);
    return;
  }
  const uint32_t cores = aivOnly ? kAtlasA2.aivCoreNum : kAtlasA2.aicCoreNum;
  auto coreText = [&] { return std::to_string(cores) + (aivOnly ? " vector cores" : " AIC + AIV groups"); };
  if (b.barrier == nullptr) {
    if (b.num == 1) return;
    Fail("SyncAll", "the blocks of Launch do not all run at once; a kernel that calls SyncAll needs "
                    "ms_ops::twin::LaunchCooperative (on the NPU: blockDim must not exceed the " +
                        coreText() + ")");
  }
  if (b.num > cores)
    Fail("SyncAll", "blockDim " + std::to_string(b.num) + " exceeds the " + coreText() +
                        " of Atlas A2: the NPU would wait forever for blocks that cannot start");
  Fence();  // this block's GM writes are seen by every block after the barrier
  b.barrier->Wait(b.gmClock);
}

}  // namespace twin
}  // namespace ms_ops

namespace AscendC {
namespace twin_detail {

void StaticTensorStart() {
  ms_ops::twin::Block &b = ms_ops::twin::Current();
  if (b.staticTensors) return;
  b.staticTensors = true;
  using ms_ops::twin::LocalMem;
  for (int m = ms_ops::twin::kMemUb; m < ms_ops::twin::kLocalMems; ++m) {
    const uint32_t at = ms_ops::twin::LocalMemBase(LocalMem(m)), bytes = ms_ops::twin::kLocalMemBytes[m];
    // UB's buffers of a live TPipe keep their history; UB's stale bytes are there since the block began.
    if (m == ms_ops::twin::kMemUb) {
      if (b.ubUsed == 0) b.races->Carve(at, bytes, "LocalTensor", 1, bytes);
      continue;
    }
    std::memset(b.ub + at, 0xFF, bytes);
    b.races->Carve(at, bytes, "LocalTensor", 1, bytes);
  }
}

}  // namespace twin_detail
}  // namespace AscendC
