// AscendC kernels for the twin's Sort32 and MrgSort in float and half, with C entry points for
// tests/test_twin_sort.py. Each returns the launch's status (0, or 1 after a twin violation,
// printed on stderr as `ms_ops <kernel>: block <b>: <call>: <what>`).
#include <cstdint>

#include "case_utils.h"
#include "kernel_operator.h"

using namespace AscendC;
using namespace twin_cases;

namespace {

// Room for 1024 proposals of 8 bytes.
constexpr uint32_t kBuf = 8192;

// Sort32 over n scores (n / 32 repeats) with their indices into n proposals.
template <typename T>
void Sort(void *scores, uint32_t *index, void *out, uint32_t n) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qs, qi;
  TQue<QuePosition::VECOUT, 1> qo;
  pipe.InitBuffer(qs, 1, kBuf);
  pipe.InitBuffer(qi, 1, kBuf);
  pipe.InitBuffer(qo, 1, kBuf);
  const uint32_t per = 8 / sizeof(T);
  LocalTensor<T> s = LoadIn(qs, Gm<T>(scores, n), n);
  LocalTensor<uint32_t> i = LoadIn(qi, Gm<uint32_t>(index, n), n);
  LocalTensor<T> o = qo.AllocTensor<T>();
  Sort32(o, s, i, static_cast<int32_t>(n / 32));
  qs.FreeTensor(s);
  qi.FreeTensor(i);
  StoreOut(qo, o, Gm<T>(out, uint64_t(n) * per), n * per);
}

// MrgSort of the proposals `in` (n of them, each repeat's queues one after the other) into out.
template <typename T>
void Merge(void *in, void *out, uint32_t n, const uint16_t *lengths, uint16_t validBit, uint16_t repeat, int suspend,
           uint16_t *counts) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qp;
  TQue<QuePosition::VECOUT, 1> qo;
  pipe.InitBuffer(qp, 1, kBuf);
  pipe.InitBuffer(qo, 1, kBuf);
  const uint32_t per = 8 / sizeof(T);
  LocalTensor<T> p = LoadIn(qp, Gm<T>(in, uint64_t(n) * per), n * per);
  LocalTensor<T> o = qo.AllocTensor<T>();
  const uint32_t at1 = lengths[0] * per, at2 = at1 + lengths[1] * per, at3 = at2 + lengths[2] * per;
  MrgSort(o, MrgSortSrcList<T>(p, p[at1], p[at2], p[at3]), MrgSort4Info(lengths, suspend != 0, validBit, repeat));
  GetMrgSortResult(counts[0], counts[1], counts[2], counts[3]);
  qp.FreeTensor(p);
  StoreOut(qo, o, Gm<T>(out, uint64_t(n) * per), n * per);
}

}  // namespace

// half: 0 float scores, 1 half scores.
TWIN_EXPORT int twin_sort32(int half_, void *scores, uint32_t *index, void *out, uint32_t n) {
  return Run("twin_sort32", 1, [&] {
    if (half_ != 0) {
      Sort<half>(scores, index, out, n);
    } else {
      Sort<float>(scores, index, out, n);
    }
  });
}

TWIN_EXPORT int twin_mrgsort(int half_, void *in, void *out, uint32_t n, uint16_t *lengths, uint16_t validBit,
                             uint16_t repeat, int suspend, uint16_t *counts) {
  return Run("twin_mrgsort", 1, [&] {
    if (half_ != 0) {
      Merge<half>(in, out, n, lengths, validBit, repeat, suspend, counts);
    } else {
      Merge<float>(in, out, n, lengths, validBit, repeat, suspend, counts);
    }
  });
}
