#include "twin_races.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "platform.h"
#include "twin_runtime.h"

namespace ms_ops {
namespace twin {

const char *PipeName(Pipe p) {
  static const char *const kNames[kPipes] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
  return p < kPipes ? kNames[p] : "?";
}

namespace {

// With MS_OPS_TWIN_AUTO_SYNC=1 the twin takes a kernel as CANN's compiler builds it with
// --cce-auto-sync, on by default in CANN's operator projects: the compiler orders the scalar unit
// with MTE2, MTE3 and V, both ways, where their accesses meet, so an unordered meeting of p and q
// is not a race but a wait the compiler inserts (the compiler follows LocalTensor dependencies;
// the twin assumes it finds them all). The pairs among MTE2, V and MTE3, which the framework
// orders through queues, are checked as before. Our own kernels are checked without it: they
// order every pair themselves. Read at each unordered meeting only, so it costs nothing otherwise.
bool AutoSynced(Pipe p, Pipe q) {
  if ((p == kPipeS) == (q == kPipeS)) return false;
  const Pipe other = p == kPipeS ? q : p;
  if (other != kPipeV && other != kPipeMte2 && other != kPipeMte3) return false;
  const char *v = std::getenv("MS_OPS_TWIN_AUTO_SYNC");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace

void Races::Reset(const uint8_t *ub, bool on) {
  ub_ = ub;
  on_ = on;
  if (!on) return;
  std::memset(time_, 0, sizeof(time_));
  std::memset(known_, 0, sizeof(known_));
  std::memset(flag_, 0, sizeof(flag_));
  std::memset(pending_, 0, sizeof(pending_));
  std::memset(gm_, 0, sizeof(gm_));
  gmNext_ = gmLatest_ = 0;
  numRegions_ = 0;
}

void Races::Carve(uint64_t off, uint64_t bytes, const char *what, uint32_t num, uint32_t len) {
  if (!on_) return;
  const uint64_t first = off / 32, end = (off + bytes + 31) / 32;
  if (end > kCells) return;  // TPipe refuses it first
  std::memset(&cells_[first], 0, (end - first) * sizeof(Cell));
  for (uint32_t i = 0; i < num; ++i)
    for (int s = 0; s < 2; ++s) hand_[s][(off + uint64_t(i) * len) / 32] = Clock{};
  // Regions carved after a TPipe::Reset overlay older ones: the newest is searched first.
  if (numRegions_ < kRegions) regions_[numRegions_++] = Region{off, bytes, what, num, len};
}

Clock Races::Now(Pipe p) const {
  Clock c = known_[p];
  c.t[p] = time_[p];
  return c;
}

void Races::Join(Clock &into, const Clock &from) {
  for (int q = 0; q < kPipes; ++q)
    if (from.t[q] > into.t[q]) into.t[q] = from.t[q];
}

namespace {

std::string EventText(Pipe src, Pipe dst, int32_t id) {
  return std::string("<HardEvent::") + PipeName(src) + "_" + PipeName(dst) + ">(" + std::to_string(id) + ")";
}

}  // namespace

void Races::SetFlag(Pipe src, Pipe dst, uint32_t event, int32_t id) {
  if (!on_) return;
  if (event >= kEvents || id < 0 || static_cast<uint32_t>(id) >= kEventIds) return;
  flagPipes_[event][0] = src;
  flagPipes_[event][1] = dst;
  // A second SetFlag before the WaitFlag: the wait is only sure to see the first.
  if (pending_[event][id]++ == 0) flag_[event][id] = Now(src);
}

void Races::WaitFlag(Pipe src, Pipe dst, uint32_t event, int32_t id) {
  if (!on_) return;
  if (event >= kEvents || id < 0 || static_cast<uint32_t>(id) >= kEventIds) return;
  if (pending_[event][id] == 0) {
    const std::string evt = EventText(src, dst, id);
    Fail("WaitFlag", "WaitFlag" + evt + " with no SetFlag" + evt + " before it: the NPU would wait forever");
  }
  --pending_[event][id];
  Join(known_[dst], flag_[event][id]);
}

void Races::BarrierAll() {
  if (!on_) return;
  Clock all;
  std::memcpy(all.t, time_, sizeof(all.t));
  for (int p = 0; p < kPipes; ++p) known_[p] = all;
}

void Races::Post(Pipe from, int slot, const void *addr) {
  if (!on_) return;
  const uint64_t cell = (static_cast<const uint8_t *>(addr) - ub_) / 32;
  if (cell < kCells) hand_[slot][cell] = Now(from);
}

void Races::Take(Pipe to, int slot, const void *addr) {
  if (!on_) return;
  const uint64_t cell = (static_cast<const uint8_t *>(addr) - ub_) / 32;
  if (cell < kCells) Join(known_[to], hand_[slot][cell]);
}

void Races::MarkFreed(const void *addr, uint64_t bytes, bool freed) {
  if (!on_) return;
  const uint64_t off = static_cast<const uint8_t *>(addr) - ub_;
  const uint64_t first = off / 32, end = (off + bytes + 31) / 32;
  for (uint64_t c = first; c < end && c < kCells; ++c) cells_[c].freed = freed;
}

void Races::AtEnd() {
  if (!on_) return;
  for (uint32_t e = 0; e < kEvents; ++e)
    for (uint32_t id = 0; id < kEventIds; ++id) {
      if (pending_[e][id] == 0) continue;
      const std::string evt = EventText(flagPipes_[e][0], flagPipes_[e][1], static_cast<int32_t>(id));
      Fail("kernel end", "SetFlag" + evt + " was never consumed by a WaitFlag" + evt + " (" +
                             std::to_string(pending_[e][id]) + " pending): on the NPU the event stays set for "
                             "the next kernel of the core (SetFlag and WaitFlag come in pairs)");
    }
}

uintptr_t Races::GmWritten::Hit(uintptr_t a, uintptr_t b) const {
  // The row starting at or before a, else the next one.
  const uint64_t k = a > lo ? (a - lo) / pitch : 0;
  const uintptr_t start = lo + k * pitch;
  if (k < rows && start < b && start + rowBytes > a) return std::max(start, a);
  if (k + 1 < rows && start + pitch < b) return start + pitch;
  return 0;
}

void Races::GmWrite(const char *call, const void *gm, uint64_t rows, uint64_t rowBytes, uint64_t pitch) {
  if (!on_ || rows == 0 || rowBytes == 0) return;
  gmLatest_ = time_[kPipeMte3];
  gm_[gmNext_] = GmWritten{reinterpret_cast<uintptr_t>(gm), rows, rowBytes, rows > 1 ? pitch : rowBytes, gmLatest_, call};
  gmNext_ = (gmNext_ + 1) % kGmWrites;
}

void Races::GmRead(Pipe p, const char *call, const void *gm, uint64_t bytes) {
  if (!on_ || bytes == 0) return;
  const uint32_t seen = known_[p].t[kPipeMte3];
  if (seen >= gmLatest_) return;
  if (AutoSynced(p, kPipeMte3)) {
    known_[p].t[kPipeMte3] = time_[kPipeMte3];
    return;
  }
  const uintptr_t lo = reinterpret_cast<uintptr_t>(gm), hi = lo + bytes;
  for (GmWritten &w : gm_) {
    if (w.t <= seen) continue;
    const uintptr_t at = w.Hit(lo, hi);
    if (at == 0) continue;
    char where[64];
    std::snprintf(where, sizeof(where), "GM byte %#llx", static_cast<unsigned long long>(at));
    const std::string pn = PipeName(p);
    w.t = 0;  // tolerated (not strict): reported once
    Hazard(call, std::string("GM race (read-after-write): ") + call + " on " + pn + " reads " + where + " that " +
                     w.call + " on MTE3 wrote, and nothing orders MTE3 before " + pn + " (SetFlag/WaitFlag<HardEvent::"
                     "MTE3_" + pn + "> or PipeBarrier<PIPE_ALL>): the write may still be in flight");
  }
}

void Races::UseAfterFree(const char *call, uint32_t cell) {
  Fail(call, "use after FreeTensor: " + Where(cell) + " was given back to its queue by FreeTensor and not "
                 "allocated again (the queue may already have handed it to another pipe)");
}

void Races::Reserved(Pipe p, const char *call, uint64_t off, uint64_t bytes) {
  if (off >= kUbBytes) {
    // A cube memory: the cube's pipes (MTE1, M, FIX) and the copies (MTE2, MTE3) reach it.
    if (p != kPipeV && p != kPipeS) return;
    Fail(call, std::string("the ") + (p == kPipeV ? "vector" : "scalar") + " unit reaches only UB, not " +
                   kLocalMemNames[LocalMemAt(off)] + " (a tensor of a queue or TBuf at a cube position)");
  }
  Fail(call, "touches UB bytes [" + std::to_string(off) + ", " + std::to_string(off + bytes) + ") above the usable " +
                 std::to_string(kAtlasA2.ubSize) + " bytes: the top 256 B are reserved for the runtime on the NPU (a "
                 "buffer may extend over them, a kernel must not use them)");
}

void Races::Access(Pipe p, const char *call, const void *addr, uint64_t bytes, bool write) {
  if (bytes == 0) return;
  CheckReserved(p, call, addr, bytes);
  const uint64_t off = static_cast<const uint8_t *>(addr) - ub_;
  const uint64_t first = off / 32, end = (off + bytes + 31) / 32;
  if (end > kCells) return;  // the bounds checks report it
  const uint32_t now = ++time_[p];
  const Clock &k = known_[p];
  for (uint64_t c = first; c < end; ++c) {
    Cell &cell = cells_[c];
    if (__builtin_expect(cell.freed, 0)) UseAfterFree(call, c);
    if (cell.wPipe != p && cell.wEpoch > k.t[cell.wPipe]) {
      if (AutoSynced(p, Pipe(cell.wPipe))) {
        known_[p].t[cell.wPipe] = time_[cell.wPipe];
      } else {
        Report(write ? "write-after-write" : "read-after-write", p, call, write, Pipe(cell.wPipe), cell.wCall, c);
        cell.wEpoch = 0;  // tolerated (not strict): reported once
      }
    }
    if (!write) {
      // The scalar unit issues every pipe's instructions and waits for its own loads: a later
      // access of any pipe starts after a scalar read has completed.
      if (p != kPipeS) {
        cell.rEpoch[p] = now;
        cell.rCall[p] = call;
      }
      continue;
    }
    for (int q = 0; q < kPipes; ++q) {
      if (q != p && cell.rEpoch[q] > k.t[q]) {
        if (AutoSynced(p, Pipe(q))) {
          known_[p].t[q] = time_[q];
        } else {
          Report("write-after-read", p, call, true, Pipe(q), cell.rCall[q], c);
        }
      }
      cell.rEpoch[q] = 0;
    }
    cell.wPipe = p;
    cell.wEpoch = now;
    cell.wCall = call;
  }
}

std::string Races::Where(uint32_t cell) const {
  // Offsets within the memory the cell is in (UB, or a cube memory of the arena).
  const uint64_t off = uint64_t(cell) * 32;
  const LocalMem mem = LocalMemAt(off);
  const uint64_t base = LocalMemBase(mem), rel = off - base;
  const std::string name = kLocalMemNames[mem];
  std::string at = name + " bytes [" + std::to_string(rel) + ", " + std::to_string(rel + 32) + ")";
  for (uint32_t r = numRegions_; r-- > 0;) {
    const Region &g = regions_[r];
    if (off < g.off || off >= g.off + g.bytes) continue;
    const uint64_t i = (off - g.off) / g.len;
    std::string buf = g.num > 1 ? " buffer " + std::to_string(i) : std::string();
    return at + " (" + g.what + buf + " at " + name + " offset " + std::to_string(g.off + i * g.len - base) +
           ", byte " + std::to_string(off - g.off - i * g.len) + ")";
  }
  return at;
}

void Races::Report(const char *kind, Pipe p, const char *call, bool write, Pipe q, const char *qCall,
                   uint32_t cell) {
  const std::string pn = PipeName(p), qn = PipeName(q);
  const char *earlier = std::strcmp(kind, "write-after-read") == 0 ? " read" : " wrote";
  Hazard(call, std::string("pipe race (") + kind + "): " + call + " on " + pn + (write ? " writes " : " reads ") +
                   Where(cell) + " that " + qCall + " on " + qn + earlier + ", and nothing orders " + qn +
                   " before " + pn + " (EnQue/DeQue of a queue between those pipes, "
                   "SetFlag/WaitFlag<HardEvent::" + qn + "_" + pn + "> or PipeBarrier<PIPE_ALL>)");
}

}  // namespace twin
}  // namespace ms_ops
