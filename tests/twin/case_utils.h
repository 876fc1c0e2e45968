// What every twin test-case library (tests/twin/*_cases.cpp) needs around its kernels: the C
// export macro, a launch that reports its failure, GM views of host buffers, and the queue round
// trips GM -> VECIN -> vector unit and vector unit -> VECOUT -> GM.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>

#include "kernel_operator.h"
#include "twin_runtime.h"

#define TWIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace twin_cases {

// The launch's status, its failure printed on stderr as `ms_ops <kernel>: block <b>: <call>:
// <what>` for the test to read.
inline int Reported(int status) {
  if (status != 0) std::fprintf(stderr, "ms_ops %s\n", ms_ops::twin::LastFailure().c_str());
  return status;
}

inline int Run(const char *name, uint32_t blocks, const std::function<void()> &body) {
  return Reported(ms_ops::twin::Launch(name, blocks, 0, body));
}

template <typename T>
AscendC::GlobalTensor<T> Gm(void *p, uint64_t n) {
  AscendC::GlobalTensor<T> g;
  g.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(p), n);
  return g;
}

// n elements of GM into a fresh buffer of q, handed to the vector unit.
template <typename T, class Q>
AscendC::LocalTensor<T> LoadIn(Q &q, const AscendC::GlobalTensor<T> &g, uint32_t n) {
  AscendC::LocalTensor<T> t = q.template AllocTensor<T>();
  AscendC::DataCopy(t, g, n);
  q.EnQue(t);
  return q.template DeQue<T>();
}

// The same for `bytes` of the host buffer p.
template <typename T, class Q>
AscendC::LocalTensor<T> LoadIn(Q &q, void *p, uint32_t bytes) {
  return LoadIn(q, Gm<T>(p, bytes / sizeof(T)), bytes / sizeof(T));
}

// t (from q) handed to MTE3, its first n elements copied to g, then freed.
template <typename T, class Q>
void StoreOut(Q &q, AscendC::LocalTensor<T> &t, const AscendC::GlobalTensor<T> &g, uint32_t n) {
  q.EnQue(t);
  AscendC::LocalTensor<T> o = q.template DeQue<T>();
  AscendC::DataCopy(g, o, n);
  q.FreeTensor(o);
}

template <typename T, class Q>
void StoreOut(Q &q, AscendC::LocalTensor<T> &t, void *p, uint32_t bytes) {
  StoreOut(q, t, Gm<T>(p, bytes / sizeof(T)), bytes / sizeof(T));
}

// rounds x (slot[b] = b * rounds + r, meet(), sums[r][b] = the sum of slots [0, active), meet()):
// block b of `blocks` sees every block's write of the round once the blocks have met, and no slot
// is rewritten before every block has read it.
template <class Meet>
void SlotRounds(int64_t b, uint32_t active, uint32_t blocks, uint32_t rounds, int32_t *slots, int32_t *sums,
                Meet meet) {
  AscendC::GlobalTensor<int32_t> slot = Gm<int32_t>(slots, active), sum = Gm<int32_t>(sums, uint64_t(rounds) * blocks);
  for (uint32_t r = 0; r < rounds; ++r) {
    slot.SetValue(b, static_cast<int32_t>(b * rounds + r));
    meet();
    int32_t total = 0;
    for (uint32_t i = 0; i < active; ++i) total += slot.GetValue(i);
    sum.SetValue(uint64_t(r) * blocks + b, total);
    meet();
  }
}

}  // namespace twin_cases
