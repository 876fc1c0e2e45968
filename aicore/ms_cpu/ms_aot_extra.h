// Our own declaration of the ABI of MindSpore 2.10's `AotExtra` (the object an aot Custom kernel
// receives as `extra`). MindSpore's installed header drags in its internals, so we declare the
// interface ourselves: the virtual functions must stay in MindSpore's order, and `std::string`
// crosses the boundary by value, so the old libstdc++ ABI is mandatory.
#ifndef MS_OPS_COMMON_MS_AOT_EXTRA_H_
#define MS_OPS_COMMON_MS_AOT_EXTRA_H_

#if !defined(_GLIBCXX_USE_CXX11_ABI) || _GLIBCXX_USE_CXX11_ABI != 0
#error "ms_ops: build with -D_GLIBCXX_USE_CXX11_ABI=0 (MindSpore 2.10 uses the old libstdc++ ABI)"
#endif

#include <cstdint>
#include <string>
#include <vector>

namespace mindspore {

// Numeric values of MindSpore 2.10's TypeId (mindapi/base/type_id.h) for the dtypes we use;
// a wrong value shows up as a wrong output dtype, which every op test asserts.
enum TypeId : int {
  kTypeUnknown = 0,
  kNumberTypeBool = 30,
  kNumberTypeInt32 = 34,
  kNumberTypeInt64 = 35,
  kNumberTypeUInt8 = 37,
  kNumberTypeFloat16 = 42,
  kNumberTypeFloat32 = 43,
  kNumberTypeFloat64 = 44,
  kNumberTypeBFloat16 = 45,
};

class AotKernelData {
 public:
  AotKernelData() = default;
  virtual ~AotKernelData() = default;
};

class AotExtra {
 public:
  AotExtra() = default;
  virtual ~AotExtra() = default;
  virtual bool HasAttr(std::string name) = 0;

  template <typename T>
  T Attr(std::string name);

  void SetWorkSpace(const std::vector<size_t> &workspace) { workspace_ = workspace; }
  const std::vector<size_t> &WorkSpace() const { return workspace_; }
  void SetKernelData(AotKernelData *kernel_data) { kernel_data_ = kernel_data; }
  const AotKernelData *KernelData() const { return kernel_data_; }

 private:
  virtual bool GetAttrBool(std::string name) = 0;
  virtual int64_t GetAttrInt(std::string name) = 0;
  virtual float GetAttrFloat(std::string name) = 0;
  virtual std::string GetAttrStr(std::string name) = 0;
  virtual std::vector<int64_t> GetAttrIntVec(std::string name) = 0;
  virtual std::vector<float> GetAttrFloatVec(std::string name) = 0;
  virtual std::vector<std::vector<int64_t>> GetAttrInt2DVec(std::string name) = 0;
  virtual std::vector<std::vector<float>> GetAttrFloat2DVec(std::string name) = 0;

  std::vector<size_t> workspace_;
  AotKernelData *kernel_data_{nullptr};
};

template <>
inline bool AotExtra::Attr<bool>(std::string name) { return GetAttrBool(name); }
template <>
inline int64_t AotExtra::Attr<int64_t>(std::string name) { return GetAttrInt(name); }
template <>
inline float AotExtra::Attr<float>(std::string name) { return GetAttrFloat(name); }
template <>
inline std::string AotExtra::Attr<std::string>(std::string name) { return GetAttrStr(name); }
template <>
inline std::vector<int64_t> AotExtra::Attr<std::vector<int64_t>>(std::string name) { return GetAttrIntVec(name); }
template <>
inline std::vector<float> AotExtra::Attr<std::vector<float>>(std::string name) { return GetAttrFloatVec(name); }

}  // namespace mindspore

#endif  // MS_OPS_COMMON_MS_AOT_EXTRA_H_
