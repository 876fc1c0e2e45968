// Scalar-unit bit scan (CANN 8.x): ScalarGetSFFValue<v>(x) is the position of the lowest bit of x
// equal to v (0 or 1), -1 when there is none.
#ifndef MS_OPS_TWIN_SCALAR_H_
#define MS_OPS_TWIN_SCALAR_H_

#include <cstdint>

namespace AscendC {

template <int countValue>
inline int64_t ScalarGetSFFValue(uint64_t valueIn) {
  static_assert(countValue == 0 || countValue == 1, "ScalarGetSFFValue: countValue is 0 or 1");
  const uint64_t v = countValue == 1 ? valueIn : ~valueIn;
  return v == 0 ? -1 : __builtin_ctzll(v);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_SCALAR_H_
