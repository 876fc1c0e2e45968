#include "twin_races.h"

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

void Races::Reset(const uint8_t *ub, bool on) {
  ub_ = ub;
  on_ = on;
  if (!on) return;
  std::memset(time_, 0, sizeof(time_));
  std::memset(known_, 0, sizeof(known_));
  std::memset(flag_, 0, sizeof(flag_));
  std::memset(pending_, 0, sizeof(pending_));
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

void Races::SetFlag(Pipe src, uint32_t event, int32_t id) {
  if (!on_) return;
  if (event >= kEvents || id < 0 || static_cast<uint32_t>(id) >= kEventIds) return;
  // A second SetFlag before the WaitFlag: the wait is only sure to see the first.
  if (pending_[event][id]++ == 0) flag_[event][id] = Now(src);
}

void Races::WaitFlag(Pipe src, Pipe dst, uint32_t event, int32_t id) {
  if (!on_) return;
  if (event >= kEvents || id < 0 || static_cast<uint32_t>(id) >= kEventIds) return;
  if (pending_[event][id] == 0) {
    const std::string evt = std::string("<HardEvent::") + PipeName(src) + "_" + PipeName(dst) + ">(" +
                            std::to_string(id) + ")";
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

void Races::UseAfterFree(const char *call, uint32_t cell) {
  Fail(call, "use after FreeTensor: " + Where(cell) + " was given back to its queue by FreeTensor and not "
                 "allocated again (the queue may already have handed it to another pipe)");
}

void Races::Reserved(const char *call, uint64_t off, uint64_t bytes) {
  Fail(call, "touches UB bytes [" + std::to_string(off) + ", " + std::to_string(off + bytes) + ") above the usable " +
                 std::to_string(kAtlasA2.ubSize) + " bytes: the top 256 B and the 8 KiB below them are reserved for "
                 "the runtime on the NPU (a buffer may extend over them, a kernel must not use them)");
}

void Races::Access(Pipe p, const char *call, const void *addr, uint64_t bytes, bool write) {
  if (bytes == 0) return;
  const uint64_t off = static_cast<const uint8_t *>(addr) - ub_;
  if (__builtin_expect(off + bytes > kAtlasA2.ubSize && off < kUbBytes, 0)) Reserved(call, off, bytes);
  if (!on_) return;
  const uint64_t first = off / 32, end = (off + bytes + 31) / 32;
  if (end > kCells) return;  // the bounds checks report it
  const uint32_t now = ++time_[p];
  const Clock &k = known_[p];
  for (uint64_t c = first; c < end; ++c) {
    Cell &cell = cells_[c];
    if (__builtin_expect(cell.freed, 0)) UseAfterFree(call, c);
    if (cell.wPipe != p && cell.wEpoch > k.t[cell.wPipe]) {
      Report(write ? "write-after-write" : "read-after-write", p, call, write, Pipe(cell.wPipe), cell.wCall, c);
      cell.wEpoch = 0;  // tolerated (not strict): reported once
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
      if (q != p && cell.rEpoch[q] > k.t[q]) Report("write-after-read", p, call, true, Pipe(q), cell.rCall[q], c);
      cell.rEpoch[q] = 0;
    }
    cell.wPipe = p;
    cell.wEpoch = now;
    cell.wCall = call;
  }
}

std::string Races::Where(uint32_t cell) const {
  const uint64_t off = uint64_t(cell) * 32;
  std::string at = "UB bytes [" + std::to_string(off) + ", " + std::to_string(off + 32) + ")";
  for (uint32_t r = numRegions_; r-- > 0;) {
    const Region &g = regions_[r];
    if (off < g.off || off >= g.off + g.bytes) continue;
    const uint64_t i = (off - g.off) / g.len;
    std::string buf = g.num > 1 ? " buffer " + std::to_string(i) : std::string();
    return at + " (" + g.what + buf + " at UB offset " + std::to_string(g.off + i * g.len) + ", byte " +
           std::to_string(off - g.off - i * g.len) + ")";
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
