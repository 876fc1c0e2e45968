// Kernel-side tiling access (CANN 8.x "Kernel Tiling" macros) for tiling data defined as a plain
// C++ struct. The host's TilingFunc writes the struct's bytes; the kernel names the struct with
// REGISTER_TILING_DEFAULT (CANN's build learns from it how to read the tiling buffer) and copies
// the bytes into a local with GET_TILING_DATA. GET_TILING_DATA_PTR_WITH_STRUCT points at the
// tiling in place and COPY_TILING_WITH_STRUCT copies one (possibly nested) struct onto the stack,
// for data read often. GET_TILING_DATA_WITH_STRUCT, which names the struct itself, is in
// twin_types.h.
#ifndef MS_OPS_TWIN_TILING_H_
#define MS_OPS_TWIN_TILING_H_

#include <cstring>
#include <type_traits>

namespace ms_ops {
namespace twin {

// The device reads tiling data as raw bytes written by the host, so only a trivially copyable
// struct can be one; checked where the kernel registers or names it, as CANN's build would fail
// there.
template <typename S>
struct TilingStruct {
  static_assert(std::is_class<S>::value, "tiling data must be a struct (REGISTER_TILING_DEFAULT)");
  static_assert(std::is_trivially_copyable<S>::value,
                "tiling data must be trivially copyable: the host writes it as bytes");
  using type = S;
};

template <typename S>
inline S LoadTiling(const void *src) {
  S s;
  std::memcpy(&s, src, sizeof(S));
  return s;
}

// COPY_TILING_WITH_STRUCT's source is a pointer to the struct or, for a nested member reached
// through GET_TILING_DATA_PTR_WITH_STRUCT's pointer, the member itself.
template <typename T>
inline const void *TilingSource(T *p) {
  return p;
}
template <typename T>
inline const void *TilingSource(const T &obj) {
  return &obj;
}

}  // namespace twin
}  // namespace ms_ops

// A type alias, valid at block or namespace scope like CANN's registration; GET_TILING_DATA
// without it fails to compile on this name.
#define REGISTER_TILING_DEFAULT(tiling_struct) \
  using TwinTilingOfREGISTER_TILING_DEFAULT = typename ::ms_ops::twin::TilingStruct<tiling_struct>::type

// A kernel test's own tiling header may define GET_TILING_DATA first (CANN's kernel UTs do, for
// their struct); CANN's headers then leave it alone, and so does the twin.
#ifndef GET_TILING_DATA
#define GET_TILING_DATA(tiling_data, tiling_arg)      \
  TwinTilingOfREGISTER_TILING_DEFAULT tiling_data = \
      ::ms_ops::twin::LoadTiling<TwinTilingOfREGISTER_TILING_DEFAULT>(reinterpret_cast<const void *>(tiling_arg))
#endif

#define GET_TILING_DATA_PTR_WITH_STRUCT(tiling_struct, dst_ptr, tiling_ptr)                         \
  const tiling_struct *dst_ptr = reinterpret_cast<const typename ::ms_ops::twin::TilingStruct< \
      tiling_struct>::type *>(tiling_ptr)

#define COPY_TILING_WITH_STRUCT(tiling_struct, src_ptr, dst_ptr)                                         \
  const tiling_struct TwinTilingCopyOf_##dst_ptr =                                                   \
      ::ms_ops::twin::LoadTiling<typename ::ms_ops::twin::TilingStruct<tiling_struct>::type>( \
          ::ms_ops::twin::TilingSource(src_ptr));                                                       \
  const tiling_struct *dst_ptr = &TwinTilingCopyOf_##dst_ptr

#endif  // MS_OPS_TWIN_TILING_H_
