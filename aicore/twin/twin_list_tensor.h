// ListTensorDesc / TensorDesc: a kernel's view of a list of tensors (a dynamic input such as the
// foreach ops' TensorList), decoded from the descriptor the framework puts in GM:
//   word 0: the byte offset from the descriptor's start to its array of data addresses;
//   then one entry per tensor: a word holding dim (low 32 bits) and, in the first entry, the
//   tensor count (high 32 bits; 0 there: the last entry's high bits + 1), then dim shape words.
//   A list of addresses only has dim 0, one entry of two words (the second 0xffffffff) and the
//   addresses at byte 24.
// Entries are read where CANN's kernel reads them; a descriptor that breaks these rules, an index
// past the list or a shape asked of a list without shapes stops the block.
#ifndef MS_OPS_TWIN_LIST_TENSOR_H_
#define MS_OPS_TWIN_LIST_TENSOR_H_

#include <cstdint>
#include <string>

#include "twin_tensor.h"

namespace AscendC {

class ListTensorDesc;

template <class T>
class TensorDesc {
 public:
  // Where GetDesc copies the shape: at least GetDim() words, kept by the caller.
  void SetShapeAddr(uint64_t *shapePtr) { shape_ = shapePtr; }
  uint64_t GetDim() { return dim_; }
  uint64_t GetIndex() { return index_; }
  uint64_t GetShape(uint32_t offset) {
    if (offset >= dim_)
      twin_detail::Fail("TensorDesc::GetShape", "dimension " + std::to_string(offset) + " of a " +
                                                    std::to_string(dim_) + "-dimensional tensor");
    return shape_[offset];
  }
  __gm__ T *GetDataPtr() { return ptr_; }
  // The tensor as a GlobalTensor sized by its shape.
  GlobalTensor<T> GetDataObj() {
    uint64_t elems = 1;
    for (uint32_t i = 0; i < dim_; ++i) elems *= shape_[i];
    GlobalTensor<T> obj;
    obj.SetGlobalBuffer(ptr_, elems);
    return obj;
  }

 private:
  friend class ListTensorDesc;
  uint32_t dim_ = 0, index_ = 0;
  uint64_t *shape_ = nullptr;
  __gm__ T *ptr_ = nullptr;
};

class ListTensorDesc {
 public:
  ListTensorDesc() {}
  // length: the descriptor's bytes and shapeSize: the tensor count, each checked when given.
  ListTensorDesc(__gm__ void *data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff) {
    Init(data, length, shapeSize);
  }
  void Init(__gm__ void *data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff) {
    if (data == nullptr) Bad("a null descriptor");
    const __gm__ uint64_t *head = static_cast<const __gm__ uint64_t *>(data);
    const uint64_t dataOffset = head[0];
    shapes_ = head + 1;
    dim_ = static_cast<uint32_t>(shapes_[0] & 0xffffffffu);
    entry_ = dim_ == 0 ? 2 : 1 + dim_;
    if (dataOffset < 8 + entry_ * 8 || dataOffset % 8 != 0)
      Bad("its data addresses start at byte " + std::to_string(dataOffset) + ", inside its first entry");
    addrs_ = head + dataOffset / 8;
    const uint32_t first = static_cast<uint32_t>(shapes_[0] >> 32);
    count_ = first != 0 ? first : static_cast<uint32_t>((addrs_ - entry_)[0] >> 32) + 1;
    const bool ok = dim_ != 0 ? count_ == (dataOffset - 8) / (entry_ * 8)
                              : shapes_[1] == 0xffffffffu && dataOffset == 24;
    if (!ok) Bad("its entries (" + std::to_string(entry_) + " words each) do not fit its data offset " +
                 std::to_string(dataOffset) + " for " + std::to_string(count_) + " tensors");
    if (length != 0xffffffff && shapeSize != 0xffffffff &&
        (count_ != shapeSize || length != dataOffset + uint64_t(count_) * 8))
      Bad("it describes " + std::to_string(count_) + " tensors in " + std::to_string(dataOffset + count_ * 8) +
          " bytes, not the " + std::to_string(shapeSize) + " in " + std::to_string(length) + " given");
  }
  template <class T>
  void GetDesc(TensorDesc<T> &desc, uint32_t index) {
    Check("ListTensorDesc::GetDesc", index);
    if (dim_ == 0) twin_detail::Fail("ListTensorDesc::GetDesc", "the list holds data addresses only, no shapes");
    if (desc.shape_ == nullptr) twin_detail::Fail("ListTensorDesc::GetDesc", "no SetShapeAddr on the TensorDesc");
    desc.dim_ = dim_;
    desc.index_ = index;
    desc.ptr_ = reinterpret_cast<__gm__ T *>(addrs_[index]);
    const __gm__ uint64_t *entry = shapes_ + uint64_t(index) * entry_;
    for (uint32_t i = 0; i < dim_; ++i) desc.shape_[i] = entry[1 + i];
  }
  template <class T>
  __gm__ T *GetDataPtr(uint32_t index) {
    Check("ListTensorDesc::GetDataPtr", index);
    return reinterpret_cast<__gm__ T *>(addrs_[index]);
  }
  uint32_t GetSize() { return count_; }

 private:
  [[noreturn]] static void Bad(const std::string &what) {
    twin_detail::Fail("ListTensorDesc", "bad tensor list descriptor: " + what);
  }
  void Check(const char *call, uint32_t index) const {
    if (index >= count_)
      twin_detail::Fail(call, "index " + std::to_string(index) + " of a list of " + std::to_string(count_));
  }
  const __gm__ uint64_t *shapes_ = nullptr;
  const __gm__ uint64_t *addrs_ = nullptr;
  uint32_t dim_ = 0, entry_ = 0, count_ = 0;
};

}  // namespace AscendC

#endif  // MS_OPS_TWIN_LIST_TENSOR_H_
