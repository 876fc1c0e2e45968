// The x86 intrinsics, as every twin file takes them. GCC 12's AVX-512 intrinsics start from
// _mm512_undefined_*(), which -Wmaybe-uninitialized reports at each inlined use (GCC bug 105593,
// fixed in GCC 13). The pragma covers the header's lines only where this include is the first of
// <immintrin.h> in a translation unit, hence one place for it.
#ifndef MS_OPS_TWIN_INTRIN_H_
#define MS_OPS_TWIN_INTRIN_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#endif  // MS_OPS_TWIN_INTRIN_H_
