// The compile-time helpers CANN kernels take from kernel_operator.h: AscendC::IsSameType,
// AscendC::Std (the subset of the C++ standard library the device compiler offers under that
// name: type traits, tuple, min/max) and the likely/unlikely branch hints. On the CPU the standard
// library is there, so Std names it.
#ifndef MS_OPS_TWIN_STD_H_
#define MS_OPS_TWIN_STD_H_

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

namespace AscendC {

template <typename T, typename U>
struct IsSameType {
  static constexpr bool value = false;
};
template <typename T>
struct IsSameType<T, T> {
  static constexpr bool value = true;
};

namespace Std {

using std::bool_constant;
using std::conditional;
using std::conditional_t;
using std::decay;
using std::decay_t;
using std::enable_if;
using std::enable_if_t;
using std::false_type;
using std::forward;
using std::get;
using std::integral_constant;
using std::is_base_of;
using std::is_base_of_v;
using std::is_convertible;
using std::is_convertible_v;
using std::is_floating_point;
using std::is_floating_point_v;
using std::is_integral;
using std::is_integral_v;
using std::is_same;
using std::is_same_v;
using std::make_tuple;
using std::move;
using std::remove_const_t;
using std::remove_cv_t;
using std::remove_reference_t;
using std::true_type;
using std::tuple;
using std::tuple_element;
using std::tuple_element_t;
using std::tuple_size;
using std::tuple_size_v;

template <typename T>
struct remove_cvref {
  using type = std::remove_cv_t<std::remove_reference_t<T>>;
};
template <typename T>
using remove_cvref_t = typename remove_cvref<T>::type;

// False for every T, for a static_assert in a template branch that must not be instantiated.
template <typename... T>
inline constexpr bool always_false_v = false;

template <typename T>
struct is_tuple : std::false_type {};
template <typename... T>
struct is_tuple<std::tuple<T...>> : std::true_type {};
template <typename T>
inline constexpr bool is_tuple_v = is_tuple<remove_cvref_t<T>>::value;

template <typename T>
constexpr const T &min(const T &a, const T &b) {
  return b < a ? b : a;
}
template <typename T>
constexpr const T &max(const T &a, const T &b) {
  return a < b ? b : a;
}

}  // namespace Std
}  // namespace AscendC

#endif  // MS_OPS_TWIN_STD_H_
