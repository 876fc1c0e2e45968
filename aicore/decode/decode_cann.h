// The CANN registrations' common part for the decode ops: the cache dtype as DecodeFloat.
// CANN-only: never compiled by the CPU build.
#ifndef MS_OPS_DECODE_DECODE_CANN_H_
#define MS_OPS_DECODE_DECODE_CANN_H_

#include "cann_host.h"
#include "decode_tiling.h"

namespace ms_ops {

inline DecodeFloat ToDecodeFloat(ge::DataType d) { return ToFloatEnum<DecodeFloat>(d); }

}  // namespace ms_ops

#endif  // MS_OPS_DECODE_DECODE_CANN_H_
