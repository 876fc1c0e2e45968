// The local memories of an Atlas A2 core pair, as one arena per block: the vector core's UB and the
// cube core's L1, L0A, L0B, L0C and bias table (BT), each at a fixed offset. A TPipe carves a
// queue's or TBuf's buffer from the memory its position names (VECIN/VECOUT/VECCALC: UB;
// A1/B1/C1/TSCM: L1; A2: L0A; B2: L0B; CO1: L0C; C2: BT), within that memory's size, so that the
// race tracking (twin_races.h), which is indexed by arena offset, sees every memory at once.
#ifndef MS_OPS_TWIN_LOCAL_MEMORY_H_
#define MS_OPS_TWIN_LOCAL_MEMORY_H_

#include <cstdint>

namespace ms_ops {
namespace twin {

enum LocalMem : uint8_t { kMemUb = 0, kMemL1, kMemL0A, kMemL0B, kMemL0C, kMemBt, kLocalMems };

// Physical sizes (cann_reference.md §A.7): UB 192 KiB (its top 256 B reserved, twin_races.h), L1
// 512 KiB, L0A and L0B 64 KiB each, L0C 128 KiB, the bias table 1 KiB.
constexpr uint32_t kLocalMemBytes[kLocalMems] = {192 * 1024, 512 * 1024, 64 * 1024, 64 * 1024, 128 * 1024, 1024};
constexpr uint32_t LocalMemBase(LocalMem m) {
  uint32_t at = 0;
  for (int i = 0; i < m; ++i) at += kLocalMemBytes[i];
  return at;
}
constexpr uint32_t kArenaBytes = LocalMemBase(kLocalMems);
constexpr const char *kLocalMemNames[kLocalMems] = {"UB", "L1", "L0A", "L0B", "L0C", "BT"};

// The memory an arena offset lies in (kLocalMems past the arena).
constexpr LocalMem LocalMemAt(uint64_t off) {
  for (int i = 0; i < kLocalMems; ++i)
    if (off < LocalMemBase(LocalMem(i + 1))) return LocalMem(i);
  return kLocalMems;
}

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_LOCAL_MEMORY_H_
